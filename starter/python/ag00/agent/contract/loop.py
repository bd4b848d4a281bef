{#- What the learner receives in place of each region of the reference
    (reference/python/ag00/agent/contract/loop.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block function_call_output %}
    """The input item that returns ``payload`` as the result of the call ``call_id``:

    ``{"type": "function_call_output", "call_id": call_id, "output": <payload as JSON text>}``,
    the JSON text made with ``json.dumps(payload, sort_keys=True)``.
    """
    raise NotImplementedError("function_call_output: wrap a result for the call it answers")
{% endblock %}
{% block run_loop %}
    """Drive ``request`` to one final status, calling ``send`` at most ``max_turns`` times.

    Keep a conversation, starting as a copy of ``request["input"]`` (never change
    the caller's request). Each turn (numbered from 1):

    1. ``reply = send({**request, "input": <a copy of the conversation>})``, then
       ``verdict = classify_response(reply.body, reply.http_status)``; append
       ``Step(turn, verdict.kind.value)`` to the steps.
    2. ``TEXT``: parse the text as JSON (not JSON: ``None``). Status
       ``ANSWER_READY`` when it equals one of the receipts (the payloads of the
       calls run so far), else ``UNVERIFIED_ANSWER``; put it in ``answer``.
    3. Any other kind but ``TOOL_REQUESTS``: stop with ``verdict.kind.value`` as
       status (no retry here).
    4. ``TOOL_REQUESTS``: append every item of ``reply.body["output"]`` to the
       conversation, unchanged and in order. Then, before running anything:
       a ``call_id`` repeated inside the batch or already seen in an earlier turn
       stops with ``DUPLICATE_CALL_ID``; ``calls + len(batch) > max_calls`` stops
       with ``BUDGET_EXHAUSTED`` (none of the batch runs). Then for each call:
       count it in ``calls``, run ``execute_call(call, principal)``; a denied
       result stops with the denial reason as status and ``denial`` = its
       payload; otherwise keep the receipt, append
       ``function_call_output(call["call_id"], payload)`` to ``results`` and to
       the conversation, and the call_id to the step's ``executed``.

    When the turns run out, stop with ``TURN_LIMIT``. Every ``Outcome`` carries
    ``calls``, ``results``, ``steps`` and the last ``verdict``.
    """
    raise NotImplementedError("run_loop: bounded turns, whole-batch budget, results by call_id")
{% endblock %}
