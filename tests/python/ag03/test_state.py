"""Catalog: the stream state (agent/proxy/state.py): what a stream of events amounts to, and when it
amounts to nothing but a failure."""

from __future__ import annotations

import json

import pytest

from ag03_streams import READ_SIZES, STREAMS, ScriptedUpstream, WeatherTools, body, frame, pieces
from agent.proxy.errors import FailClosed
from agent.proxy.policy import buffered_final_stream
from agent.proxy.sse import read_events
from agent.proxy.state import MAX_ARGUMENT_CHARS, MAX_PENDING_CALLS, MAX_TEXT_CHARS, StreamState


def fed(name_or_events, read_size: int = 65536) -> StreamState:
    """A state fed a fixture stream (by name) or a list of events, read `read_size` bytes at a time."""
    data = body(name_or_events) if isinstance(name_or_events, str) else b"".join(frame(e) for e in name_or_events)
    state = StreamState()
    for event in read_events(pieces(data, read_size)):
        state.feed(event)
    return state


def failure(name_or_events, read_size: int = 65536) -> FailClosed:
    with pytest.raises(FailClosed) as caught:
        fed(name_or_events, read_size).finish()
    return caught.value


def test_hand_example():
    events = STREAMS["tool_call"]["events"]
    state = StreamState()
    for event in events[:-1]:  # everything but response.completed: both done events included
        state.feed(event)
    with pytest.raises(FailClosed) as early:
        state.finish()
    assert early.value.code == "missing_terminal", f"before response.completed finish() must fail closed, got {early.value.code!r}"
    state.feed(events[-1])
    turn = state.finish()
    assert [(c.call_id, c.name, c.arguments) for c in turn.calls] == [("call_paris", "get_weather", '{"city":"Paris"}')], \
        f"one complete get_weather call for Paris, got {[(c.call_id, c.name, c.arguments) for c in turn.calls]}"
    assert turn.calls[0].parsed_arguments() == {"city": "Paris"}, f"parsed arguments, got {turn.calls[0].parsed_arguments()!r}"
    assert (turn.id, turn.text) == ("resp_call1", ""), f"id resp_call1 and no text, got {(turn.id, turn.text)}"


def test_interleaved_deltas_by_item():
    for size in READ_SIZES:
        turn = fed("interleaved_calls", size).finish()
        got = [(c.call_id, c.streamed, c.arguments) for c in turn.calls]
        assert got == [("call_paris", '{"city":"Paris"}', '{"city":"Paris"}'),
                       ("call_lisbon", '{"city":"Lisbon"}', '{"city":"Lisbon"}')], \
            f"each fragment goes to the call its item_id names, calls in output order (read size {size}): got {got}"
    reordered = [dict(e) for e in STREAMS["interleaved_calls"]["events"]]
    added = [i for i, e in enumerate(reordered) if e["type"] == "response.output_item.added"]
    reordered[added[0]], reordered[added[1]] = reordered[added[1]], reordered[added[0]]
    for number, event in enumerate(reordered):
        event["sequence_number"] = number
    turn = fed(reordered).finish()
    assert [c.call_id for c in turn.calls] == ["call_paris", "call_lisbon"], \
        f"calls come out by output_index, not by the order they opened: got {[c.call_id for c in turn.calls]}"


def test_final_arguments_authoritative():
    turn = fed("corrected_arguments").finish()
    call = turn.calls[0]
    assert call.streamed == '{"city":"Pais"}', f"the deltas are kept as they came: {call.streamed!r}"
    assert call.arguments == '{"city":"Paris"}', f"the done event's arguments win over the deltas: {call.arguments!r}"
    assert call.corrected is True, "a call whose final arguments differ from its deltas says so (corrected)"
    assert fed("tool_call").finish().calls[0].corrected is False, "a call whose deltas match is not corrected"
    upstream = ScriptedUpstream("corrected_arguments", "final_after_tools")
    tools = WeatherTools(upstream)
    buffered_final_stream({"model": "m", "input": "weather?", "tools": [{"type": "function", "name": "get_weather"}]},
                          upstream, tools)
    assert tools.runs == [{"city": "Paris"}], f"the tool runs on the final arguments, not the deltas: {tools.runs}"
    sent = next(i for i in upstream.requests[1]["input"] if i.get("type") == "function_call")
    assert sent["arguments"] == '{"city":"Paris"}', f"the final arguments go back upstream: {sent['arguments']!r}"


