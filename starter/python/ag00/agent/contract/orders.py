{#- What the learner receives in place of each region of the reference
    (reference/python/ag00/agent/contract/orders.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block execute_call %}
def execute_call(call: dict[str, Any], principal: Principal) -> ToolResult:
    """Run one ``function_call`` item as ``principal``, or refuse it.

    Check, in this order, and refuse with ``ToolResult(payload={"error": reason}, denied=reason)``:

    1. ``call["name"]`` is not ``TOOL_NAME`` (or is missing): reason ``UNKNOWN_TOOL``.
    2. ``call["arguments"]`` (a JSON string) does not parse to an object with exactly
       one key, ``"order_id"``, whose value is a non-empty string: reason
       ``INVALID_ARGUMENTS``. Extra keys are refused, not ignored, even a
       ``"tenant"`` or ``"user"`` equal to the principal's: identity comes from
       ``principal`` alone.
    3. The order is unknown, or its ``tenant`` or its ``user`` differs from the
       principal's: reason ``PERMISSION_DENIED``. Unknown and foreign orders get
       the same answer, and the payload holds no order field.

    Otherwise return ``ToolResult(payload={"order_id": ..., "status": ..., "source": TOOL_NAME})``
    with ``denied`` left as None.
    """
    raise NotImplementedError("execute_call: check the call, then read the order")
{% endblock %}
