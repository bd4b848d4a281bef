{#- What the learner receives in place of each region of the reference
    (reference/python/ag03/agent/proxy/synthesize.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block module %}
response that ended. Section "Synthesize, do not forward" shows both shapes in full.
{% endblock %}
{% block EventWriter_event %}
        """One event: ``event: KIND`` then ``data: JSON`` (the fields with "type" and
        "sequence_number" first) then one blank line, LF line ends. Numbers count from 0, one per
        event written: no gap, no repeat."""
        raise NotImplementedError("EventWriter.event: section 'Synthesize, do not forward'")
{% endblock %}
{% block message_item %}
    """The assistant message that carries the answer: ``{"id": "msg_" + the turn's id without its
    "resp_" prefix, "type": "message", "status": status, "role": "assistant", "content": [...]}``.

    In progress the content is empty. Completed, it holds an ``output_text`` part
    (``{"type": "output_text", "text": turn.text, "annotations": []}``) unless the turn only
    refuses (no text, a refusal), then a ``{"type": "refusal", "refusal": turn.refusal}`` part when
    there is a refusal: a refusal is the answer, never an empty text.
    """
    raise NotImplementedError("message_item: section 'A refusal is an answer'")
{% endblock %}
{% block response_object %}
    """The Responses object for the turn: while in progress (or failed) with no output, at the end
    with one message; it echoes the turn's tools, tool_choice and parallel_tool_calls (given)."""
{% endblock %}
{% block to_json %}
    """The body of a non-streamed answer: the completed response object as JSON."""
    raise NotImplementedError("to_json: section 'Synthesize, do not forward'")
{% endblock %}
{% block opening %}
    """The three events before any content, in this order, with exactly these fields:

    - ``response.created`` and ``response.in_progress``: ``response=response_object(turn, status="in_progress")``;
    - ``response.output_item.added``: ``output_index=0``, ``item=message_item(turn, "in_progress")``.
    """
    raise NotImplementedError("opening: section 'Synthesize, do not forward'")
{% endblock %}
{% block text_part_opening %}
    """One ``response.content_part.added``: ``item_id`` (the message item's id), ``output_index=0``,
    ``content_index=0``, ``part={"type": "output_text", "text": "", "annotations": []}``. It goes
    out before the first text delta."""
    raise NotImplementedError("text_part_opening: section 'Synthesize, do not forward'")
{% endblock %}
{% block text_delta %}
    """One ``response.output_text.delta``: ``item_id`` (the message item's id), ``output_index=0``,
    ``content_index=0``, ``delta``, ``logprobs=[]``."""
    raise NotImplementedError("text_delta: section 'Synthesize, do not forward'")
{% endblock %}
{% block closing %}
    """The events after the text, inside out. For each part of the completed message_item(turn),
    at ``content_index`` = its position (every event names ``item_id``, ``output_index=0`` and it):

    - an ``output_text`` part: first text_part_opening() if ``text_opened`` is False (an empty text
      part never opened yet), then ``response.output_text.done`` (``text``, ``logprobs=[]``);
    - a ``refusal`` part: ``response.content_part.added`` (``part={"type": "refusal", "refusal": ""}``),
      ``response.refusal.delta`` (``delta``: the whole refusal), ``response.refusal.done`` (``refusal``);
    - then ``response.content_part.done`` (``part``: the completed part).

    Then ``response.output_item.done`` (``output_index=0``, ``item=message_item(turn)``) and
    ``response.completed`` (``response=response_object(turn)``).
    """
    raise NotImplementedError("closing: section 'Synthesize, do not forward'")
{% endblock %}
{% block failed %}
    """One ``response.failed`` event whose ``response`` is response_object(turn, "failed", error),
    error ``{"code": "server_error", "message": "CODE: message"}`` (the failure's code and message):
    the API, and so a client's SDK, allows only its own error codes there."""
    raise NotImplementedError("failed: section 'One response, whatever the mode'")
{% endblock %}
{% block to_sse %}
    """The body of a streamed answer: opening, then (when there is text) the text part opened and
    the whole text in one delta, then closing, all numbered by one writer. The Responses API sends
    no [DONE] line; nor do we. The completed event carries exactly the object to_json gives."""
    raise NotImplementedError("to_sse: section 'Synthesize, do not forward'")
{% endblock %}
