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

    Keep a conversation, starting as a copy of ``request["input"]`` (never change the caller's
    request). Everything else a run remembers (receipts, call_ids seen, counts) belongs to this
    run alone: a second run starts from nothing. Each turn (numbered from 1):

    1. ``reply = send(<a deep copy of {**request, "input": conversation}>)``: a ``send`` may
       keep the body it was given, or edit it at any depth, so a body once sent must never
       change, and it shares no list or dict with the request, the conversation or another body. Then
       ``verdict = classify_response(reply.body, reply.http_status)``; append
       ``Step(turn, verdict.kind.value)`` to the steps (every turn has its step, the last
       one included, whatever its kind).
    2. ``TEXT`` (even an empty text): parse the whole text as JSON (not JSON, including JSON inside a code fence or
       beside a sentence: ``None``) and put it in ``answer``, verified or not. Status ``ANSWER_READY`` when the parsed value equals one of the receipts (the
       payloads of the calls run so far in this run), else ``UNVERIFIED_ANSWER``. Compare parsed
       values, never text: key order and spacing do not matter; a missing or extra key, or a
       value in another case, does.
    3. Any other kind but ``TOOL_REQUESTS``: stop with ``verdict.kind.value`` as status (no
       retry here).
    4. ``TOOL_REQUESTS``: append every item of ``reply.body["output"]`` to the conversation,
       unchanged and in order. Then, before running anything: a ``call_id`` (compared exactly,
       case included) repeated inside the batch or already seen in an earlier turn stops with ``DUPLICATE_CALL_ID`` (checked
       first); then ``calls + len(batch) > max_calls`` stops with ``BUDGET_EXHAUSTED`` (none of
       the batch runs). Then for each call, in order: count it in ``calls``, run
       ``execute_call(call, principal)``; a denied result stops the run at once (later calls of
       the batch never run) with the denial reason as status and ``denial`` = its payload;
       otherwise keep the receipt, append ``function_call_output(call["call_id"], payload)`` to
       ``results`` and to the conversation, and the call_id to the step's ``executed``.

    ``max_calls=0`` allows no call at all; ``max_turns=0`` sends nothing. When the turns run out,
    stop with ``TURN_LIMIT``. Every ``Outcome`` carries ``calls``,
    ``results``, ``steps`` and the last ``verdict``.
    """
    raise NotImplementedError("run_loop: bounded turns, whole-batch budget, results by call_id")
{% endblock %}
