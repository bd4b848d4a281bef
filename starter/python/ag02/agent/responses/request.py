{#- What the learner receives in place of each region of the reference
    (reference/python/ag02/agent/responses/request.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block module %}
"""The portable history and tool catalog, encoded as one Responses API request.

`build_request` is yours (sections 2.1 and 4 of `course show ag02`). The imports are the ones the
reference solution uses; add or drop any.
"""
{% endblock %}
{% block module_2 %}
{% endblock %}
{% block build_request %}
    """Return one streaming Responses request that replays the whole history and stores nothing.

    The request has exactly these keys: model, input, tools, store (False), stream (True) and
    max_output_tokens. Never previous_response_id: every request carries the full history.

    input, in history order, one or more items per message (the history itself is left unchanged):
    - a developer, user or assistant message with text: {"role": role, "content": text}; an
      assistant message's refusal, when it has no content, is replayed as its text; an assistant
      message with neither text nor calls still gives {"role": "assistant", "content": ""};
    - then each of an assistant message's tool calls, as its own item:
      {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": JSON text of
      call.arguments}; no item id (with store=false the server keeps no item an id could name);
    - a tool message: {"type": "function_call_output", "call_id": tool_call_id, "output": content}.
    Raise ValueError for a tool message whose tool_call_id names no call earlier in the history, and
    for any other role.

    tools, in catalog order, each as a strict function schema:
    {"type": "function", "name", "description", "parameters": {"type": "object", "properties":
    {each parameter: {"type": "string"}}, "required": [every parameter, in order],
    "additionalProperties": False}, "strict": True}.
    """
    raise NotImplementedError("build_request: see sections 2.1 and 4 of `course show ag02`.")
{% endblock %}
