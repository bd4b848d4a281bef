"""Catalog: the bounded tool loop (agent/contract/loop.py)."""

import json

import pytest

import ag00_generated as generated
import ag00_samples as samples
from agent.contract import loop, orders

RECEIPT_O1 = {"order_id": "o-1", "status": "delivered", "source": "read_order"}


def _run(*replies, max_turns=3, max_calls=2, principal=None):
    script = samples.Script(*replies)
    principal = principal or orders.Principal(tenant="shop-a", user="u-1")
    given = samples.base_request()
    outcome = loop.run_loop(given, script, principal, max_turns=max_turns, max_calls=max_calls)
    assert given == samples.base_request(), f"run_loop changed the request it was given: it is now {given!r}"
    return outcome, script


def _summary(outcome, script):
    return {"status": outcome.status, "calls": outcome.calls,
            "results": [r.get("call_id") for r in outcome.results], "model_calls": len(script.requests)}


def test_normal_round_trip():
    outcome, script = _run(samples.sample("tool_call_o1"), samples.sample("answer_o1"))
    got = _summary(outcome, script)
    want = {"status": "answer_ready", "calls": 1, "results": ["call_o1"], "model_calls": 2}
    assert got == want, f"o-1, then the matching answer: got {got!r}, want {want!r}"
    assert outcome.answer == RECEIPT_O1, f"outcome.answer: got {outcome.answer!r}, want the parsed answer {RECEIPT_O1!r}"
    kinds = [(s.turn, s.kind, list(s.executed)) for s in outcome.steps]
    want_kinds = [(1, "tool_requests", ["call_o1"]), (2, "text", [])]
    assert kinds == want_kinds, f"steps (turn, kind, executed): got {kinds!r}, want {want_kinds!r}"
    first = script.requests[0]
    assert first == samples.base_request(), f"the first request must be the one given: got {first!r}"


def test_result_echoes_call_id():
    outcome, _ = _run(samples.tool_call("call_Zx9"), samples.sample("answer_o1"))
    want = [{"type": "function_call_output", "call_id": "call_Zx9", "output": json.dumps(RECEIPT_O1, sort_keys=True)}]
    assert outcome.results == want, f"results: got {outcome.results!r}, want {want!r} (call_id copied, not the item id fc_...)"
    got = loop.function_call_output("call_q", {"b": 1, "a": "x"})
    want_item = {"type": "function_call_output", "call_id": "call_q", "output": '{"a": "x", "b": 1}'}
    assert got == want_item, f"function_call_output('call_q', ...): got {got!r}, want {want_item!r}"


def _preamble_reply():
    reply = samples.sample("tool_call_preamble")
    reply["body"]["output"].insert(0, samples.body("tool_call_o1")["output"][0])  # a reasoning item first
    return reply


def _result(call_id):
    return {"type": "function_call_output", "call_id": call_id, "output": json.dumps(RECEIPT_O1, sort_keys=True)}


@pytest.mark.parametrize("case", ["reasoning-preamble-call", "two-calls", "second-turn"])
def test_next_input_keeps_output_items(case):
    if case == "second-turn":
        first, second = samples.tool_call("call_t1"), _preamble_reply()
        replies = [first, second, samples.sample("answer_o1")]
        want_tail = first["body"]["output"] + [_result("call_t1")] + second["body"]["output"] + [_result("call_pre")]
    else:
        reply = _preamble_reply() if case == "reasoning-preamble-call" else samples.sample("two_calls")
        replies = [reply, samples.sample("answer_o1")]
        want_tail = reply["body"]["output"] + [_result(c["call_id"]) for c in reply["body"]["output"] if c.get("type") == "function_call"]
    outcome, script = _run(*replies, max_calls=2 if case == "two-calls" else 3)  # two-calls spends the whole budget
    assert len(script.requests) == len(replies), f"model calls: got {len(script.requests)}, want {len(replies)}"
    last = script.requests[-1]
    original = samples.base_request()
    want_input = original["input"] + want_tail
    assert last["input"] == want_input, (
        f"{case}: the last input must be the first input, then each turn's output items unchanged "
        "(reasoning, preamble message, function_call), each followed by that turn's function_call_output items:\n"
        f"got types  {[i.get('type', i.get('role')) for i in last['input']]!r}\n"
        f"want types {[i.get('type', i.get('role')) for i in want_input]!r}\n"
        f"got  {last['input']!r}\nwant {want_input!r}"
    )
    rest = {k: v for k, v in last.items() if k != "input"}
    want_rest = {k: v for k, v in original.items() if k != "input"}
    assert rest == want_rest, f"{case}: the last request besides input: got {rest!r}, want {want_rest!r} (model, tools, budget kept)"
    assert script.requests[0] == original, f"{case}: the first request sent differs from the request given"


