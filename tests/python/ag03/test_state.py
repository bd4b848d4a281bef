"""Catalog: the stream state (agent/proxy/state.py): what a stream of events amounts to, and when it
amounts to nothing but a failure."""

from __future__ import annotations

import copy
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


def test_final_arguments_checked():
    for size in READ_SIZES:
        got = failure("mismatched_arguments", size)
        assert got.code == "mismatch", f"deltas spelling Pais under a done event stating Paris fail closed as mismatch (read size {size}), got {got.code!r}"
    state = StreamState()
    events = STREAMS["mismatched_arguments"]["events"]
    done_at = next(i for i, e in enumerate(events) if e["type"] == "response.function_call_arguments.done")
    for event in events[:done_at]:
        state.feed(event)
    with pytest.raises(FailClosed) as early:
        state.feed(events[done_at])
    assert early.value.code == "mismatch", f"the disagreement is found at the done event itself, got {early.value.code!r}"
    call = fed("tool_call").finish().calls[0]
    assert (call.streamed, call.arguments) == ('{"city":"Paris"}', '{"city":"Paris"}'), \
        f"a done event stating exactly the fragments closes the call with those arguments: {call.streamed!r}, {call.arguments!r}"
    assert failure("item_done_differs").code == "mismatch", "a call's output_item.done stating other arguments fails closed as mismatch"
    for fragments, final in ((['{"city": "Paris"}'], '{"city":"Paris"}'), (['{"city":"Paris"}', " "], '{"city":"Paris"}'),
                             (['{"city":"Paris"}'], '{"city":"Paris"} ')):
        with pytest.raises(FailClosed) as spaced:
            fed(_created(CALL, *[{**DELTA, "delta": f} for f in fragments], {**DONE, "arguments": final}))
        assert spaced.value.code == "mismatch", \
            f"byte for byte: {fragments} under {final!r} is a mismatch even where the JSON means the same, got {spaced.value.code!r}"
    only_done = _created({**CALL}, {**DONE, "arguments": '{"city":"Paris"}'})
    with pytest.raises(FailClosed) as bare:
        fed(only_done)
    assert bare.value.code == "mismatch", f"a done event with no fragment before it disagrees with its (empty) stream, got {bare.value.code!r}"
    for name in ("mismatched_arguments", "item_done_differs"):
        upstream = ScriptedUpstream(name, "final_after_tools")
        tools = WeatherTools(upstream)
        with pytest.raises(FailClosed) as caught:
            buffered_final_stream({"model": "m", "input": "weather?", "tools": [{"type": "function", "name": "get_weather"}]},
                                  upstream, tools)
        assert caught.value.code == "mismatch" and tools.runs == [], f"{name}: no tool runs on disputed arguments: {tools.runs}"
        assert len(upstream.requests) == 1, f"{name}: nothing more is sent upstream"


