"""ag02 catalog, the assembly: native events folded into one decision, released only at validated completion."""

from __future__ import annotations

import copy
import json

import pytest

from agent.responses import assembly
from agent.responses.types import Message, ResponseFailure

import ag02_samples as samples

TOOLS = samples.tools()


def new(report=None) -> assembly.ResponseAssembly:
    return assembly.ResponseAssembly(TOOLS, report if report is not None else samples.Recorder())


def feed(events: list[dict], asm: assembly.ResponseAssembly | None = None) -> tuple[Message | None, str | None, int]:
    """(decision, failure code, index of the event that decided) after feeding events in order."""
    asm = asm or new()
    for i, event in enumerate(events):
        try:
            decision = asm.accept(event)
        except ResponseFailure as exc:
            return None, exc.code, i
        if decision is not None:
            return decision, None, i
    return None, None, len(events)


def outcome(events: list[dict], **kw) -> str:
    decision, code, _ = feed(events, **kw)
    return f"failure {code}" if code else ("a decision" if decision is not None else "no decision")


def expect_failure(events: list[dict], code: str, what: str) -> None:
    asm = new()
    for at, event in enumerate(events):
        try:
            decision = asm.accept(event)
        except ResponseFailure as exc:
            assert exc.code == code, f"{what}: got failure {exc.code!r} at event {at}, want failure {code!r}"
            assert isinstance(exc.detail, str) and exc.detail, f"{what}: failure {code!r} must say what was seen (detail {exc.detail!r})"
            return
        assert decision is None, f"{what}: a decision was released at event {at}, want failure {code!r}"
    raise AssertionError(f"{what}: no failure after {len(events)} events, want failure {code!r}")


def created(rid: str = "resp_1") -> dict:
    return {"type": "response.created", "sequence_number": 0, "response": {"id": rid, "status": "in_progress", "output": []}}


def call_item(item_id: str, call_id: str, name: str, arguments: str = "", status: str = "in_progress") -> dict:
    return {"id": item_id, "type": "function_call", "status": status, "call_id": call_id, "name": name, "arguments": arguments}


def added(item: dict) -> dict:
    return {"type": "response.output_item.added", "output_index": 0, "item": item}


def delta(item_id: str, text: str) -> dict:
    return {"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": 0, "delta": text}


def completed(output: list, rid: str = "resp_1", status: str = "completed") -> dict:
    return {"type": "response.completed", "response": {"id": rid, "status": status, "output": output}}