@pytest.mark.parametrize(
    "case, replies, want",
    [
        pytest.param("status no receipt supports", ["tool_call_o1", "answer_o1_wrong_status"], "unverified_answer", id="wrong-status"),
        pytest.param("prose answer", ["tool_call_o1", "answer_prose"], "unverified_answer", id="prose"),
        pytest.param("answer with no tool call at all", ["answer_o1"], "unverified_answer", id="no-receipt"),
        pytest.param("matching answer", ["tool_call_o1", "answer_o1"], "answer_ready", id="match"),
    ],
)
def test_answer_must_match_receipt(case, replies, want):
    outcome, _ = _run(*[samples.sample(r) for r in replies])
    assert outcome.status == want, f"{case}: got status {outcome.status!r}, want {want!r}"
    extra_key = samples.sample("answer_o1")
    extra_key["body"]["output"][0]["content"][0]["text"] = json.dumps({**RECEIPT_O1, "note": "verified"})
    outcome, _ = _run(samples.sample("tool_call_o1"), extra_key)
    assert outcome.status == "unverified_answer", (
        f"an answer with a key the receipt lacks: got {outcome.status!r}, want 'unverified_answer' (exact match only)"
    )


@pytest.mark.parametrize(
    "case, answer",
    [pytest.param(case, answer, id=case) for case, answer in [
        ("a key missing", {"order_id": "o-1", "status": "delivered"}),
        ("only the order id", {"order_id": "o-1"}),
        ("status in another case", {**RECEIPT_O1, "status": "Delivered"}),
        ("order id in another case", {**RECEIPT_O1, "order_id": "O-1"}),
        ("status with a trailing blank", {**RECEIPT_O1, "status": "delivered "}),
        ("the receipt inside a list", [RECEIPT_O1]),
        ("the receipt inside an object", {"answer": RECEIPT_O1}),
        ("the receipt as a JSON string", json.dumps(RECEIPT_O1)),
        ("an empty object", {}),
        ("null", None),
    ]],
)
def test_near_miss_answers_unverified(case, answer):
    text = json.dumps(answer)
    outcome, _ = _run(samples.sample("tool_call_o1"), samples.answer(text))
    got = (outcome.status, outcome.answer)
    want = ("unverified_answer", answer)
    assert got == want, f"answer text {text!r} ({case}) after reading o-1: got (status, answer) {got!r}, want {want!r}"


@pytest.mark.parametrize(
    "case, text",
    [pytest.param(case, text, id=case) for case, text in [
        ("in a markdown code fence", "```json\n" + json.dumps(RECEIPT_O1) + "\n```"),
        ("a sentence before it", "Here it is: " + json.dumps(RECEIPT_O1)),
        ("a sentence after it", json.dumps(RECEIPT_O1) + " Anything else?"),
        ("two copies", json.dumps(RECEIPT_O1) + json.dumps(RECEIPT_O1)),
        ("in single quotes", str(RECEIPT_O1)),
    ]],
)
def test_answer_text_must_be_json(case, text):
    outcome, _ = _run(samples.sample("tool_call_o1"), samples.answer(text))
    got = (outcome.status, outcome.answer)
    assert got == ("unverified_answer", None), (
        f"answer text {text!r} ({case}): got (status, answer) {got!r}, want ('unverified_answer', None); "
        "the whole text must be JSON: nothing is dug out of prose or code fences"
    )


