{#- What the learner receives in place of each region of the reference
    (reference/python/ag03/agent/proxy/policy.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block module %}
# Sends one request body upstream (always streamed) and returns the chunks of the SSE body. The
# chunks may have close(): call it once you are done with them, however you are done.
{% endblock %}
{% block module_2 %}
{% endblock %}
{% block Body %}
    """A streamed reply body: the chunks already in hand (``ready``), then the rest of ``source``
    as it is produced. Iterating it yields bytes; ``close()`` releases ``source`` (calls its
    close(), when it has one).

    close() must work whether the body was read to its end, in part, or not at all: the given
    server calls it however the answer ended, the client may be gone before the first chunk, and a
    generator's own ``finally`` runs only once the generator has started. Reaching the end of
    ``source``, or an exception while reading it, releases it too (and the exception goes on).
    """

    def __init__(self, source: Iterable[bytes], *ready: bytes) -> None:
        raise NotImplementedError("Body: section 'Closing is part of finishing'")

    def __iter__(self) -> Body:
        return self

    def __next__(self) -> bytes:
        raise NotImplementedError("Body: section 'Closing is part of finishing'")

    def close(self) -> None:
        raise NotImplementedError("Body: section 'Closing is part of finishing'")
{% endblock %}
{% block handle %}
    """The reply to one client request.

    - ``policy`` is "buffered_final_stream" or "progress_events"; anything else is a ValueError.
    - A request without tools is stateless: pass the client's request upstream unchanged and
      reply 200 with pass_through of the answer (text/event-stream when the request says
      stream, application/json otherwise).
    - progress_events: reply 200 with its event stream as a Body, but only once its first event
      exists (``Body(events, first)``): a failure before anything went out is still an error reply.
    - buffered_final_stream: the final Turn as to_sse (stream true) or to_json (otherwise), each
      as a list holding the whole body.
    - Whatever fails closed is answered 502, application/json, with error_body and the headers
      NOT_RETRYABLE (x-should-retry: false): never a 200, and never an answer a client retries.
    """
    raise NotImplementedError("handle: section 'Fail closed, and say why'")
{% endblock %}
{% block pass_through %}
    """The upstream body, byte for byte and chunk by chunk, each chunk as soon as it arrives, as a
    Body: nothing parsed, nothing buffered, nothing re-framed. The upstream is closed when the
    body is closed (read or not), read to its end, or broken; a break (FailClosed, OSError) is
    raised to the caller, never turned into a quiet end."""
    raise NotImplementedError("pass_through: section 'Pass-through means the same bytes'")
{% endblock %}
{% block buffered_final_stream %}
    """Consume upstream responses (one_turn), running the tools each complete one asks for
    (continued), until one answers with no call: return downstream(request, the first turn, all
    the turns).

    Each upstream request is the client's request with ``"stream": True`` and the conversation so
    far as its ``input`` (start from input_items); never change the client's dict in place. After
    ``max_turns`` upstream responses without a final one, fail closed with "turn_limit".
    """
    raise NotImplementedError("buffered_final_stream: section 'Progress is not permission'")
{% endblock %}
{% block progress_events %}
    """The downstream event stream of the progress_events policy, one EventWriter numbering it all.

    When the first upstream response is created, yield opening() for the response shown:
    downstream(request, a Turn named after it (its id, model, created_at), []). Forward every
    non-empty ``response.output_text.delta`` at once, as text_delta, the first one preceded by
    text_part_opening(). Forward tool-call events (the function_call_arguments events, and
    output_item added/done of function_call items) only when ``forward_tool_events``, renumbered,
    and moved into the proxy's own numbering: each upstream call (per upstream response) takes the
    next output index after the message (1, 2, ...) and an item id of the proxy's own, used by
    every event of that call. Run tools as buffered_final_stream does (continued), only after each
    response completed. At the end yield closing() for downstream(request, the response shown, all
    the turns), saying whether the text part was opened. On FailClosed: if nothing was yielded
    yet, raise it; otherwise yield failed() for the response shown and stop. Close every upstream
    body, however the loop ends, the consumer closing this generator included.
    """
    raise NotImplementedError("progress_events: section 'Progress mode'")
{% endblock %}
{% block one_turn %}
    """Send one body upstream, feed every event to a fresh StreamState, return its finish(). The
    upstream body is closed in every case: success, failure, exception."""
    raise NotImplementedError("one_turn: section 'Closing is part of finishing'")
{% endblock %}
{% block continued %}
    """The conversation (a list of input items) after a turn that asked for calls: a new list,
    ending with run_calls' items. Before anything runs, a call whose call_id is already the
    call_id of a function_call item of the conversation (the client's input, or an earlier turn)
    fails closed with "protocol": its result could answer either call."""
    raise NotImplementedError("continued: section 'Never twice'")
{% endblock %}
{% block run_calls %}
    """Run a complete batch of calls, each exactly once, in order, but only after checking that
    every one can run: a tool not in ``tools`` is FailClosed("unknown_tool"), arguments that are not
    a JSON object FailClosed("bad_arguments") (parsed_arguments). A tool that raises is
    FailClosed("tool_failed"), with what it raised in the message. Return, per call, the
    function_call item (call_id, name, the final arguments) followed by its function_call_output
    (call_id, output).
    """
    raise NotImplementedError("run_calls: section 'One batch, one decision'")
{% endblock %}
{% block downstream %}
    """The response the client receives, the same in every mode: a copy of ``named_after`` (its
    id, model and created_at) with, from ``turns``, the text of every turn joined in order, their
    refusals joined, no calls, and total_usage of their usages; and, from the client's
    ``request``, its tools (a list; [] when it has none), its tool_choice ("auto" when absent) and
    its parallel_tool_calls (True when absent)."""
    raise NotImplementedError("downstream: section 'One response, whatever the mode'")
{% endblock %}
{% block input_items %}
    """The request's input as a list of items (a bare string is one user message) (given)."""
{% endblock %}
{% block total_usage %}
    """The usage of several upstream responses added up, details included; None when none reported
    any (given)."""
{% endblock %}
{% block error_body %}
    """The API's error shape (given)."""
{% endblock %}
{% block _announced %}
{% endblock %}
