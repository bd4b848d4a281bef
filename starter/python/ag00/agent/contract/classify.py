{#- What the learner receives in place of each region of the reference
    (reference/python/ag00/agent/contract/classify.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block is_retryable %}
    """True for 408, 429, 500, 502, 503 and 504; False for any other status (409, 430 to 499, 501,
    505 to 599 and 600 included). The course's table of statuses is in the chapter's text,
    "Reading the HTTP status"."""
    raise NotImplementedError("is_retryable: which HTTP errors may pass if sent again later?")
{% endblock %}
{% block classify_response %}
    """Classify a parsed JSON ``body`` received with ``http_status``. Decide in this order:

    1. ``http_status`` is not exactly 200 (1xx, 201, 204, 3xx and every error alike):
       ``HTTP_ERROR``, whatever the body holds, with ``retryable=is_retryable(http_status)`` and
       ``reason`` = the body's ``error.code`` (None when the body is not an object, or its
       ``error`` is absent, null or not an object; never another field such as ``type``, nor a ``code`` outside ``error``).
    2. ``body`` is not a dict: ``UNSUPPORTED``.
    3. ``body["status"]``, compared exactly: ``"incomplete"`` gives ``INCOMPLETE`` with ``reason`` =
       ``incomplete_details.reason`` (None when the details are absent, null or lack a reason),
       whatever the output holds; ``"failed"`` gives ``FAILED`` with ``reason`` = ``error.code``
       (None when ``error`` is absent or null); ``"cancelled"`` gives ``CANCELLED`` (no reason); anything but
       ``"completed"`` (missing, null, ``"Completed"``, ``"queued"``...) gives ``UNSUPPORTED``.
       Nothing in the output of such a reply is acted on, not even a complete-looking call, and
       its output need not even be there.
       Real replies carry ``"error": null`` and ``"incomplete_details": null`` when all went well.
    4. ``body["output"]`` is not a list (null included): ``UNSUPPORTED``. Otherwise walk its items:

       - ``function_call``: ``call_id``, ``name`` and ``arguments`` must all be non-empty
         strings (missing, null, a number or an object is not), else return
         ``INVALID_TOOL_CALL``; keep the item itself, unchanged (its own ``status`` field, if
         any, is not read, and neither are the tool name and whether the arguments parse:
         ``execute_call`` judges those).
       - ``message``: its ``status`` must be absent or ``"completed"`` and its ``content`` a
         list, else ``UNSUPPORTED`` (checked before any part is read). For each part: a ``refusal`` part returns ``REFUSED`` at
         once with ``reason`` = its ``refusal`` text (None when absent), even when calls came
         before it; an
         ``output_text`` part with a string ``text`` is kept; anything else (a part that is not
         an object, or has no type) is ``UNSUPPORTED``.
       - ``reasoning``: skip it, whatever it holds (an id, a summary, or neither) (the loop sends it back, nobody
         reads it here).
       - anything else, including an item that is not an object or has no type: ``UNSUPPORTED``.

    5. After the walk: any calls give ``TOOL_REQUESTS`` with ``calls`` (in output order; text
       beside them is a preamble); else any ``output_text`` part, even one with empty text, gives
       ``TEXT`` with the texts of every part of every message joined by ``""`` and kept exactly
       (not stripped); else ``EMPTY``.
    """
    raise NotImplementedError("classify_response: HTTP status, then response status, then items")
{% endblock %}