@pytest.mark.parametrize(
    "case, text",
    [pytest.param(case, text, id=case) for case, text in [
        ("keys in another order", '{"status": "delivered", "source": "read_order", "order_id": "o-1"}'),
        ("no spaces", '{"order_id":"o-1","status":"delivered","source":"read_order"}'),
        ("pretty-printed", json.dumps(RECEIPT_O1, indent=2)),
        ("blank lines around it", "\n  " + json.dumps(RECEIPT_O1) + "\n"),
        ("escaped characters", '{"order_id": "o\\u002d1", "status": "delivered", "source": "read_order"}'),
    ]],
)
def test_answer_compared_as_json(case, text):
    outcome, _ = _run(samples.sample("tool_call_o1"), samples.answer(text))
    got = (outcome.status, outcome.answer)
    want = ("answer_ready", RECEIPT_O1)
    assert got == want, (
        f"answer text {text!r} ({case}): got (status, answer) {got!r}, want {want!r}; "
        "equal JSON written differently is the same answer: compare parsed values, not text"
    )


def test_answer_prose_kept_as_none():
    outcome, _ = _run(samples.sample("tool_call_o1"), samples.sample("answer_prose"))
    got = (outcome.status, outcome.answer)
    assert got == ("unverified_answer", None), f"a prose answer: got (status, answer) {got!r}, want ('unverified_answer', None)"
    for text in ("", "   "):
        outcome, _ = _run(samples.sample("tool_call_o1"), samples.answer(text))
        got = (outcome.status, outcome.answer)
        assert got == ("unverified_answer", None), f"an answer text {text!r}: got (status, answer) {got!r}, want ('unverified_answer', None) (still a text reply)"


def test_runs_are_independent():
    first, _ = _run(samples.sample("tool_call_o1"), samples.sample("answer_o1"))
    assert first.status == "answer_ready", f"first run (read o-1, answer): got {first.status!r}, want 'answer_ready'"
    second, _ = _run(samples.sample("answer_o1"))
    assert second.status == "unverified_answer", (
        f"a second run that answers without reading: got {second.status!r}, want 'unverified_answer' "
        "(receipts of an earlier run do not count)"
    )
    third, script = _run(samples.sample("tool_call_o1"), samples.sample("answer_o1"))
    got = _summary(third, script)
    want = {"status": "answer_ready", "calls": 1, "results": ["call_o1"], "model_calls": 2}
    assert got == want, f"a third run reusing call_o1: got {got!r}, want {want!r} (call_ids of an earlier run do not count)"


def _edit_everything(body):
    """What a model double may do to a body it was handed, which is its own: edit it at every depth."""
    body["input"].append({"role": "user", "content": "added by the model"})
    for item in body["input"]:
        if isinstance(item, dict):
            item["edited_by_the_model"] = True
    for tool in body["tools"]:
        tool["name"] = "edited_by_the_model"
        tool["parameters"]["edited_by_the_model"] = True
    body["tools"].append({"type": "function", "name": "added_by_the_model"})


@pytest.mark.parametrize("case", ["call-then-answer", "two-turns-of-calls", "a model that edits what it was sent"])
def test_sent_requests_are_snapshots(case):
    kept = []
    edits = case.startswith("a model that edits")
    if case == "call-then-answer":
        replies = [samples.sample("tool_call_o1"), samples.sample("answer_o1")]
    else:
        replies = [samples.tool_call("call_s1"), samples.tool_call("call_s2"), samples.sample("answer_o1")]

    def send(body):
        received = json.dumps(body, sort_keys=True)
        assert "by_the_model" not in received and "by the model" not in received, (
            f"{case}: the request of turn {len(kept) + 1} holds what the model did to an earlier body: {received}\n"
            "each body must share nothing with the request given to run_loop, the conversation or another body"
        )
        if edits:
            _edit_everything(body)
        kept.append((body, json.dumps(body, sort_keys=True)))  # the body object itself, and what it was at send time
        chosen = replies[len(kept) - 1]
        return loop.Reply(chosen["http_status"], chosen["body"])

    given = samples.base_request()
    outcome = loop.run_loop(given, send, orders.Principal(tenant="shop-a", user="u-1"))
    assert outcome.status == "answer_ready", f"{case}: got {outcome.status!r}, want 'answer_ready'"
    for turn, (body, at_send) in enumerate(kept, start=1):
        now = json.dumps(body, sort_keys=True)
        assert now == at_send, (
            f"{case}: the request sent on turn {turn} changed after it was sent:\nat send {at_send}\nnow     {now}\n"
            "send a fresh copy of the conversation each turn"
        )
    assert given == samples.base_request(), f"{case}: run_loop changed the request it was given: it is now {given!r}"