@pytest.mark.parametrize("name", ["cut_mid_arguments", "completed_before_arguments_done", "incomplete_max_tokens"])
def test_incomplete_calls_fail_closed(name):
    got = failure(name)
    expected = {"cut_mid_arguments": "missing_terminal", "completed_before_arguments_done": "incomplete_call",
                "incomplete_max_tokens": "upstream_incomplete"}[name]
    assert got.code == expected, f"{name}: fails closed with {expected!r}, got {got.code!r} ({got.message})"
    if name == "incomplete_max_tokens":
        assert "max_output_tokens" in got.message, f"the incomplete reason is kept in the message: {got.message!r}"


@pytest.mark.parametrize("name", ["cut_after_arguments", "cut_inside_event", "cut_inside_terminal"])
def test_missing_terminal_fails_closed(name):
    for size in READ_SIZES:
        got = failure(name, size)
        assert got.code in ("missing_terminal", "truncated"), \
            f"{name} (read size {size}): a body without its terminal event fails closed, got {got.code!r}"


@pytest.mark.parametrize("name, code, words", [
    ("failed_after_done", "upstream_failed", "failed to finish"),
    ("error_event", "upstream_error", "went wrong upstream"),
    ("error_event_nested", "upstream_error", "overloaded"),
])
def test_upstream_failures_fail_closed(name, code, words):
    with pytest.raises(FailClosed) as caught:
        fed(name)
    assert caught.value.code == code, f"{name}: expected {code!r}, got {caught.value.code!r}"
    assert words in caught.value.message, f"{name}: the upstream's own message is kept, got {caught.value.message!r}"


def test_terminal_calls_match_stream():
    for name in ("completed_mismatch", "completed_missing_call"):
        got = failure(name)
        assert got.code == "mismatch", f"{name}: the completed response must list exactly the streamed calls, got {got.code!r}"
    slim = [dict(e) for e in STREAMS["tool_call"]["events"]]
    slim[-1] = {**slim[-1], "response": {k: v for k, v in slim[-1]["response"].items() if k != "output"}}
    turn = fed(slim).finish()
    assert [c.call_id for c in turn.calls] == ["call_paris"], "a terminal event without an output list keeps the streamed calls"


@pytest.mark.parametrize("name", ["unknown_item_delta", "duplicate_item", "repeated_sequence", "created_missing",
                                  "terminal_id_mismatch", "event_after_terminal"])
def test_protocol_violations_fail_closed(name):
    with pytest.raises(FailClosed) as caught:
        fed(name).finish()
    assert caught.value.code == "protocol", f"{name}: a stream the state does not understand fails closed as protocol, got {caught.value.code!r}"


def _created(*events: dict) -> list[dict]:
    head = {"type": "response.created", "response": {"id": "resp_m", "status": "in_progress", "model": "m", "output": []}}
    return [{**e, "sequence_number": n} for n, e in enumerate([head, *events])]