def test_final_text_checked():
    for name in ("text_done_differs", "completed_text_differs"):
        for size in READ_SIZES:
            got = failure(name, size)
            assert got.code == "mismatch", f"{name} (read size {size}): a text whose final statement disagrees with its deltas fails closed, got {got.code!r}"
    refused = fed("refusal").finish()
    assert refused.refusal == "I can't help with that request." and refused.text == "", \
        f"a refusal is kept as the refusal: text {refused.text!r}, refusal {refused.refusal!r}"
    events = STREAMS["refusal"]["events"]
    changed = [dict(e) for e in events]
    done = next(i for i, e in enumerate(changed) if e["type"] == "response.refusal.done")
    changed[done] = {**changed[done], "refusal": "I can help."}
    with pytest.raises(FailClosed) as caught:
        fed(changed)
    assert caught.value.code == "mismatch", f"a refusal.done disagreeing with its deltas fails closed, got {caught.value.code!r}"
    terminal = [dict(e) for e in events]
    message = {**terminal[-1]["response"]["output"][0], "content": [{"type": "refusal", "refusal": "Something else."}]}
    terminal[-1] = {**terminal[-1], "response": {**terminal[-1]["response"], "output": [message]}}
    assert failure(terminal).code == "mismatch", "a completed response stating another refusal fails closed"
    slim = [dict(e) for e in STREAMS["final_text"]["events"]]
    slim[-1] = {**slim[-1], "response": {k: v for k, v in slim[-1]["response"].items() if k != "output"}}
    assert fed(slim).finish().text == "It is raining in Paris.", "a terminal event without an output list keeps the streamed text"
    emptied = [dict(e) for e in STREAMS["final_text"]["events"]]
    done = next(i for i, e in enumerate(emptied) if e["type"] == "response.output_text.done")
    emptied[done] = {**emptied[done], "text": ""}
    assert failure(emptied).code == "mismatch", "a text done event stating an empty text under deltas is a disagreement, not a missing text"
    slim_changed = [dict(e) for e in STREAMS["text_done_differs"]["events"]]
    slim_changed[-1] = {**slim_changed[-1], "response": {k: v for k, v in slim_changed[-1]["response"].items() if k != "output"}}
    assert failure(slim_changed).code == "mismatch", \
        "a text done event disagreeing with its deltas fails closed even when the completed response does not repeat the text"
    silent = [dict(e) for e in STREAMS["final_text"]["events"]]
    silent[-1] = {**silent[-1], "response": {**silent[-1]["response"], "output": []}}
    assert failure(silent).code == "mismatch", "a completed response whose output holds no text while text streamed fails closed"


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
    # the completed output's call must repeat the streamed call's id, name and arguments, each of them
    for field, other in (("name", "get_time"), ("call_id", "call_other"), ("arguments", '{"city": "Lyon"}')):
        events = copy.deepcopy(STREAMS["tool_call"]["events"])
        calls = [i for i in events[-1]["response"]["output"] if i.get("type") == "function_call"]
        calls[0][field] = other
        with pytest.raises(FailClosed) as caught:
            fed(events).finish()
        assert caught.value.code == "mismatch", \
            f"a completed output whose call has another {field} ({other!r}) than the stream's: got {caught.value.code!r}"
    slim = [dict(e) for e in STREAMS["tool_call"]["events"]]
    slim[-1] = {**slim[-1], "response": {k: v for k, v in slim[-1]["response"].items() if k != "output"}}
    turn = fed(slim).finish()
    assert [c.call_id for c in turn.calls] == ["call_paris"], "a terminal event without an output list keeps the streamed calls"


def _other(kind: str, **fields) -> dict:
    return {"type": kind, **fields}


@pytest.mark.parametrize("name", ["unknown_item_delta", "duplicate_item", "repeated_sequence", "created_missing",
                                  "terminal_id_mismatch", "event_after_terminal", "reused_call_id", "created_twice",
                                  "in_progress_other_id", "response_id_field", "item_done_never_added",
                                  "item_done_before_arguments_done", "unknown_item_done",
                                  "unknown_item_while_two_pending"])
def test_protocol_violations_fail_closed(name):
    fc2 = {**CALL["item"], "id": "fc_2", "call_id": "call_2"}
    built = {
        "created_twice": _created(CALL, _other("response.created", response={"id": "resp_m", "status": "in_progress"})),
        "in_progress_other_id": _created(_other("response.in_progress", response={"id": "resp_x", "status": "in_progress"})),
        "response_id_field": _created(CALL, {**DELTA, "response_id": "resp_x"}),
        "item_done_never_added": _created(_other("response.output_item.done", output_index=0, item={**CALL["item"], "id": "fc_9"})),
        "item_done_before_arguments_done": _created(CALL, DELTA, _other("response.output_item.done", output_index=0,
                                                                        item={**CALL["item"], "arguments": "{}"})),
        "unknown_item_done": _created(CALL, DELTA, {**DONE, "item_id": "fc_9"}),
        "unknown_item_while_two_pending": _created(CALL, DELTA, {**CALL, "output_index": 1, "item": fc2},
                                                   {**DELTA, "item_id": "fc_9", "output_index": 1}),
    }
    with pytest.raises(FailClosed) as caught:
        fed(built.get(name, name)).finish()
    assert caught.value.code == "protocol", f"{name}: a stream the state does not understand fails closed as protocol, got {caught.value.code!r}"


def _created(*events: dict) -> list[dict]:
    head = {"type": "response.created", "response": {"id": "resp_m", "status": "in_progress", "model": "m", "output": []}}
    return [{**e, "sequence_number": n} for n, e in enumerate([head, *events])]