@pytest.mark.parametrize(
    "case, name, arguments, reason",
    [
        pytest.param("a call to update_order", "update_order", {"order_id": "o-1"}, "unknown_tool", id="unknown-tool"),
        pytest.param("a call with a tenant in its arguments", "read_order", {"order_id": "o-1", "tenant": "shop-a"}, "invalid_arguments",
                     id="identity-field"),
        pytest.param("a call for an unknown order", "read_order", {"order_id": "o-404"}, "permission_denied", id="unknown-order"),
        pytest.param("a call whose arguments are not JSON", "read_order", "{order_id: o-1", "invalid_arguments", id="arguments-not-json"),
    ],
)
def test_loop_stops_on_each_denial(case, name, arguments, reason):
    reply = samples.tool_call("call_d")
    reply["body"]["output"][-1].update(name=name, arguments=arguments if isinstance(arguments, str) else json.dumps(arguments))
    outcome, script = _run(reply, samples.sample("answer_o1"))
    got = _summary(outcome, script)
    want = {"status": reason, "calls": 1, "results": [], "model_calls": 1}
    assert got == want, f"{case}: got {got!r}, want {want!r} (the denial reason is the run's status)"
    assert outcome.denial == {"error": reason}, f"{case}: outcome.denial got {outcome.denial!r}, want {{'error': {reason!r}}}"


def test_loop_uses_given_principal():
    owner_b = orders.Principal(tenant="shop-b", user="u-2")
    receipt_o2 = {"order_id": "o-2", "status": "processing", "source": "read_order"}
    outcome, script = _run(samples.tool_call("call_b", "o-2"), samples.answer(json.dumps(receipt_o2)), principal=owner_b)
    got = _summary(outcome, script)
    want = {"status": "answer_ready", "calls": 1, "results": ["call_b"], "model_calls": 2}
    assert got == want, f"shop-b/u-2 reads its own o-2: got {got!r}, want {want!r} (the principal passed in decides)"
    stranger = orders.Principal(tenant="shop-a", user="u-7")
    outcome, script = _run(samples.tool_call("call_s", "o-1"), samples.sample("answer_o1"), principal=stranger)
    got = _summary(outcome, script)
    want = {"status": "permission_denied", "calls": 1, "results": [], "model_calls": 1}
    assert got == want, f"shop-a/u-7 asks for o-1 of u-1: got {got!r}, want {want!r}"


def test_denied_call_stops_batch():
    outcome, script = _run(samples.batch(("call_bad", "o-2"), ("call_good", "o-1")), samples.sample("answer_o1"))
    got = _summary(outcome, script)
    want = {"status": "permission_denied", "calls": 1, "results": [], "model_calls": 1}
    assert got == want, f"a batch of o-2 (foreign) then o-1: got {got!r}, want {want!r} (stop at the denial; o-1 never runs)"
    executed = [list(s.executed) for s in outcome.steps]
    assert executed == [[]], f"steps' executed call_ids: got {executed!r}, want [[]] (a denied call did not run)"
    outcome, script = _run(samples.batch(("call_good", "o-1"), ("call_bad", "o-3")), samples.sample("answer_o1"))
    got = _summary(outcome, script)
    want = {"status": "permission_denied", "calls": 2, "results": ["call_good"], "model_calls": 1}
    assert got == want, f"a batch of o-1 then o-3 (another customer): got {got!r}, want {want!r}"
    assert outcome.denial == {"error": "permission_denied"}, f"outcome.denial: got {outcome.denial!r}, want {{'error': 'permission_denied'}}"


