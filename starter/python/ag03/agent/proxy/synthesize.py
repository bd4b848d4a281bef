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
    """The assistant message item that carries the answer (given)."""
{% endblock %}
{% block response_object %}
    """The Responses object for the turn: while in progress with no output, at the end with one
    message (given)."""
{% endblock %}
{% block to_json %}
    """The body of a non-streamed answer: the completed response object as JSON."""
    raise NotImplementedError("to_json: section 'Synthesize, do not forward'")
{% endblock %}
{% block opening %}
    """The four events before any text, in this order, with exactly these fields:

    - ``response.created`` and ``response.in_progress``: ``response=response_object(turn, status="in_progress")``;
    - ``response.output_item.added``: ``output_index=0``, ``item=message_item(turn, "", "in_progress")``;
    - ``response.content_part.added``: ``item_id`` (the message item's id), ``output_index=0``,
      ``content_index=0``, ``part={"type": "output_text", "text": "", "annotations": []}``.
    """
    raise NotImplementedError("opening: section 'Synthesize, do not forward'")
{% endblock %}
{% block text_delta %}
    """One ``response.output_text.delta``: ``item_id`` (the message item's id), ``output_index=0``,
    ``content_index=0``, ``delta``, ``logprobs=[]``."""
    raise NotImplementedError("text_delta: section 'Synthesize, do not forward'")
{% endblock %}
{% block closing %}
    """The four events after the text, inside out, with exactly these fields:

    - ``response.output_text.done``: ``item_id``, ``output_index=0``, ``content_index=0``, ``text``,
      ``logprobs=[]``;
    - ``response.content_part.done``: ``item_id``, ``output_index=0``, ``content_index=0``, ``part``
      (the completed message's output_text part, holding the text);
    - ``response.output_item.done``: ``output_index=0``, ``item=message_item(turn, text)``;
    - ``response.completed``: ``response=response_object(turn, text)``.
    """
    raise NotImplementedError("closing: section 'Synthesize, do not forward'")
{% endblock %}
{% block to_sse %}
    """The body of a streamed answer: opening, the whole text in one delta (none when the text is
    empty), closing, all numbered by one writer. The Responses API sends no [DONE] line; nor do we.
    The completed event carries exactly the object to_json gives."""
    raise NotImplementedError("to_sse: section 'Synthesize, do not forward'")
{% endblock %}
