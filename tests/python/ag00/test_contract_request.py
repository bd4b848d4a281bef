"""Catalog: building the request (agent/contract/request.py)."""

import json

import pytest

from agent.contract import orders, request

QUESTION = "What is the status of order o-1?"

STRICT_TOOL = {
    "type": "function",
    "name": "read_order",
    "strict": True,
    "parameters": {
        "type": "object",
        "properties": {"order_id": {"type": "string"}},
        "required": ["order_id"],
        "additionalProperties": False,
    },
}


def _schema_view(tool: dict) -> dict:
    """The parts of a tool definition that make it strict (descriptions left out)."""
    params = tool.get("parameters", {})
    return {
        "type": tool.get("type"),
        "name": tool.get("name"),
        "strict": tool.get("strict"),
        "parameters": {
            "type": params.get("type"),
            "properties": {k: {"type": v.get("type")} for k, v in params.get("properties", {}).items()},
            "required": params.get("required"),
            "additionalProperties": params.get("additionalProperties"),
        },
    }


def test_request_shape():
    got = request.build_request(QUESTION, model="sample-model")
    keys = sorted(got)
    want_keys = ["input", "max_output_tokens", "model", "tools"]
    assert keys == want_keys, f"request keys: got {keys!r}, want {want_keys!r}"
    assert got["model"] == "sample-model", f"model: got {got['model']!r}, want 'sample-model'"
    roles = [m.get("role") for m in got["input"]]
    assert roles == ["developer", "user"], f"input roles: got {roles!r}, want ['developer', 'user']"
    assert got["input"][0]["content"] == request.DEVELOPER_INSTRUCTIONS, (
        f"developer message: got {got['input'][0]['content']!r}, want request.DEVELOPER_INSTRUCTIONS"
    )
    assert got["input"][1]["content"] == QUESTION, f"user message: got {got['input'][1]['content']!r}, want {QUESTION!r}"
    tools = [_schema_view(t) for t in got["tools"]]
    assert tools == [STRICT_TOOL], f"tools: got {tools!r}, want exactly one strict read_order tool {STRICT_TOOL!r}"
    assert got["tools"] == [orders.READ_ORDER_TOOL], (
        f"tools: got {got['tools']!r}, want a copy of orders.READ_ORDER_TOOL equal to it in every field, descriptions included"
    )
    assert got["max_output_tokens"] == 500, f"max_output_tokens: got {got['max_output_tokens']!r}, want 500 (the default budget)"
    assert json.loads(json.dumps(got)) == got, "the request must be plain JSON (dicts, lists, strings, numbers)"


def test_request_keeps_the_question_as_given():
    for question in (QUESTION, "  Where is o-1?\n", "Où est ma commande o-1 ?", "Where is o-1? " * 800):
        got = request.build_request(question, model="sample-model")
        user = got["input"][-1]
        want = {"role": "user", "content": question}
        assert user == want, f"the user message for question {question[:60]!r}: got {user!r:.200}, want {want!r:.200} (sent exactly as given)"
    for model in ("ft:gpt-4o-mini:acme::abc123", "org/model_v2", "m", "model with spaces inside", " sample-model "):
        got = request.build_request(QUESTION, model=model)["model"]
        assert got == model, f"model {model!r}: the request holds {got!r}, want it as given (any non-blank text is a model id)"


def _edit_tool_schema(built):
    params = built["tools"][0]["parameters"]
    params["additionalProperties"] = True
    params["properties"]["order_id"]["type"] = "integer"
    params["required"].append("tenant")


@pytest.mark.parametrize("case", ["module-tool", "earlier-request", "later-request"])
def test_request_tool_is_a_deep_copy(case):
    earlier = request.build_request(QUESTION, model="sample-model")
    edited = request.build_request(QUESTION, model="sample-model")
    _edit_tool_schema(edited)
    tool = {"module-tool": orders.READ_ORDER_TOOL, "earlier-request": earlier["tools"][0],
            "later-request": request.build_request(QUESTION, model="m")["tools"][0]}[case]
    got, want = _schema_view(tool), _schema_view(STRICT_TOOL)
    assert got == want, (
        f"editing the nested schema of one built request changed the tool of {case}: got {got!r}, want {want!r}; "
        "every request needs its own deep copy of the tool"
    )


def test_request_messages_are_new():
    first = request.build_request(QUESTION, model="sample-model")
    first["input"][0]["content"] = "edited"
    first["input"][1]["content"] = "edited too"
    second = request.build_request(QUESTION, model="sample-model")
    got = [m["content"] for m in second["input"]]
    want = [request.DEVELOPER_INSTRUCTIONS, QUESTION]
    assert got == want, f"editing the messages of one request changed the next request's: got {got!r}, want {want!r}"


@pytest.mark.parametrize(
    "question, model, budget",
    [
        (QUESTION, "", 500),
        (QUESTION, "   ", 500),
        (QUESTION, "\t\n", 500),
        (QUESTION, None, 500),
        ("", "sample-model", 500),
        ("   ", "sample-model", 500),
        ("\n\t ", "sample-model", 500),
        (None, "sample-model", 500),
        (QUESTION, 123, 500),
        (QUESTION, ["sample-model"], 500),
        (42, "sample-model", 500),
        ({"text": QUESTION}, "sample-model", 500),
    ],
    ids=["empty-model", "blank-model", "tab-newline-model", "no-model", "empty-question", "blank-question",
         "tab-newline-question", "no-question", "number-model", "list-model", "number-question", "object-question"],
)
def test_request_rejects_blank_text(question, model, budget):
    try:
        got = request.build_request(question, model=model, max_output_tokens=budget)
    except ValueError:
        return
    pytest.fail(f"build_request({question!r}, model={model!r}): got {got!r}, want ValueError (empty, blank or not text)")


@pytest.mark.parametrize(
    "budget",
    [0, -1, -500, True, False, "500", 1.5, 500.0, None],
    ids=["zero", "negative", "minus-500", "True", "False", "str", "fraction", "float-500", "None"],
)
def test_request_rejects_bad_budget(budget):
    try:
        got = request.build_request(QUESTION, model="sample-model", max_output_tokens=budget)
    except ValueError:
        return
    pytest.fail(f"build_request(..., max_output_tokens={budget!r}): got {got!r}, want ValueError (a budget is a positive int)")


@pytest.mark.parametrize("budget", [1, 64, 500, 100_000])
def test_request_budget_passed_through(budget):
    got = request.build_request(QUESTION, model="sample-model", max_output_tokens=budget)["max_output_tokens"]
    assert got == budget and type(got) is int, f"max_output_tokens={budget}: the request holds {got!r}, want {budget} (1 is the smallest budget)"