def text_delta(text: str, kind: str = "output_text") -> dict:
    return {"type": f"response.{kind}.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text}


def message_item(*parts: dict) -> dict:
    return {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": list(parts)}


def one_call(arguments: str, name: str = "read", call_id: str = "call_1") -> list[dict]:
    """A whole response with one call streamed in one delta and listed as it was streamed."""
    return [created(), added(call_item("fc_1", call_id, name)), delta("fc_1", arguments),
            completed([call_item("fc_1", call_id, name, arguments, "completed")])]


def test_hand_example():
    seq = samples.sequence("single_call")
    recorder = samples.Recorder()
    asm = new(recorder)
    kinds = [e["type"] for e in seq["events"]]
    for event in seq["events"][:-1]:
        got = asm.accept(event)
        assert got is None, f"{event['type']} (sequence {event['sequence_number']}) is progress: got {got!r}, want None"
    decision = asm.accept(seq["events"][-1])
    assert decision is not None, f"response.completed must release the decision (events: {kinds})"
    assert samples.message_form(decision) == seq["expect"]["message"], (
        f"the decision:\n got  {samples.message_form(decision)}\n want {seq['expect']['message']}")
    assert decision.tool_calls[0].arguments == {"path": "calculator.py", "old": "return a - b", "new": "return a + b"}, (
        "the call's arguments are the parsed object, not the JSON text")
    progress = [d for k, d in recorder.reports if k == "arguments"]
    assert len(progress) == 3 and all("fc_edit_1" in d for d in progress), (
        f"each argument delta reports ('arguments', ...) naming its item: got {recorder.reports}")
    lengths = ["15", "49", "71"]
    assert all(n in d for n, d in zip(lengths, progress)), f"the reports give the characters buffered so far ({lengths}): {progress}"


@pytest.mark.parametrize("name", samples.sequence_names())
def test_authored_sequences(name):
    seq = samples.sequence(name)
    decision, code, at = feed(seq["events"], asm=assembly.ResponseAssembly(samples.tools(*seq["tools"]), samples.Recorder()))
    want = seq["expect"]
    if "message" in want:
        assert code is None, f"{name} ({seq['about']}): failed with {code!r} at event {at}, want a decision"
        assert decision is not None, f"{name}: no decision after every event, want one at response.completed"
        assert at == len(seq["events"]) - 1, f"{name}: the decision came at event {at}, not at the final response.completed"
        got = samples.message_form(decision)
        assert got == want["message"], f"{name}: decision differs:\n got  {json.dumps(got)[:600]}\n want {json.dumps(want['message'])[:600]}"
    elif want["failure"] in ("stream_ended", "transport"):
        # The stream stops early: every event the assembly saw must stay progress.
        assert (decision, code) == (None, None), (
            f"{name} ({seq['about']}): got {'a decision' if decision else 'failure ' + repr(code)} at event {at}; "
            "every event before the cut is progress")
    else:
        assert decision is None, f"{name} ({seq['about']}): a decision was released at event {at}; want failure {want['failure']!r}"
        assert code == want["failure"], f"{name} ({seq['about']}): got {('failure ' + repr(code)) if code else 'no failure'}, want {want['failure']!r}"


@pytest.mark.parametrize("name", ["done_then_failed", "cut_after_last_argument", "output_limit"])
def test_item_completion_is_not_response_completion(name):
    seq = samples.sequence(name)
    asm = new()
    dones = 0
    for event in seq["events"]:
        kind = event["type"]
        try:
            got = asm.accept(event)
        except ResponseFailure as exc:
            assert kind in ("response.failed", "response.incomplete"), f"{name}: failure {exc.code!r} at {kind}, want only at the terminal failure"
            assert exc.code == seq["expect"]["failure"], f"{name}: code {exc.code!r}, want {seq['expect']['failure']!r}"
            assert not asm.pending, f"{name}: calls still buffered after the failure: {list(asm.pending)}; they must be discarded"
            late = completed([call_item("fc_edit_1", "call_edit_1", "edit", "{}", "completed")], rid=asm.response_id or "")
            with pytest.raises(ResponseFailure) as after:
                asm.accept(late)
            assert after.value.code == "ended", f"{name}: an event after the failure must fail with 'ended', got {after.value.code!r}"
            return
        dones += kind.endswith(".done")
        assert got is None, f"{name}: {kind} released a decision; per-item .done events are progress, never authorization"
    assert dones >= 2, f"{name}: the sequence holds arguments.done and output_item.done ({dones} seen)"
    assert seq["expect"]["failure"] == "stream_ended", f"{name}: no failure was raised, want {seq['expect']['failure']!r}"


def test_fragments_buffered_not_parsed():
    whole = json.dumps({"path": "calculator.py", "old": "a - b", "new": "a + b"})
    for cut in range(1, len(whole)):
        events = [created(), added(call_item("fc_1", "call_1", "edit")), delta("fc_1", whole[:cut]), delta("fc_1", whole[cut:]),
                  completed([call_item("fc_1", "call_1", "edit", whole, "completed")])]
        decision, code, at = feed(events)
        assert code is None and decision is not None, (
            f"arguments cut after {cut} characters ({whole[:cut]!r} + {whole[cut:]!r}): got {outcome(events)}; "
            "fragments are buffered and parsed once, at completion")
        assert decision.tool_calls[0].arguments == json.loads(whole), f"cut at {cut}: arguments {decision.tool_calls[0].arguments}"
    # The item may bring the first fragment itself, and an empty delta changes nothing.
    events = [created(), added(call_item("fc_1", "call_1", "read", '{"pa')), delta("fc_1", ""), delta("fc_1", 'th": "x.py"}'),
              completed([call_item("fc_1", "call_1", "read", '{"path": "x.py"}', "completed")])]
    decision, code, _ = feed(events)
    assert code is None and decision is not None, f"initial arguments in output_item.added count as the first fragment: got {code!r}"


def test_interleaved_calls_by_item():
    seq = samples.sequence("interleaved_calls")
    decision, code, _ = feed(seq["events"])
    assert code is None and decision is not None, f"interleaved_calls: got failure {code!r}, want a decision"
    got = [(c.id, c.arguments["path"]) for c in decision.tool_calls]
    want = [("call_read_a", "calculator.py"), ("call_read_b", "test_calculator.py")]
    assert got == want, f"each fragment goes to the item it names; calls in final output order: got {got}, want {want}"
    assert decision.content == "Reading both files first.", f"the text beside the calls: got {decision.content!r}"
    # A fragment routed to the item added last would be caught by the byte comparison at completion.
    events = [created(), added(call_item("fc_a", "call_a", "read")), added(call_item("fc_b", "call_b", "read")),
              delta("fc_a", '{"path": "a.py"}'), delta("fc_b", '{"path": "b.py"}'),
              completed([call_item("fc_a", "call_a", "read", '{"path": "a.py"}', "completed"),
                         call_item("fc_b", "call_b", "read", '{"path": "b.py"}', "completed")])]
    decision, code, _ = feed(events)
    assert code is None and decision is not None, f"two calls, fragments by item: got failure {code!r}"
    assert [c.arguments for c in decision.tool_calls] == [{"path": "a.py"}, {"path": "b.py"}], (
        f"fragments by item id: got {[c.arguments for c in decision.tool_calls]}")


@pytest.mark.parametrize("case", ["before_created", "created_twice", "no_id", "empty_id", "no_response_object",
                                  "after_completed", "after_failure"])
def test_lifecycle_order(case):
    if case in ("before_created", "created_twice"):
        expect_failure(samples.events(case), {"before_created": "not_started", "created_twice": "duplicate_created"}[case], case)
        return
    if case in ("no_id", "empty_id", "no_response_object"):
        event = {"no_id": {"type": "response.created", "response": {"status": "in_progress"}},
                 "empty_id": created(""),
                 "no_response_object": {"type": "response.created"}}[case]
        want = "malformed_event" if case == "no_response_object" else "missing_id"
        expect_failure([event], want, f"response.created ({case})")
        return
    asm = new()
    if case == "after_completed":
        decision, code, _ = feed(samples.events("text_only"), asm)
        assert decision is not None, f"text_only must complete, got failure {code!r}"
    else:
        _, code, _ = feed(samples.events("error_event"), asm)
        assert code == "error", f"error_event must fail with 'error', got {code!r}"
    for late in (text_delta("more"), completed([], rid=asm.response_id or "resp_text_only")):
        with pytest.raises(ResponseFailure) as info:
            asm.accept(late)
        assert info.value.code == "ended", f"{case}: {late['type']} after the end must fail with 'ended', got {info.value.code!r}"


@pytest.mark.parametrize("case", ["response_id_field", "lifecycle_response", "lifecycle_without_id", "completed_other_id",
                                  "failed_other_id", "status_incomplete", "status_missing", "same_id_everywhere"])
def test_identity_and_status(case):
    base = [created("resp_1"), added(call_item("fc_1", "call_1", "read")), delta("fc_1", '{"path": "a.py"}')]
    final = [call_item("fc_1", "call_1", "read", '{"path": "a.py"}', "completed")]
    if case == "same_id_everywhere":
        events = base[:1] + [{"type": "response.in_progress", "response": {"id": "resp_1"}},
                             dict(base[1], response_id="resp_1")] + base[2:] + [completed(final, "resp_1")]
        decision, code, _ = feed(events)
        assert code is None and decision is not None, f"events naming the same response are accepted: got {code!r}"
        return
    events, want = {
        "response_id_field": (base + [dict(delta("fc_1", ""), response_id="resp_2")], "identity_mismatch"),
        "lifecycle_response": (base + [{"type": "response.in_progress", "response": {"id": "resp_2"}}], "identity_mismatch"),
        "lifecycle_without_id": (base + [{"type": "response.in_progress", "response": {"status": "in_progress"}}],
                                 "identity_mismatch"),
        "completed_other_id": (base + [completed(final, "resp_2")], "identity_mismatch"),
        "failed_other_id": (base + [{"type": "response.failed", "response": {"id": "resp_2", "status": "failed"}}], "identity_mismatch"),
        "status_incomplete": (base + [completed(final, "resp_1", status="incomplete")], "status"),
        "status_missing": (base + [{"type": "response.completed", "response": {"id": "resp_1", "output": final}}], "status"),
    }[case]
    expect_failure(events, want, case)


@pytest.mark.parametrize("case", ["failed", "failed_code_only", "incomplete", "error_top_level", "error_nested", "error_bare"])
def test_provider_failures(case):
    base = [created(), added(call_item("fc_1", "call_1", "read")), delta("fc_1", '{"path": "a.py"}')]
    event, code, said = {
        "failed": ({"type": "response.failed", "response": {"id": "resp_1", "status": "failed",
                                                            "error": {"code": "server_error", "message": "model crashed"}}}, "failed", "model crashed"),
        "failed_code_only": ({"type": "response.failed", "response": {"id": "resp_1", "status": "failed",
                                                                      "error": {"code": "server_error", "message": ""}}}, "failed", "server_error"),
        "incomplete": ({"type": "response.incomplete", "response": {"id": "resp_1", "status": "incomplete",
                                                                    "incomplete_details": {"reason": "max_output_tokens"}}}, "incomplete", "max_output_tokens"),
        "error_top_level": ({"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": None}, "error", "slow down"),
        "error_nested": ({"type": "error", "error": {"type": "server_error", "code": "server_error", "message": "upstream gone"}}, "error", "upstream gone"),
        "error_bare": ({"type": "error"}, "error", ""),
    }[case]
    asm = new()
    for e in base:
        assert asm.accept(e) is None, f"{e['type']} is progress"
    assert asm.pending, "a call is buffered before the failure"
    with pytest.raises(ResponseFailure) as info:
        asm.accept(event)
    assert info.value.code == code, f"{case}: code {info.value.code!r}, want {code!r}"
    assert said in info.value.detail and info.value.detail, (
        f"{case}: the failure's detail must carry what the provider said ({said!r} if it said anything): {info.value.detail!r}")
    assert not asm.pending, f"{case}: buffered calls must be discarded, still have {list(asm.pending)}"


def _preview_events(chars: int, split_at: int, kinds=("output_text", "refusal")) -> list[dict]:
    first, second = "a" * split_at, "b" * (chars - split_at)
    return [created(), text_delta(first, kinds[0]), text_delta(second, kinds[1])]


@pytest.mark.parametrize("chars, ok", [(64_000, True), (64_001, False)])
def test_preview_bounded(chars, ok):
    recorder = samples.Recorder()
    asm = new(recorder)
    events = _preview_events(chars, 40_000)  # text and refusal count against one bound together
    decision, code, _ = feed(events, asm)
    if ok:
        assert code is None, f"{chars} characters of preview is within the 64,000 bound: got failure {code!r}"
        assert recorder.reports == [("text", "a" * 40_000), ("refusal", "b" * (chars - 40_000))], (
            f"each delta is reported as (kind, delta): got {[(k, len(d)) for k, d in recorder.reports]} (kinds and lengths)")
    else:
        assert code == "preview_limit", f"{chars} characters is one past the 64,000 bound: got {code!r}"
        assert len(recorder.reports) == 1, "the delta that crosses the bound is not reported"
    # Every delta counts, however small.
    many = [created()] + [text_delta("x" * 100) for _ in range(chars // 100)] + [text_delta("x" * (chars % 100))]
    got = outcome(many)
    assert got == ("no decision" if ok else "failure preview_limit"), f"{chars} characters in 100-character deltas: {got}"
    # Characters, not bytes: é is two bytes of UTF-8, a character outside the BMP four (two UTF-16 units)
    for char in ("é", "\U0001F600"):
        wide = [created()] + [text_delta(char * 1000) for _ in range(chars // 1000)] + [text_delta(char * (chars % 1000))]
        got = outcome(wide)
        assert got == ("no decision" if ok else "failure preview_limit"), \
            f"{chars} characters {char!r} (each more than one byte): {got}; the bound counts characters"


@pytest.mark.parametrize("size, ok", [(16_000, True), (16_001, False)])
def test_argument_bounds(size, ok):
    body = '{"path": "' + "p" * (size - 12) + '"}'
    assert len(body) == size, "test setup"
    want = "a decision" if ok else "failure argument_limit"
    for how, events in {
        "in deltas": [created(), added(call_item("fc_1", "call_1", "read")), delta("fc_1", body[:9000]), delta("fc_1", body[9000:]),
                      completed([call_item("fc_1", "call_1", "read", body, "completed")])],
        "in the added item": [created(), added(call_item("fc_1", "call_1", "read", body)),
                              completed([call_item("fc_1", "call_1", "read", body, "completed")])],
    }.items():
        got = outcome(events)
        assert got == want, f"{size} characters of arguments {how}: got {got}, want {want}"
    # The bound is per call: two calls of the same size each stay within it.
    if ok:
        two = [created(), added(call_item("fc_1", "call_1", "read")), added(call_item("fc_2", "call_2", "read")),
               delta("fc_1", body), delta("fc_2", body),
               completed([call_item("fc_1", "call_1", "read", body, "completed"), call_item("fc_2", "call_2", "read", body, "completed")])]
        assert outcome(two) == "a decision", f"two calls of {size} characters each: got {outcome(two)}"


def test_argument_delta_needs_known_item():
    expect_failure([created(), delta("fc_9", '{"path": "a.py"}')], "unknown_item", "a delta for an item never added")
    expect_failure([created(), added(message_item()), delta("msg_1", "{}")], "unknown_item", "a delta for a message item")
    one = [created(), added(call_item("fc_1", "call_1", "read")), delta("fc_1", '{"path": ')]
    expect_failure(one + [delta("fc_9", '"a.py"}')], "unknown_item", "a delta for an unknown item while one call is pending")
    two = one + [added(call_item("fc_2", "call_2", "read")), delta("fc_2", '{"path": ')]
    expect_failure(two + [delta("fc_9", '"b.py"}')], "unknown_item", "a delta for an unknown item while two calls are pending")


def done(item_id: str, arguments: str) -> dict:
    return {"type": "response.function_call_arguments.done", "item_id": item_id, "output_index": 0, "arguments": arguments}


def item_done(item: dict) -> dict:
    return {"type": "response.output_item.done", "output_index": 0, "item": item}


@pytest.mark.parametrize("case", ["matches", "lost_fragment", "extra_fragment", "other_call_arguments", "no_fragment",
                                  "delta_after_done", "done_twice", "no_arguments", "arguments_not_text", "unknown_item",
                                  "item_done_differs",
                                  "item_done_other_call_id", "item_done_unknown"])
def test_done_arguments_match_stream(case):
    paris, lisbon = '{"path": "paris.py"}', '{"path": "lisbon.py"}'
    stream = [created(), added(call_item("fc_1", "call_1", "read")), delta("fc_1", '{"path": '), delta("fc_1", '"paris.py"}'),
              added(call_item("fc_2", "call_2", "read")), delta("fc_2", lisbon)]
    final = completed([call_item("fc_1", "call_1", "read", paris, "completed"), call_item("fc_2", "call_2", "read", lisbon, "completed")])
    if case == "matches":
        asm = new()
        finished = [item_done(call_item("fc_1", "call_1", "read", paris, "completed")),
                    item_done({k: v for k, v in call_item("fc_2", "call_2", "read", lisbon, "completed").items() if k != "arguments"})]
        for event in stream + [done("fc_1", paris), done("fc_2", lisbon), *finished]:
            assert asm.accept(event) is None, f"a done event or finished item stating exactly the fragments is progress: {event}"
        decision = asm.accept(final)
        assert decision is not None and [c.arguments for c in decision.tool_calls] == [{"path": "paris.py"}, {"path": "lisbon.py"}], \
            "after matching done events the response completes as streamed"
        return
    events, want = {
        # the final arguments are the authority, checked against the fragments: any difference fails
        "lost_fragment": ([*stream[:3], *stream[4:], done("fc_1", paris)], "call_mismatch"),
        "extra_fragment": (stream + [delta("fc_2", " ")] + [done("fc_2", lisbon)], "call_mismatch"),
        "other_call_arguments": (stream + [done("fc_1", lisbon)], "call_mismatch"),
        "no_fragment": ([created(), added(call_item("fc_1", "call_1", "read")), done("fc_1", paris)], "call_mismatch"),
        "delta_after_done": (stream + [done("fc_2", lisbon), delta("fc_2", "")], "call_mismatch"),
        "done_twice": (stream + [done("fc_2", lisbon), done("fc_2", lisbon)], "call_mismatch"),
        "no_arguments": (stream + [{"type": "response.function_call_arguments.done", "item_id": "fc_2", "output_index": 0}],
                         "malformed_event"),
        "arguments_not_text": (stream + [{**done("fc_2", lisbon), "arguments": {"path": "lisbon.py"}}], "malformed_event"),
        "unknown_item": (stream + [done("fc_9", paris)], "unknown_item"),
        # the finished item restates its call: the same call id, name and (when it says) arguments
        "item_done_differs": (stream + [done("fc_1", paris), item_done(call_item("fc_1", "call_1", "read", lisbon, "completed"))],
                              "call_mismatch"),
        "item_done_other_call_id": (stream + [item_done(call_item("fc_2", "call_9", "read", lisbon, "completed"))], "call_mismatch"),
        "item_done_unknown": (stream + [item_done(call_item("fc_9", "call_9", "read", lisbon, "completed"))], "unknown_item"),
    }[case]
    expect_failure(events + [final], want, case)
    decision, code, at = feed(events + [final])
    assert at < len(events), f"{case}: the mismatch fails at the done event or the fragment after it, not later (failed at {at})"


@pytest.mark.parametrize("count, ok", [(8, True), (9, False)])
def test_call_count_bounded(count, ok):
    events = [created(), added(message_item())]
    final = []
    for i in range(count):
        args = json.dumps({"path": f"f{i}.py"})
        events += [added(call_item(f"fc_{i}", f"call_{i}", "read")), delta(f"fc_{i}", args)]
        final.append(call_item(f"fc_{i}", f"call_{i}", "read", args, "completed"))
    events.append(completed(final))
    got = outcome(events)
    want = "a decision" if ok else "failure call_limit"
    assert got == want, f"{count} function calls (a message item beside them does not count): got {got}, want {want}"


def test_duplicate_item_rejected():
    events = [created(), added(call_item("fc_1", "call_1", "read")), delta("fc_1", '{"path": "a.py"}'),
              added(call_item("fc_1", "call_2", "read"))]
    expect_failure(events, "duplicate_item", "a function-call item id added twice")


@pytest.mark.parametrize("case", ["arguments_differ", "name_differs", "call_id_differs", "never_streamed", "omitted", "reordered",
                                  "done_differs", "finished_item_differs"])
def test_terminal_matches_stream(case):
    args = '{"path": "a.py"}'
    stream = [created(), added(call_item("fc_1", "call_1", "read")), delta("fc_1", args),
              added(call_item("fc_2", "call_2", "read")), delta("fc_2", '{"path": "b.py"}')]
    first = call_item("fc_1", "call_1", "read", args, "completed")
    second = call_item("fc_2", "call_2", "read", '{"path": "b.py"}', "completed")
    if case == "reordered":
        decision, code, _ = feed(stream + [completed([second, first])])
        assert code is None and decision is not None, f"the final output may list the calls in its own order: got {code!r}"
        assert [c.id for c in decision.tool_calls] == ["call_2", "call_1"], "calls in the final output's order"
        return
    output, want = {
        "arguments_differ": ([dict(first, arguments='{"path": "c.py"}'), second], "call_mismatch"),
        "name_differs": ([dict(first, name="edit"), second], "call_mismatch"),
        "call_id_differs": ([dict(first, call_id="call_9"), second], "call_mismatch"),
        "never_streamed": ([first, second, call_item("fc_3", "call_3", "read", args, "completed")], "call_not_streamed"),
        "omitted": ([second], "call_missing"),
        # the done event states other arguments than the fragments, while the output repeats the fragments
        "done_differs": ([first, second], "call_mismatch"),
        "finished_item_differs": ([first, second], "call_mismatch"),
    }[case]
    if case == "done_differs":
        stream = stream + [done("fc_1", '{"path": "c.py"}')]
    if case == "finished_item_differs":
        stream = stream + [item_done(dict(first, arguments='{"path": "c.py"}'))]
    expect_failure(stream + [completed(output)], want, case)


@pytest.mark.parametrize("case", ["empty", "repeated"])
def test_call_ids_unique(case):
    ids = {"empty": ("", ""), "repeated": ("call_1", "call_1")}[case]
    events = [created()]
    final = []
    for n, call_id in enumerate(ids, 1):
        args = json.dumps({"path": f"{n}.py"})
        events += [added(call_item(f"fc_{n}", call_id, "read")), delta(f"fc_{n}", args)]
        final.append(call_item(f"fc_{n}", call_id, "read", args, "completed"))
    if case == "empty":
        events, final = events[:3], final[:1]
    expect_failure(events + [completed(final)], "call_id", f"call ids {ids[: len(final)]}")


@pytest.mark.parametrize("case", ["not_json", "truncated", "array", "string", "missing_name", "extra_name", "null_value",
                                  "number_value", "unknown_tool", "empty_name_tool", "exact"])
def test_arguments_validated(case):
    edit = '{"path": "a.py", "old": "x", "new": "y"}'
    arguments, tool, want = {
        "not_json": ("{path: a.py}", "edit", "bad_arguments"),
        "truncated": ('{"path": "a.py", "old": "x", "new": "y"', "edit", "bad_arguments"),
        "array": ('["a.py", "x", "y"]', "edit", "bad_arguments"),
        "string": ('"a.py"', "edit", "bad_arguments"),
        "missing_name": ('{"path": "a.py", "old": "x"}', "edit", "bad_arguments"),
        "extra_name": ('{"path": "a.py", "old": "x", "new": "y", "mode": "w"}', "edit", "bad_arguments"),
        "null_value": ('{"path": "a.py", "old": "x", "new": null}', "edit", "bad_arguments"),
        "number_value": ('{"path": "a.py", "old": "x", "new": 5}', "edit", "bad_arguments"),
        "unknown_tool": (edit, "write", "unknown_tool"),
        "empty_name_tool": (edit, "", "unknown_tool"),
        "exact": (edit, "edit", None),
    }[case]
    events = one_call(arguments, tool)
    if want is None:
        decision, code, _ = feed(events)
        assert code is None and decision is not None, f"exactly the declared names, all strings: got failure {code!r}"
        assert decision.tool_calls[0].arguments == {"path": "a.py", "old": "x", "new": "y"}, "the parsed arguments"
        return
    expect_failure(events, want, f"{case}: arguments {arguments!r} for tool {tool!r}")


@pytest.mark.parametrize("case", ["reasoning", "web_search_call", "not_an_object", "audio_part", "part_not_an_object",
                                  "refusal_part", "text_and_refusal"])
def test_unsupported_items_rejected(case):
    text = {"type": "output_text", "text": "Done.", "annotations": []}
    refusal = {"type": "refusal", "refusal": "No."}
    output, want = {
        "reasoning": ([{"id": "rs_1", "type": "reasoning", "summary": []}, message_item(text)], "unsupported_item"),
        "web_search_call": ([message_item(text), {"id": "ws_1", "type": "web_search_call", "status": "completed"}], "unsupported_item"),
        "not_an_object": ([message_item(text), "function_call"], "unsupported_item"),
        "audio_part": ([message_item(text, {"type": "output_audio", "data": "UklGRg=="})], "unsupported_item"),
        "part_not_an_object": ([message_item("Done.")], "unsupported_item"),
        "refusal_part": ([message_item(refusal)], None),
        "text_and_refusal": ([message_item(text, refusal), message_item(dict(text, text=" Bye."), dict(refusal, refusal=" Sorry."))], None),
    }[case]
    events = [created(), completed(output)]
    if want:
        expect_failure(events, want, case)
        return
    decision, code, _ = feed(events)
    assert code is None and decision is not None, f"{case}: got failure {code!r}, want a decision"
    got = (decision.role, decision.content, decision.refusal, decision.tool_calls)
    want_msg = {"refusal_part": ("assistant", "", "No.", ()), "text_and_refusal": ("assistant", "Done. Bye.", "No. Sorry.", ())}[case]
    assert got == want_msg, f"{case}: (role, content, refusal, tool_calls) got {got}, want {want_msg}"


@pytest.mark.parametrize("case", ["not_an_object", "no_type", "type_not_string", "delta_not_string", "item_not_object",
                                  "output_not_list", "content_not_list", "call_field_not_string", "progress_events"])
def test_malformed_events(case):
    start = [created()]
    if case == "progress_events":
        # Progress of any kind, known or not yet known, changes nothing.
        progress = [{"type": t, "item_id": "x"} for t in (
            "response.in_progress", "response.queued", "response.output_item.done", "response.content_part.added",
            "response.content_part.done", "response.output_text.done", "response.refusal.done",
            "response.output_text.annotation.added", "response.future_event")]
        progress.append(added({"id": "rs_1", "type": "reasoning"}))
        got = outcome(start + progress)
        assert got == "no decision", f"progress events must be accepted as progress: {got}"
        return
    event = {
        "not_an_object": ["response.output_text.delta"],
        "no_type": {"delta": "hi"},
        "type_not_string": {"type": 7},
        "delta_not_string": {"type": "response.output_text.delta", "delta": None},
        "item_not_object": {"type": "response.output_item.added", "item": "function_call"},
        "output_not_list": completed(None),
        "content_not_list": completed([{"id": "msg_1", "type": "message", "role": "assistant", "content": "Done."}]),
        "call_field_not_string": added(call_item("fc_1", "call_1", "read", arguments=None)),
    }[case]
    expect_failure(start + [copy.deepcopy(event)], "malformed_event", case)