def test_cross_tenant_stops_loop():
    outcome, script = _run(samples.sample("tool_call_o2_cross_tenant"), samples.sample("answer_o1"))
    got = _summary(outcome, script)
    want = {"status": "permission_denied", "calls": 1, "results": [], "model_calls": 1}
    assert got == want, f"the model asks for o-2 of shop-b: got {got!r}, want {want!r}"
    assert outcome.denial == {"error": "permission_denied"}, f"outcome.denial: got {outcome.denial!r}, want {{'error': 'permission_denied'}}"
    steps = [(s.turn, s.kind, list(s.executed)) for s in outcome.steps]
    assert steps == [(1, "tool_requests", [])], f"steps (turn, kind, executed): got {steps!r}, want [(1, 'tool_requests', [])]"


def test_budget_exhausted_after_allowed_calls():
    replies = [samples.tool_call(f"call_{n}") for n in range(1, 5)]
    outcome, script = _run(*replies, max_turns=6, max_calls=2)
    got = _summary(outcome, script)
    want = {"status": "budget_exhausted", "calls": 2, "results": ["call_1", "call_2"], "model_calls": 3}
    assert got == want, f"a model that asks again and again, max_calls=2: got {got!r}, want {want!r}"
    outcome, script = _run(samples.tool_call("call_1"), samples.sample("answer_o1"), max_calls=0)
    got = _summary(outcome, script)
    want = {"status": "budget_exhausted", "calls": 0, "results": [], "model_calls": 1}
    assert got == want, f"max_calls=0 and one call asked for: got {got!r}, want {want!r} (0 allows no call; it is not 'no limit')"
    outcome, script = _run(samples.tool_call("call_1"), samples.tool_call("call_2"), samples.sample("answer_o1"),
                           max_turns=6, max_calls=2)
    got = _summary(outcome, script)
    want = {"status": "answer_ready", "calls": 2, "results": ["call_1", "call_2"], "model_calls": 3}
    assert got == want, f"exactly max_calls=2 calls, then the answer: got {got!r}, want {want!r} (the second call is allowed)"


@pytest.mark.parametrize(
    "case, replies, max_calls, want",
    [
        pytest.param("a batch of 2 with max_calls=1 (none of the batch runs)", ["two_calls"], 1,
                     {"status": "budget_exhausted", "calls": 0, "results": [], "model_calls": 1}, id="2-over-1"),
        pytest.param("1 call, then a batch of 2 with max_calls=2", ["call_first", "two_calls"], 2,
                     {"status": "budget_exhausted", "calls": 1, "results": ["call_first"], "model_calls": 2}, id="1-then-2-over-2"),
        pytest.param("a batch of 2 with max_calls=2 (a batch that fits runs whole)", ["two_calls", "answer_o1"], 2,
                     {"status": "answer_ready", "calls": 2, "results": ["call_batch_a", "call_batch_b"], "model_calls": 2}, id="2-fits-2"),
    ],
)
def test_oversized_batch_executes_nothing(case, replies, max_calls, want):
    chosen = [samples.tool_call(r) if r.startswith("call_") else samples.sample(r) for r in replies]
    outcome, script = _run(*chosen, max_calls=max_calls)
    got = _summary(outcome, script)
    assert got == want, f"{case}: got {got!r}, want {want!r}"


@pytest.mark.parametrize(
    "case, replies, max_calls, want",
    [
        pytest.param("two calls sharing call_dup in one batch (nothing runs)", ["duplicate_call_ids", "answer_o1"], 2,
                     {"status": "duplicate_call_id", "calls": 0, "results": [], "model_calls": 1}, id="pair-in-batch"),
        pytest.param("a batch call_x, call_y, call_x", [[("call_x", "o-1"), ("call_y", "o-1"), ("call_x", "o-1")]], 5,
                     {"status": "duplicate_call_id", "calls": 0, "results": [], "model_calls": 1}, id="x-y-x-in-batch"),
        pytest.param("two calls sharing call_dup with max_calls=1 (ids are checked before the budget)", ["duplicate_call_ids"], 1,
                     {"status": "duplicate_call_id", "calls": 0, "results": [], "model_calls": 1}, id="before-budget"),
        pytest.param("call_a and call_A in one batch are two ids (compared exactly)", [[("call_a", "o-1"), ("call_A", "o-1")], "answer_o1"], 5,
                     {"status": "answer_ready", "calls": 2, "results": ["call_a", "call_A"], "model_calls": 2}, id="ids-differ-in-case"),
        pytest.param("turn 2 reuses turn 1's call_same", ["call_same", "call_same", "answer_o1"], 5,
                     {"status": "duplicate_call_id", "calls": 1, "results": ["call_same"], "model_calls": 2}, id="next-turn"),
        pytest.param("turn 3 reuses turn 1's call_one", ["call_one", "call_two", "call_one"], 5,
                     {"status": "duplicate_call_id", "calls": 2, "results": ["call_one", "call_two"], "model_calls": 3}, id="two-turns-later"),
    ],
)
def test_duplicate_call_id_rejected(case, replies, max_calls, want):
    chosen = [samples.batch(*r) if isinstance(r, list) else samples.tool_call(r) if r.startswith("call_") else samples.sample(r)
              for r in replies]
    outcome, script = _run(*chosen, max_calls=max_calls)
    got = _summary(outcome, script)
    assert got == want, f"{case}: got {got!r}, want {want!r}"


