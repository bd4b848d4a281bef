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
    assert got["max_output_tokens"] == 500, f"max_output_tokens: got {got['max_output_tokens']!r}, want 500 (the default budget)"
    assert request.build_request(QUESTION, model="m", max_output_tokens=64)["max_output_tokens"] == 64, (
        "max_output_tokens=64 was not passed through to the request"
    )
    assert json.loads(json.dumps(got)) == got, "the request must be plain JSON (dicts, lists, strings, numbers)"
    got["tools"][0]["strict"] = False
    assert orders.READ_ORDER_TOOL["strict"] is True, (
        "editing a built request changed orders.READ_ORDER_TOOL: put a copy of the tool in the request"
    )


@pytest.mark.parametrize(
    "question, model, budget",
    [
        (QUESTION, "", 500),
        (QUESTION, "   ", 500),
        ("", "sample-model", 500),
        (QUESTION, "sample-model", 0),
        (QUESTION, "sample-model", -1),
        (QUESTION, "sample-model", True),
        (QUESTION, "sample-model", "500"),
    ],
    ids=["empty-model", "blank-model", "empty-question", "zero-budget", "negative-budget", "bool-budget", "str-budget"],
)
def test_request_validates_inputs(question, model, budget):
    try:
        got = request.build_request(question, model=model, max_output_tokens=budget)
    except ValueError:
        return
    pytest.fail(f"build_request({question!r}, model={model!r}, max_output_tokens={budget!r}): got {got!r}, want ValueError")