CALL = {"type": "response.output_item.added", "output_index": 0,
        "item": {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": ""}}
DELTA = {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": "{}"}
DONE = {"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0, "arguments": "{}"}
COMPLETED = {"type": "response.completed", "response": {"id": "resp_m", "status": "completed", "model": "m"}}


@pytest.mark.parametrize("events", [
    [{"type": "response.created", "sequence_number": 0}],
    _created({**CALL, "item": {**CALL["item"], "call_id": ""}}),
    _created({**CALL, "item": {k: v for k, v in CALL["item"].items() if k != "name"}}),
    _created(CALL, DELTA, {k: v for k, v in DONE.items() if k != "arguments"}),
    _created(CALL, DELTA, DONE, {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "x"}),
    _created(CALL, DELTA, DONE, {**COMPLETED, "response": {**COMPLETED["response"], "status": "in_progress"}}),
    _created(CALL, DELTA, DONE, {**COMPLETED, "response": {**COMPLETED["response"], "output": {"0": CALL["item"]}}}),
    _created({"type": "response.output_text.delta", "item_id": "msg_1", "delta": None}),
    _created({**COMPLETED, "response": {"status": "completed"}}),
    [{**e, "sequence_number": str(e["sequence_number"])} for e in _created(CALL)],
    [_created(CALL)[0], {**_created(CALL)[1], "sequence_number": True}],
], ids=["created-without-response", "call-without-call_id", "call-without-name", "done-without-arguments",
        "delta-after-done", "completed-not-completed", "output-not-a-list", "text-delta-not-text", "completed-without-id",
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
    unstated = {**COMPLETED, "response": {k: v for k, v in COMPLETED["response"].items() if k != "status"}}
    assert fed(_created(unstated)).finish().text == "", "a completed event that states no status is taken at its word"


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
    """Text and refusal deltas (the last thousand characters, a refusal, cross the bound): they count against one bound."""
    events = [{"type": "response.created", "response": {"id": "resp_txt", "status": "in_progress", "model": "m", "output": []}}]
    events += [{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "x" * 1000}
               for _ in range(chars // 1000 - 1)]
    events += [{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "y" * (chars % 1000)}]
    events += [{"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0, "content_index": 1, "delta": "r" * 1000}]
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
    brought = {"id": "fc_0", "type": "function_call", "call_id": "call_0", "name": "get_weather", "arguments": over}
    with pytest.raises(FailClosed) as added:
        fed(_created({"type": "response.output_item.added", "output_index": 0, "item": brought}))
    assert added.value.code == "limit", \
        f"arguments the added item brings count: {MAX_ARGUMENT_CHARS + 1} of them fail closed at once, got {added.value.code!r}"
    at_bound = fed(_text(MAX_TEXT_CHARS)).finish()
    assert len(at_bound.text) + len(at_bound.refusal) == MAX_TEXT_CHARS, f"{MAX_TEXT_CHARS} characters of text and refusal pass"
    with pytest.raises(FailClosed) as text:
        fed(_text(MAX_TEXT_CHARS + 1))
    assert text.value.code == "limit", f"text and refusal of {MAX_TEXT_CHARS + 1} characters together fail closed, got {text.value.code!r}"


def test_read_boundaries():
    for name in STREAMS:
        outcomes = []
        for size in READ_SIZES:
            try:
                turn = fed(name, size).finish()
                outcomes.append(("turn", turn.text, turn.refusal, [(c.call_id, c.arguments) for c in turn.calls]))
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
    assert parts.text == "Rain in Paris; sun in Lisbon. Enjoy.", f"every part of every message, in order: {parts.text!r}"
    refused = fed("refusal").finish()
    assert (refused.id, refused.refusal) == ("resp_refuse1", "I can't help with that request."), \
        f"a refusal is part of what the turn keeps: {refused.id} {refused.refusal!r}"
    preamble = fed("text_then_call").finish()
    assert preamble.text == "Let me check." and len(preamble.calls) == 1, \
        f"text beside a call is kept with it: {preamble.text!r}, {len(preamble.calls)} calls"