def test_turn_limit():
    replies = [samples.tool_call(f"call_{n}") for n in range(1, 5)]
    outcome, script = _run(*replies, max_turns=2, max_calls=10)
    got = _summary(outcome, script)
    want = {"status": "turn_limit", "calls": 2, "results": ["call_1", "call_2"], "model_calls": 2}
    assert got == want, f"tool calls every turn, max_turns=2: got {got!r}, want {want!r}"
    last = outcome.verdict
    got_last = (getattr(getattr(last, "kind", None), "value", None), [c.get("call_id") for c in getattr(last, "calls", ())])
    assert got_last == ("tool_requests", ["call_2"]), (
        f"outcome.verdict after turn_limit: got (kind, call_ids) {got_last!r}, want ('tool_requests', ['call_2']) (the last classification)"
    )
    outcome, script = _run(*replies, max_turns=2, max_calls=2)
    got = _summary(outcome, script)
    want = {"status": "turn_limit", "calls": 2, "results": ["call_1", "call_2"], "model_calls": 2}
    assert got == want, f"tool calls every turn, max_turns=2 and max_calls=2 (both used up): got {got!r}, want {want!r} (no call was refused)"
    outcome, script = _run(samples.sample("answer_o1"), max_turns=0)
    got = _summary(outcome, script)
    want = {"status": "turn_limit", "calls": 0, "results": [], "model_calls": 0}
    assert got == want, f"max_turns=0: got {got!r}, want {want!r} (no model call at all)"
    assert outcome.verdict is None, f"max_turns=0: outcome.verdict got {outcome.verdict!r}, want None (nothing was classified)"
    outcome, script = _run(samples.tool_call("call_1"), samples.tool_call("call_2"), samples.sample("answer_o1"),
                           max_turns=3, max_calls=10)
    got = _summary(outcome, script)
    want = {"status": "answer_ready", "calls": 2, "results": ["call_1", "call_2"], "model_calls": 3}
    assert got == want, f"the answer on the last allowed turn (3 of 3): got {got!r}, want {want!r}"


ANY = "(any)"


def _terminal_sample(name):
    """An authored sample, or one derived from it: another status code, or details sent as null."""
    if name == "http_408":
        chosen = samples.sample("http_429")
        chosen["http_status"] = 408
    elif name == "http_201":
        chosen = samples.sample("answer_o1")
        chosen["http_status"] = 201
    elif name == "incomplete_null_details":
        chosen = samples.sample("incomplete_max_tokens")
        chosen["body"]["incomplete_details"] = None
    else:
        chosen = samples.sample(name)
    return chosen


