{#- What the learner receives in place of each region of the reference
    (reference/python/ag00/agent/contract/orders.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block execute_call %}
def execute_call(call: dict[str, Any], principal: Principal) -> ToolResult:
    """Run one ``function_call`` item as ``principal``, or refuse it.

    Check, in this order (the first check that fails decides), and refuse with
    ``ToolResult(payload={"error": reason}, denied=reason)``:

    1. ``call["name"]`` is not exactly ``TOOL_NAME`` (missing, another case, surrounding
       blanks, a longer name): reason ``UNKNOWN_TOOL``.
    2. ``call["arguments"]`` is not a string (missing, None, an already parsed dict), or does not
       parse as JSON to an object with exactly one key, ``"order_id"``, whose value is a
       non-empty string: reason ``INVALID_ARGUMENTS``. Extra keys are refused, not ignored, even
       a ``"tenant"`` or ``"user"`` equal to the principal's: identity comes from ``principal``
       alone.
    3. The order id, of any length, is not a key of ``ORDERS`` exactly as written (no trimming,
       no case folding, no Unicode normalisation: ``"O-1"``, ``" o-1"`` and ``"o-１"`` are unknown), or the
       order's ``tenant`` or its ``user`` differs from the principal's (compared exactly):
       reason ``PERMISSION_DENIED``. Unknown and foreign orders get the same answer, and the
       payload holds no order field.

    Otherwise return ``ToolResult(payload={"order_id": ..., "status": ..., "source": TOOL_NAME})``
    with ``denied`` left as None: a new dict, so that neither reading nor editing a receipt ever
    changes ``ORDERS``. Every payload, a denial's too, is a new dict: editing one result never
    changes another. The ``call`` item itself is never changed.
    """
    raise NotImplementedError("execute_call: check the call, then read the order")
{% endblock %}