CALL = {"type": "response.output_item.added", "output_index": 0,
        "item": {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": ""}}
DONE = {"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0, "arguments": "{}"}
COMPLETED = {"type": "response.completed", "response": {"id": "resp_m", "status": "completed", "model": "m"}}


@pytest.mark.parametrize("events", [
    [{"type": "response.created", "sequence_number": 0}],
    _created({**CALL, "item": {**CALL["item"], "call_id": ""}}),
    _created({**CALL, "item": {k: v for k, v in CALL["item"].items() if k != "name"}}),
    _created(CALL, {k: v for k, v in DONE.items() if k != "arguments"}),
    _created(CALL, DONE, {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "x"}),
    _created(CALL, DONE, {**COMPLETED, "response": {**COMPLETED["response"], "status": "in_progress"}}),
    _created(CALL, DONE, {**COMPLETED, "response": {**COMPLETED["response"], "output": {"0": CALL["item"]}}}),
    _created({**COMPLETED, "response": {"status": "completed"}}),
    [{**e, "sequence_number": str(e["sequence_number"])} for e in _created(CALL)],
    [_created(CALL)[0], {**_created(CALL)[1], "sequence_number": True}],
], ids=["created-without-response", "call-without-call_id", "call-without-name", "done-without-arguments",
        "delta-after-done", "completed-not-completed", "output-not-a-list", "completed-without-id",
        "sequence-number-text", "sequence-number-bool"])
def test_malformed_events_fail_closed(events):
    with pytest.raises(FailClosed) as caught:
        fed(events).finish()
    assert caught.value.code == "protocol", f"a malformed event fails closed as protocol, got {caught.value.code!r}"


def test_lenient_where_the_api_allows():
    plain = [{k: v for k, v in e.items() if k != "sequence_number"} for e in STREAMS["tool_call"]["events"]]
    turn = fed(plain).finish()
    assert [c.call_id for c in turn.calls] == ["call_paris"], "events without sequence numbers (some servers send none) are accepted"
    text = _created({"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Hi"},
                    {"type": "response.output_text.done", "item_id": "msg_1"}, COMPLETED)
    assert fed(text).finish().text == "Hi", "a text done event without its text keeps the deltas"


def _calls(count: int, arguments: str = '{"city":"Paris"}', final: str | None = None) -> list[dict]:
    events = [{"type": "response.created", "response": {"id": "resp_lim", "status": "in_progress", "model": "m", "output": []}}]
    for i in range(count):
        item = {"id": f"fc_{i}", "type": "function_call", "call_id": f"call_{i}", "name": "get_weather", "arguments": ""}
        events += [{"type": "response.output_item.added", "output_index": i, "item": item},
                   {"type": "response.function_call_arguments.delta", "item_id": f"fc_{i}", "output_index": i, "delta": arguments},
                   {"type": "response.function_call_arguments.done", "item_id": f"fc_{i}", "output_index": i,
                    "arguments": arguments if final is None else final}]
    output = [{"type": "function_call", "call_id": f"call_{i}", "name": "get_weather",
               "arguments": arguments if final is None else final} for i in range(count)]
    events.append({"type": "response.completed", "response": {"id": "resp_lim", "status": "completed", "model": "m", "output": output}})
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


def _text(chars: int) -> list[dict]:
    events = [{"type": "response.created", "response": {"id": "resp_txt", "status": "in_progress", "model": "m", "output": []}}]
    events += [{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "x" * 1000}
               for _ in range(chars // 1000)]
    events += [{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "y" * (chars % 1000)}]
    events.append({"type": "response.completed", "response": {"id": "resp_txt", "status": "completed", "model": "m"}})
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


def test_limits_at_and_past_bounds():
    assert len(fed(_calls(MAX_PENDING_CALLS)).finish().calls) == MAX_PENDING_CALLS, f"{MAX_PENDING_CALLS} calls are allowed"
    with pytest.raises(FailClosed) as many:
        fed(_calls(MAX_PENDING_CALLS + 1))
    assert many.value.code == "limit", f"call {MAX_PENDING_CALLS + 1} fails closed as limit, got {many.value.code!r}"
    exact = json.dumps({"city": "P" * (MAX_ARGUMENT_CHARS - 12)})
    assert len(exact) == MAX_ARGUMENT_CHARS, "the test's own arithmetic"
    assert fed(_calls(1, exact)).finish().calls[0].arguments == exact, f"arguments of exactly {MAX_ARGUMENT_CHARS} characters pass"
    over = json.dumps({"city": "P" * (MAX_ARGUMENT_CHARS - 11)})
    for streamed, final in ((over, exact), (exact, over)):
        with pytest.raises(FailClosed) as long:
            fed(_calls(1, streamed, final))
        assert long.value.code == "limit", f"arguments of {MAX_ARGUMENT_CHARS + 1} characters, streamed or final, fail closed"
    assert len(fed(_text(MAX_TEXT_CHARS)).finish().text) == MAX_TEXT_CHARS, f"{MAX_TEXT_CHARS} characters of text pass"
    with pytest.raises(FailClosed) as text:
        fed(_text(MAX_TEXT_CHARS + 1))
    assert text.value.code == "limit", f"text of {MAX_TEXT_CHARS + 1} characters fails closed, got {text.value.code!r}"


def test_read_boundaries():
    for name in STREAMS:
        outcomes = []
        for size in READ_SIZES:
            try:
                turn = fed(name, size).finish()
                outcomes.append(("turn", turn.text, [(c.call_id, c.arguments) for c in turn.calls]))
            except FailClosed as exc:
                outcomes.append(("failed", exc.code))
        assert outcomes.count(outcomes[0]) == len(READ_SIZES), f"{name}: the same outcome at read sizes {READ_SIZES}: {outcomes}"


def test_metadata_preserved():
    turn = fed("final_text").finish()
    completed = STREAMS["final_text"]["events"][-1]["response"]
    got = (turn.id, turn.model, turn.created_at, turn.status, turn.usage, turn.text)
    want = ("resp_text1", completed["model"], completed["created_at"], "completed", completed["usage"], "It is raining in Paris.")
    assert got == want, f"id, model, created_at, status, usage and text of the final response: got {got}, want {want}"
    parts = fed("text_parts_and_items").finish()
    assert parts.text == "Rain in Paris; sun in Lisbon. Enjoy.", \
        f"every part of every message, in order, each part's done text winning over its deltas: {parts.text!r}"
    preamble = fed("text_then_call").finish()
    assert preamble.text == "Let me check." and len(preamble.calls) == 1, \
        f"text beside a call is kept with it: {preamble.text!r}, {len(preamble.calls)} calls"
