{#- What the learner receives in place of each region of the reference
    (reference/python/ag00/agent/contract/classify.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block is_retryable %}
    """True for 429 and for every 5xx status (500 to 599); False for any other status."""
    raise NotImplementedError("is_retryable: which HTTP errors may pass if sent again later?")
{% endblock %}
{% block classify_response %}
    """Classify a parsed JSON ``body`` received with ``http_status``. Decide in this order:

    1. ``http_status`` is not 200: ``HTTP_ERROR`` with ``retryable=is_retryable(http_status)``
       and ``reason`` = the body's ``error.code`` when there is one (else None).
    2. ``body`` is not a dict: ``UNSUPPORTED``.
    3. ``body["status"]``: ``"incomplete"`` gives ``INCOMPLETE`` with ``reason`` =
       ``incomplete_details.reason`` (None when absent), whatever the output holds;
       ``"failed"`` gives ``FAILED`` with ``reason`` = ``error.code``; ``"cancelled"``
       gives ``CANCELLED``; anything but ``"completed"`` gives ``UNSUPPORTED``.
    4. ``body["output"]`` is not a list: ``UNSUPPORTED``. Otherwise walk its items:

       - ``function_call``: ``call_id``, ``name`` and ``arguments`` must all be
         non-empty strings, else return ``INVALID_TOOL_CALL``; keep the item as is.
       - ``message``: its ``status`` must be absent or ``"completed"`` and its
         ``content`` a list, else ``UNSUPPORTED``. For each part: a ``refusal``
         part returns ``REFUSED`` at once with ``reason`` = its ``refusal`` text;
         an ``output_text`` part with a string ``text`` is kept; anything else is
         ``UNSUPPORTED``.
       - ``reasoning``: skip it (the loop sends it back, nobody reads it here).
       - anything else, including a non-dict item: ``UNSUPPORTED``.

    5. After the walk: any calls give ``TOOL_REQUESTS`` with ``calls`` (in output
       order; text beside them is a preamble); else any text gives ``TEXT`` with
       the parts joined by ``""``; else ``EMPTY``.
    """
    raise NotImplementedError("classify_response: HTTP status, then response status, then items")
{% endblock %}