@pytest.mark.parametrize(
    "name, want_status, want_reason, want_retryable",
    [
        ("refusal", "refused", "I can't help with that request.", False),
        ("incomplete_max_tokens", "incomplete", "max_output_tokens", False),
        ("incomplete_content_filter", "incomplete", "content_filter", False),
        ("failed", "failed", "server_error", False),
        ("cancelled", "cancelled", ANY, False),
        ("empty_output", "empty", ANY, False),
        ("unsupported_item", "unsupported", ANY, False),
        ("invalid_tool_call", "invalid_tool_call", ANY, False),
        ("http_429", "http_error", "rate_limit_exceeded", True),
        ("http_500", "http_error", "server_error", True),
        ("http_401", "http_error", "invalid_api_key", False),
        ("http_408", "http_error", "rate_limit_exceeded", True),
        ("http_201", "http_error", ANY, False),
        ("incomplete_null_details", "incomplete", None, False),
    ],
)
def test_loop_stops_on_terminal_kinds(name, want_status, want_reason, want_retryable):
    outcome, script = _run(_terminal_sample(name), samples.sample("answer_o1"))
    got = _summary(outcome, script)
    want = {"status": want_status, "calls": 0, "results": [], "model_calls": 1}
    assert got == want, f"{name}: got {got!r}, want {want!r} (stop at once, nothing executed, no retry here)"
    steps = [(s.turn, s.kind, list(s.executed)) for s in outcome.steps]
    assert steps == [(1, want_status, [])], f"{name}: steps (turn, kind, executed): got {steps!r}, want [(1, {want_status!r}, [])]"
    verdict = outcome.verdict
    assert verdict is not None, f"{name}: outcome.verdict is None, want the classification of the reply"
    assert verdict.retryable is want_retryable, f"{name}: outcome.verdict.retryable: got {verdict.retryable!r}, want {want_retryable!r}"
    if want_reason is not ANY:
        assert verdict.reason == want_reason, f"{name}: outcome.verdict.reason: got {verdict.reason!r}, want {want_reason!r}"


def test_loop_defaults():
    script = samples.Script(*[samples.tool_call(f"call_{n}") for n in range(1, 5)])
    outcome = loop.run_loop(samples.base_request(), script)
    got = _summary(outcome, script)
    want = {"status": "budget_exhausted", "calls": 2, "results": ["call_1", "call_2"], "model_calls": 3}
    assert got == want, f"run_loop(request, send) with its defaults (max_turns=3, max_calls=2): got {got!r}, want {want!r}"
    script = samples.Script(samples.tool_call("call_1"), samples.sample("answer_o1"))
    outcome = loop.run_loop(samples.base_request(), script)
    got = _summary(outcome, script)
    want = {"status": "answer_ready", "calls": 1, "results": ["call_1"], "model_calls": 2}
    assert got == want, f"run_loop(request, send) reading o-1 as the default principal shop-a/u-1: got {got!r}, want {want!r}"
    script = samples.Script(samples.tool_call("call_1"), samples.tool_call("call_2"), samples.tool_call("call_3"))
    outcome = loop.run_loop(samples.base_request(), script, max_calls=9)
    got = _summary(outcome, script)
    want = {"status": "turn_limit", "calls": 3, "results": ["call_1", "call_2", "call_3"], "model_calls": 3}
    assert got == want, f"run_loop with max_calls=9 and the default max_turns=3: got {got!r}, want {want!r}"


def test_generated_near_receipts_unverified():
    wrong = []
    for answer in generated.receipt_near_misses(3, 40):
        outcome, _ = _run(samples.sample("tool_call_o1"), samples.answer(json.dumps(answer)))
        if (outcome.status, outcome.answer) != ("unverified_answer", answer):
            wrong.append(f"answer {json.dumps(answer)}: got (status, answer) {(outcome.status, outcome.answer)!r}")
    assert not wrong, (f"after reading o-1, {len(wrong)} answers that are close to the receipt but not equal to it "
                       "were not unverified_answer (with the parsed answer kept):\n" + "\n".join(wrong[:8]))


def test_generated_receipt_rewritings_accepted():
    wrong = []
    for text in generated.receipt_texts(5, 40):
        outcome, _ = _run(samples.sample("tool_call_o1"), samples.answer(text))
        if (outcome.status, outcome.answer) != ("answer_ready", RECEIPT_O1):
            wrong.append(f"answer text {text!r}: got (status, answer) {(outcome.status, outcome.answer)!r}")
    assert not wrong, (f"{len(wrong)} ways of writing the o-1 receipt as JSON were not answer_ready "
                       "(compare parsed values, not text):\n" + "\n".join(wrong[:8]))
