"""ag02 catalog, the request: the portable history and tool catalog as one Responses API request."""

from __future__ import annotations

import copy
import json

import pytest

from agent.responses import request
from agent.responses.types import Message, ToolCall, ToolSpec

import ag02_samples as samples

EDIT_ARGS = {"path": "calculator.py", "old": "return a - b", "new": "return a + b"}


def history() -> list[Message]:
    return [
        Message("developer", "Fix bugs with the smallest edit."),
        Message("user", "The test for add() fails."),
        Message("assistant", "Let me look.", (ToolCall("call_r", "read", {"path": "calculator.py"}),)),
        Message("tool", "def add(a, b):\n    return a - b\n", tool_call_id="call_r"),
        Message("assistant", "", (ToolCall("call_e", "edit", EDIT_ARGS), ToolCall("call_r2", "read", {"path": "t.py"}))),
        Message("tool", "edited calculator.py", tool_call_id="call_e"),
        Message("tool", "assert add(2, 3) == 5", tool_call_id="call_r2"),
        Message("assistant", "", refusal="I can't run the tests myself."),
        Message("user", "Thanks."),
    ]


def test_request_shape():
    body = request.build_request([Message("user", "hi")], samples.tools(), samples.MODEL)
    assert isinstance(body, dict), f"build_request must return a dict, got {type(body).__name__}"
    want_keys = {"model", "input", "tools", "store", "stream", "max_output_tokens"}
    assert set(body) == want_keys, f"request keys: got {sorted(body)}, want exactly {sorted(want_keys)}"
    assert body["model"] == samples.MODEL, f"model: got {body['model']!r}"
    assert body["store"] is False, f"store must be False (nothing kept upstream), got {body['store']!r}"
    assert body["stream"] is True, f"stream must be True, got {body['stream']!r}"
    assert body["max_output_tokens"] == 2048, f"the default output budget is 2048 tokens, got {body['max_output_tokens']!r}"
    assert "previous_response_id" not in body, "this adapter replays the history; it never sends previous_response_id"
    budget = request.build_request([Message("user", "hi")], [], samples.MODEL, max_output_tokens=300)
    assert budget["max_output_tokens"] == 300, f"max_output_tokens=300 passed through: got {budget['max_output_tokens']!r}"
    assert budget["tools"] == [], f"no tools gives tools: [], got {budget['tools']!r}"
    assert json.loads(json.dumps(body)) == body, "the request must be plain JSON"

    edit = next(t for t in body["tools"] if t["name"] == "edit")
    want = {
        "type": "function",
        "name": "edit",
        "description": "Replace the exact text old with new in one file of the project.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}},
            "required": ["path", "old", "new"],
            "additionalProperties": False,
        },
        "strict": True,
    }
    assert edit == want, f"the edit tool as a strict function schema:\n got  {edit}\n want {want}"
    assert [t["name"] for t in body["tools"]] == ["read", "edit"], "tools keep the catalog's order"
    nothing = request.build_request([], [ToolSpec("ping", "Is anyone there?")], samples.MODEL)["tools"][0]["parameters"]
    want_empty = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    assert nothing == want_empty, f"a tool without parameters: got {nothing}, want {want_empty}"


def test_history_as_items():
    given = history()
    before = copy.deepcopy(given)
    items = request.build_request(given, samples.tools(), samples.MODEL)["input"]
    assert given == before, "build_request must not change the caller's history"

    def call(call_id: str, name: str) -> dict:
        found = [i for i in items if i.get("type") == "function_call" and i.get("call_id") == call_id]
        assert len(found) == 1, f"exactly one function_call item with call_id {call_id!r}, got {len(found)}"
        item = found[0]
        assert set(item) == {"type", "call_id", "name", "arguments"}, (
            f"a function_call item carries type, call_id, name and arguments (no item id with store=false), got {sorted(item)}")
        assert item["name"] == name, f"call {call_id}: name {item['name']!r}, want {name!r}"
        assert isinstance(item["arguments"], str), f"call {call_id}: arguments must be a JSON string, got {type(item['arguments']).__name__}"
        return item

    assert json.loads(call("call_e", "edit")["arguments"]) == EDIT_ARGS, "the edit's arguments, parsed, equal the object"
    assert json.loads(call("call_r", "read")["arguments"]) == {"path": "calculator.py"}, "the read's arguments, parsed"

    def shape(item: dict) -> tuple:
        if item.get("type") == "function_call":
            return ("call", item["call_id"])
        if item.get("type") == "function_call_output":
            assert set(item) == {"type", "call_id", "output"}, f"function_call_output keys: {sorted(item)}"
            return ("output", item["call_id"], item["output"])
        assert set(item) == {"role", "content"}, f"a message item is role and content, got {sorted(item)}"
        return ("message", item["role"], item["content"])

    want = [
        ("message", "developer", "Fix bugs with the smallest edit."),
        ("message", "user", "The test for add() fails."),
        ("message", "assistant", "Let me look."),
        ("call", "call_r"),
        ("output", "call_r", "def add(a, b):\n    return a - b\n"),
        ("call", "call_e"),
        ("call", "call_r2"),
        ("output", "call_e", "edited calculator.py"),
        ("output", "call_r2", "assert add(2, 3) == 5"),
        ("message", "assistant", "I can't run the tests myself."),
        ("message", "user", "Thanks."),
    ]
    got = [shape(i) for i in items]
    assert got == want, "input items in history order (text before its calls, each result as its own item):\n" + "\n".join(
        f" {'ok ' if g == w else 'BAD'} got {g}   want {w}" for g, w in zip(got + [None] * len(want), want + [None] * len(got)) if g or w)

    nested = {"path": "a.py", "old": 'say "hi"\n', "new": "é"}
    sent = request.build_request([Message("assistant", "", (ToolCall("c1", "edit", nested),))], [], "m")["input"]
    assert json.loads(sent[0]["arguments"]) == nested, "quotes, newlines and non-ASCII survive the JSON string"

    both = request.build_request([Message("assistant", "Here is the fix.", refusal="I won't run it.")], [], "m")["input"]
    assert both == [{"role": "assistant", "content": "Here is the fix."}], (
        f"a turn with text and a refusal is replayed as its text alone, got {both}")


@pytest.mark.parametrize("case", ["unanswered_id", "before_its_call", "unknown_role", "system_role", "role_in_another_case",
                                  "earlier_turn"])
def test_tool_result_needs_call(case):
    call = Message("assistant", "", (ToolCall("call_1", "read", {"path": "a.py"}),))
    result = Message("tool", "text of a.py", tool_call_id="call_1")
    if case == "earlier_turn":
        # a result may answer a call made several messages earlier
        items = request.build_request([call, Message("user", "go on"), result], [], "m")["input"]
        outputs = [i for i in items if i.get("type") == "function_call_output"]
        assert [o["call_id"] for o in outputs] == ["call_1"], f"the result answers call_1, got {outputs}"
        return
    bad = {
        "unanswered_id": [call, Message("tool", "?", tool_call_id="call_9")],
        "before_its_call": [result, call],
        "unknown_role": [Message("system2", "hello")],
        # the portable history has four roles; "system" is not one of them (instructions go as developer)
        "system_role": [Message("system", "be brief"), Message("user", "hi")],
        "role_in_another_case": [Message("Assistant", "hello")],
    }[case]
    with pytest.raises(ValueError):
        request.build_request(bad, [], "m")
