"""ag02's adapter and ag03's proxy teach one rule: the final arguments (a call's done event, its finished
item, the completed response) are the authority, they are checked against the streamed fragments, and
a disagreement fails closed, no tool running. Fed the same streams (every authored sequence of both
chapters, mismatch cases built here, and one stream built here for each other question both chapters
answer: identity, lifecycle, provider failures, item and call ids, the bounds, tools and arguments), the
two references must make the same decision on every question they share: whether any call may run,
and which calls with which arguments. ag03's text ("How this builds on ag02") names the differences.

Where the chapters legitimately ask different things of a stream, the difference is named in
DIFFERENCES with the reason, never skipped in silence, and the test checks that the difference is
still what it says (so a stale entry fails too).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import reference_package

REPO = Path(__file__).resolve().parents[3]
TOOLS = {"read": ("path",), "edit": ("path", "old", "new"), "get_weather": ("city",)}

# (chapter fixture) -> what differs, and why. Each is a question the chapters do not share.
DIFFERENCES = {
    "ag02/reasoning_item": "ag02's portable history cannot replay a reasoning item, so the adapter refuses it; the "
                           "proxy replays calls and results only and passes reasoning by (its text says what that costs)",
    "ag02/valid_then_malformed": "ag02's adapter knows each tool's parameters and checks the arguments against them; "
                                 "the proxy only requires a JSON object and leaves the schema to its tools",
    "ag03/completed_before_arguments_done": "the proxy's brief requires a matching arguments.done before any call "
                                            "runs; ag02's adapter decides at the completed response, which states the "
                                            "arguments (a server that sends no done event still works with it)",
    "ag03/text_done_differs": "text: the proxy forwards text deltas in progress mode, so a final text that disagrees "
                              "with them fails closed; ag02's adapter only previews deltas and decides on the final text",
    "ag03/completed_text_differs": "text, as for text_done_differs",
    "ag03/event_after_terminal": "ag02's adapter stops reading at response.completed (its provider returns the decision "
                                 "and closes the stream); the proxy reads the upstream body to its end and refuses "
                                 "any event after the terminal one",
}


def _ag02() -> Any:
    with reference_package("ag02"):
        return importlib.import_module("agent.responses.assembly"), importlib.import_module("agent.responses.types")


def _ag03() -> Any:
    with reference_package("ag03"):
        return (importlib.import_module("agent.proxy.state"), importlib.import_module("agent.proxy.policy"),
                importlib.import_module("agent.proxy.errors"))


ASSEMBLY, TYPES = _ag02()
STATE, POLICY, ERRORS = _ag03()


def ag02_decision(events: list[dict]) -> tuple[str, Any]:
    """("run", [(call_id, name, arguments as JSON)]) when the adapter releases a decision, else ("refused", code)."""
    tools = [TYPES.ToolSpec(name, "", params) for name, params in TOOLS.items()]
    assembly = ASSEMBLY.ResponseAssembly(tools, lambda kind, detail: None)
    try:
        for event in events:
            decision = assembly.accept(event)
            if decision is not None:
                return "run", [(c.id, c.name, dict(c.arguments)) for c in decision.tool_calls]
    except TYPES.ResponseFailure as failure:
        return "refused", failure.code
    return "refused", "stream_ended"


def ag03_decision(events: list[dict]) -> tuple[str, Any]:
    """The proxy's decision on one upstream response: the calls it would run (after its batch checks),
    else ("refused", code)."""
    state = STATE.StreamState()
    ran: list[tuple[str, str, dict]] = []
    try:
        for event in events:
            state.feed(event)
        turn = state.finish()
        tools = {name: (lambda name: lambda arguments: ran.append(name) or "")(name) for name in TOOLS}
        POLICY.run_calls(turn.calls, tools)
    except ERRORS.FailClosed as failure:
        return "refused", failure.code
    return "run", [(c.call_id, c.name, c.parsed_arguments()) for c in turn.calls]


def _streams() -> dict[str, list[dict]]:
    found = {}
    for path in sorted((REPO / "fixtures" / "ag02").glob("*.json")):
        data = json.loads(path.read_text())
        if "events" in data and data.get("end") == "eof":  # a reset is the transport's, not the stream's
            found[f"ag02/{path.stem}"] = data["events"]
    streams = json.loads((REPO / "fixtures" / "ag03" / "streams.json").read_text())["streams"]
    for name, stream in streams.items():
        if not stream.get("tail"):  # a body cut inside an event never reaches either decision as events
            found[f"ag03/{name}"] = stream["events"]
    return found


STREAMS = _streams()


def _call_stream(fragments: list[str], done: str | None, finished: str | None, final: str) -> list[dict]:
    """One read call: its fragments, its done event and finished item (None: left out), the completed output."""
    created = {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_x", "status": "in_progress", "output": []}}
    item = {"id": "fc_1", "type": "function_call", "status": "in_progress", "call_id": "call_1", "name": "read", "arguments": ""}
    events = [created, {"type": "response.output_item.added", "output_index": 0, "item": item}]
    events += [{"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": f} for f in fragments]
    if done is not None:
        events.append({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0, "arguments": done})
    if finished is not None:
        events.append({"type": "response.output_item.done", "output_index": 0, "item": {**item, "status": "completed", "arguments": finished}})
    output = [{**item, "status": "completed", "arguments": final}]
    events.append({"type": "response.completed", "sequence_number": len(events),
                   "response": {"id": "resp_x", "status": "completed", "output": output}})
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


A, B = '{"path": "a.py"}', '{"path": "b.py"}'
MISMATCHES = {
    "all agree": (_call_stream(['{"path": ', '"a.py"}'], A, A, A), "run"),
    "a fragment lost, the finals agree": (_call_stream(['{"path": '], A, A, A), "refused"),
    "a fragment repeated": (_call_stream(['{"path": ', '"a.py"}', '"a.py"}'], A, A, A), "refused"),
    "the done event differs": (_call_stream([A], B, A, A), "refused"),
    "the finished item differs": (_call_stream([A], A, B, A), "refused"),
    "the completed output differs": (_call_stream([A], A, A, B), "refused"),
    "the done event and the output differ from the fragments": (_call_stream([A], B, B, B), "refused"),
    "no fragment, the finals agree": (_call_stream([], A, A, A), "refused"),
    "the finished item states no arguments": (_call_stream([A], A, None, A), "run"),
}


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_both_references_decide_alike_on_every_authored_stream(name):
    events = STREAMS[name]
    ours, theirs = ag02_decision(json.loads(json.dumps(events))), ag03_decision(json.loads(json.dumps(events)))
    if name in DIFFERENCES:
        assert ours[0] != theirs[0], f"{name} is listed as a difference ({DIFFERENCES[name]}) but both say {ours} / {theirs}"
        return
    assert ours[0] == theirs[0], f"{name}: ag02 says {ours}, ag03 says {theirs}"
    if ours[0] == "run":
        assert ours[1] == theirs[1], f"{name}: the same calls with the same arguments: ag02 {ours[1]}, ag03 {theirs[1]}"


@pytest.mark.parametrize("case", list(MISMATCHES))
def test_both_references_check_the_final_arguments_against_the_fragments(case):
    events, want = MISMATCHES[case]
    ours, theirs = ag02_decision(json.loads(json.dumps(events))), ag03_decision(json.loads(json.dumps(events)))
    assert (ours[0], theirs[0]) == (want, want), f"{case}: want both {want!r}, got ag02 {ours}, ag03 {theirs}"
    if want == "run":
        assert ours[1] == theirs[1] == [("call_1", "read", {"path": "a.py"})], (ours, theirs)


def test_the_differences_are_the_listed_ones_only():
    unknown = sorted(set(DIFFERENCES) - set(STREAMS))
    assert not unknown, f"DIFFERENCES names streams that do not exist: {unknown}"


def test_the_proxy_runs_nothing_on_a_mismatch_through_its_policy():
    """The same rule end to end: the buffered policy fed a mismatched first response runs no tool."""
    runs: list[dict] = []
    events, _ = MISMATCHES["a fragment lost, the finals agree"]
    data = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
    with pytest.raises(ERRORS.FailClosed) as failure:
        POLICY.buffered_final_stream({"model": "m", "input": "x", "tools": [{"type": "function", "name": "read"}]},
                                     lambda body: iter([data]), {"read": lambda arguments: runs.append(arguments) or ""})
    assert failure.value.code == "mismatch" and runs == []


# One stream for each question both chapters answer, beyond the final arguments: built here, each a
# variation of one well-formed response with one read call.
def _created(**fields: Any) -> dict:
    return {"type": "response.created", "response": {"id": "resp_x", "status": "in_progress", "output": [], **fields}}


def _item(item_id: str = "fc_1", call_id: str = "call_1", name: str = "read", arguments: str = "") -> dict:
    return {"id": item_id, "type": "function_call", "status": "in_progress", "call_id": call_id, "name": name,
            "arguments": arguments}


def _call(item_id: str = "fc_1", call_id: str = "call_1", arguments: str = A, name: str = "read", added: str = "") -> list[dict]:
    """A call added (its item bringing `added`, the first characters of its arguments), the rest in one
    fragment, then its done event."""
    events = [{"type": "response.output_item.added", "output_index": 0, "item": _item(item_id, call_id, name, added)}]
    if arguments[len(added):]:
        events.append({"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": 0,
                       "delta": arguments[len(added):]})
    events.append({"type": "response.function_call_arguments.done", "item_id": item_id, "output_index": 0, "arguments": arguments})
    return events


def _final(item_id: str = "fc_1", call_id: str = "call_1", arguments: str = A, name: str = "read") -> dict:
    return {**_item(item_id, call_id, name, arguments), "status": "completed"}


def _completed(output: list | None, **fields: Any) -> dict:
    response = {"id": "resp_x", "status": "completed", **({} if output is None else {"output": output}), **fields}
    return {"type": "response.completed", "response": response}


def _numbered(events: list[dict]) -> list[dict]:
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


def _calls(n: int) -> list[dict]:
    return [_created()] + sum((_call(f"fc_{k}", f"call_{k}") for k in range(n)), []) + \
        [_completed([_final(f"fc_{k}", f"call_{k}") for k in range(n)])]


def _long(n: int) -> str:
    return '{"path": "' + "a" * (n - 12) + '"}'  # arguments of exactly n characters


def _text(n: int) -> list[dict]:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": "a" * n, "annotations": []}]}
    return [_created(), {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
                         "delta": "a" * n}, _completed([message])]


WELL_FORMED = [_created(), *_call(), _completed([_final()])]
FAILED = {"type": "response.failed", "response": {"id": "resp_x", "status": "failed", "error": {"code": "server_error", "message": "boom"}}}
INCOMPLETE = {"type": "response.incomplete",
              "response": {"id": "resp_x", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}}
SHARED = {
    "well formed": (WELL_FORMED, "run"),
    "no sequence numbers": ([{k: v for k, v in e.items() if k != "sequence_number"} for e in WELL_FORMED], "run"),
    "not opened by response.created": (WELL_FORMED[1:], "refused"),
    "response.created twice": ([_created(), *WELL_FORMED], "refused"),
    "response.created without an id": ([{"type": "response.created", "response": {"status": "in_progress"}}, *WELL_FORMED[1:]], "refused"),
    "an event naming another response_id": ([_created(), {**_call()[0], "response_id": "resp_y"}, *_call()[1:], _completed([_final()])], "refused"),
    "a lifecycle event of another response": ([_created(), {"type": "response.in_progress", "response": {"id": "resp_y"}}, *WELL_FORMED[1:]], "refused"),
    "completed naming another response": ([_created(), *_call(), _completed([_final()], id="resp_y")], "refused"),
    "completed with status incomplete": ([_created(), *_call(), _completed([_final()], status="incomplete")], "refused"),
    "response.failed": ([_created(), *_call(), FAILED], "refused"),
    "response.incomplete": ([_created(), *_call(), INCOMPLETE], "refused"),
    "an error event, nested": ([_created(), *_call(), {"type": "error", "error": {"code": "x", "message": "y"}}], "refused"),
    "an error event, flat": ([_created(), *_call(), {"type": "error", "code": "x", "message": "y"}], "refused"),
    "a fragment for an item never added": ([_created(), _call()[0], {"type": "response.function_call_arguments.delta",
                                            "item_id": "fc_9", "output_index": 0, "delta": "{}"}, *_call()[1:], _completed([_final()])], "refused"),
    "an item added twice": ([_created(), _call()[0], *_call(), _completed([_final()])], "refused"),
    "a call id under two item ids": ([_created(), *_call(), *_call("fc_2"), _completed([_final(), _final("fc_2")])], "refused"),
    "an empty call id": ([_created(), *_call(call_id=""), _completed([_final(call_id="")])], "refused"),
    "8 calls": (_calls(8), "run"),
    "9 calls": (_calls(9), "refused"),
    "arguments of 16,000 characters": ([_created(), *_call(arguments=_long(16_000)), _completed([_final(arguments=_long(16_000))])], "run"),
    "arguments of 16,001 characters": ([_created(), *_call(arguments=_long(16_001)), _completed([_final(arguments=_long(16_001))])], "refused"),
    "16,001 characters, most brought by the added item": (
        [_created(), *_call(arguments=_long(16_001), added=_long(16_001)[:-2]), _completed([_final(arguments=_long(16_001))])], "refused"),
    "text of 64,000 characters": (_text(64_000), "run"),
    "text of 64,001 characters": (_text(64_001), "refused"),
    "a tool not exposed": ([_created(), *_call(name="delete"), _completed([_final(name="delete")])], "refused"),
    "arguments that are not JSON": ([_created(), *_call(arguments='{"path": '), _completed([_final(arguments='{"path": ')])], "refused"),
    "arguments that are no object": ([_created(), *_call(arguments='["a.py"]'), _completed([_final(arguments='["a.py"]')])], "refused"),
    # where the two chapters ask different things: SHARED_DIFFERENCES says why
    "a sequence number repeated": ([{**e, "sequence_number": 0} for e in WELL_FORMED], "differs"),
    "completed without a status": ([_created(), *_call(), {"type": "response.completed", "response": {"id": "resp_x", "output": [_final()]}}], "differs"),
    "completed without an output list": ([_created(), *_call(), _completed(None)], "differs"),
    "an event after response.completed": ([*WELL_FORMED, {"type": "response.in_progress", "response": {"id": "resp_x"}}], "differs"),
    "a finished item before the done event": ([_created(), *_call()[:2], {"type": "response.output_item.done", "output_index": 0,
                                               "item": _final()}, _call()[2], _completed([_final()])], "differs"),
    "a web_search_call item beside the call": ([_created(), *_call(), _completed([{"id": "ws_1", "type": "web_search_call",
                                                "status": "completed"}, _final()])], "differs"),
}
SHARED_DIFFERENCES = {
    "a sequence number repeated": "the proxy forwards and renumbers events (in progress mode a replayed text delta reaches "
                                  "the client), so it refuses numbers that do not increase; ag02's adapter decides on the "
                                  "completed output, and a replayed event that could change its decision already fails "
                                  "another check (a repeated fragment: call_mismatch; a repeated item: duplicate_item)",
    "completed without a status": "ag02 requires the completed response to state status completed; the proxy reads an "
                                  "absent status as the event's own word, and refuses only a status that says otherwise",
    "completed without an output list": "ag02 builds its decision from the completed output, so it needs the list; the proxy "
                                        "builds its turn from the stream and checks the output only when it is there",
    "an event after response.completed": "ag02's adapter stops reading at response.completed; the proxy reads the body to its "
                                         "end and refuses anything after the terminal event",
    "a finished item before the done event": "the proxy requires each call's done event, and its finished item after it; "
                                             "ag02 checks the finished item against the fragments so far and needs no done event",
    "a web_search_call item beside the call": "ag02's portable history cannot replay any item but messages and function "
                                              "calls, so it refuses the rest; the proxy replays calls and results only and "
                                              "passes other items by",
}


@pytest.mark.parametrize("case", list(SHARED))
def test_both_references_answer_every_shared_question_alike(case):
    events, want = SHARED[case]
    events = _numbered(events) if case not in ("no sequence numbers", "a sequence number repeated") else events
    ours, theirs = ag02_decision(json.loads(json.dumps(events))), ag03_decision(json.loads(json.dumps(events)))
    if want == "differs":
        assert case in SHARED_DIFFERENCES, f"{case}: a difference must say why"
        assert ours[0] != theirs[0], f"{case} is listed as a difference ({SHARED_DIFFERENCES[case]}) but both say {ours} / {theirs}"
        return
    assert (ours[0], theirs[0]) == (want, want), f"{case}: want both {want!r}, got ag02 {ours}, ag03 {theirs}"
    if want == "run":
        assert ours[1] == theirs[1], f"{case}: the same calls with the same arguments: ag02 {ours[1]}, ag03 {theirs[1]}"
