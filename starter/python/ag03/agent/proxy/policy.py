{#- What the learner receives in place of each region of the reference
    (reference/python/ag03/agent/proxy/policy.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block module %}
# Sends one request body upstream (always streamed) and returns the chunks of the SSE body. The
# chunks may have close(): call it once you are done with them, however you are done.
{% endblock %}
{% block module_2 %}
{% endblock %}
{% block handle %}
    """The reply to one client request.

    - ``policy`` is "buffered_final_stream" or "progress_events"; anything else is a ValueError.
    - A request without tools is stateless: pass the client's request upstream unchanged and
      reply 200 with pass_through of the answer (text/event-stream when the request says
      stream, application/json otherwise).
    - progress_events: reply 200 with its event stream, but only once its first event exists: a
      failure before anything went out is still an error reply.
    - buffered_final_stream: the final Turn as to_sse (stream true) or to_json (otherwise).
    - Whatever fails closed is answered 502, application/json, with error_body: never a 200.
    """
    raise NotImplementedError("handle: section 'Fail closed, and say why'")
{% endblock %}
{% block pass_through %}
    """The upstream body, byte for byte and chunk by chunk, each chunk as soon as it arrives:
    nothing parsed, nothing buffered, nothing re-framed. Close the chunks when done, including when
    the client stops reading early."""
    raise NotImplementedError("pass_through: section 'Pass-through means the same bytes'")
{% endblock %}
{% block buffered_final_stream %}
    """Consume upstream responses (one_turn), running the tools each complete one asks for
    (run_calls, whose items extend the conversation), until one answers with no call: return it.

    Each upstream request is the client's request with ``"stream": True`` and the conversation so
    far as its ``input`` (start from input_items); never change the client's dict in place. After
    ``max_turns`` upstream responses without a final one, fail closed with "turn_limit".
    """
    raise NotImplementedError("buffered_final_stream: section 'Progress is not permission'")
{% endblock %}
{% block progress_events %}
    """The downstream event stream of the progress_events policy, one EventWriter numbering it all.

    When the first upstream response is created, yield opening() for a response named after it
    (its id, model, created_at). Forward every ``response.output_text.delta`` at once, as
    text_delta. Forward tool-call events (the function_call_arguments events, and output_item
    added/done of function_call items) only when ``forward_tool_events``, renumbered. Run tools as
    buffered_final_stream does, only after each response completed. At the end yield closing() with
    all the text forwarded. On FailClosed: if nothing was yielded yet, raise it; otherwise yield one
    ``response.failed`` event (the same response id, status "failed", error with code and message)
    and stop. Close every upstream body, however the loop ends.
    """
    raise NotImplementedError("progress_events: section 'Progress mode'")
{% endblock %}
{% block one_turn %}
    """Send one body upstream, feed every event to a fresh StreamState, return its finish(). The
    upstream body is closed in every case: success, failure, exception."""
    raise NotImplementedError("one_turn: section 'Closing is part of finishing'")
{% endblock %}
{% block run_calls %}
    """Run a complete batch of calls, each exactly once, in order, but only after checking that
    every one can run: a tool not in ``tools`` is FailClosed("unknown_tool"), arguments that are not
    a JSON object FailClosed("bad_arguments") (parsed_arguments). Return, per call, the function_call
    item (call_id, name, the final arguments) followed by its function_call_output (call_id, output).
    """
    raise NotImplementedError("run_calls: section 'One batch, one decision'")
{% endblock %}
{% block input_items %}
    """The request's input as a list of items (a bare string is one user message) (given)."""
{% endblock %}
{% block error_body %}
    """The API's error shape (given)."""
{% endblock %}
{% block _announced %}
{% endblock %}
