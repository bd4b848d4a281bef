"""Catalog: the bounded tool loop (agent/contract/loop.py)."""

import json

import pytest

import ag00_samples as samples
from agent.contract import loop, orders

RECEIPT_O1 = {"order_id": "o-1", "status": "delivered", "source": "read_order"}


def _run(*replies, max_turns=3, max_calls=2):
    script = samples.Script(*replies)
    principal = orders.Principal(tenant="shop-a", user="u-1")
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


def test_next_input_keeps_output_items():
    reply = samples.sample("tool_call_preamble")
    reply["body"]["output"].insert(0, samples.body("tool_call_o1")["output"][0])  # a reasoning item first
    outcome, script = _run(reply, samples.sample("answer_o1"))
    assert len(script.requests) == 2, f"model calls: got {len(script.requests)}, want 2"
    second = script.requests[1]
    original = samples.base_request()
    result = {"type": "function_call_output", "call_id": "call_pre", "output": json.dumps(RECEIPT_O1, sort_keys=True)}
    want_input = original["input"] + reply["body"]["output"] + [result]
    assert second["input"] == want_input, (
        "turn 2 input must be the turn 1 input, then every output item of turn 1 unchanged "
        "(reasoning, preamble message, function_call), then the function_call_output items:\n"
        f"got types  {[i.get('type', i.get('role')) for i in second['input']]!r}\n"
        f"want types {[i.get('type', i.get('role')) for i in want_input]!r}\n"
        f"got  {second['input']!r}\nwant {want_input!r}"
    )
    rest = {k: v for k, v in second.items() if k != "input"}
    want_rest = {k: v for k, v in original.items() if k != "input"}
    assert rest == want_rest, f"turn 2 request besides input: got {rest!r}, want {want_rest!r} (model, tools, budget kept)"
    assert script.requests[0] == original, "the loop changed the request it was given (the first request sent differs)"


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


def test_cross_tenant_stops_loop():
    outcome, script = _run(samples.sample("tool_call_o2_cross_tenant"), samples.sample("answer_o1"))
    got = _summary(outcome, script)
    want = {"status": "permission_denied", "calls": 1, "results": [], "model_calls": 1}
    assert got == want, f"the model asks for o-2 of shop-b: got {got!r}, want {want!r}"
    assert outcome.denial == {"error": "permission_denied"}, f"outcome.denial: got {outcome.denial!r}, want {{'error': 'permission_denied'}}"


def test_budget_exhausted_after_allowed_calls():
    replies = [samples.tool_call(f"call_{n}") for n in range(1, 5)]
    outcome, script = _run(*replies, max_turns=6, max_calls=2)
    got = _summary(outcome, script)
    want = {"status": "budget_exhausted", "calls": 2, "results": ["call_1", "call_2"], "model_calls": 3}
    assert got == want, f"a model that asks again and again, max_calls=2: got {got!r}, want {want!r}"
    outcome, script = _run(samples.tool_call("call_1"), samples.tool_call("call_2"), samples.sample("answer_o1"),
                           max_turns=6, max_calls=2)
    got = _summary(outcome, script)
    want = {"status": "answer_ready", "calls": 2, "results": ["call_1", "call_2"], "model_calls": 3}
    assert got == want, f"exactly max_calls=2 calls, then the answer: got {got!r}, want {want!r} (the second call is allowed)"


def test_oversized_batch_executes_nothing():
    outcome, script = _run(samples.sample("two_calls"), max_calls=1)
    got = _summary(outcome, script)
    want = {"status": "budget_exhausted", "calls": 0, "results": [], "model_calls": 1}
    assert got == want, f"a batch of 2 with max_calls=1: got {got!r}, want {want!r} (none of the batch runs)"
    outcome, script = _run(samples.tool_call("call_first"), samples.sample("two_calls"), max_calls=2)
    got = _summary(outcome, script)
    want = {"status": "budget_exhausted", "calls": 1, "results": ["call_first"], "model_calls": 2}
    assert got == want, f"1 call, then a batch of 2 with max_calls=2: got {got!r}, want {want!r}"
    outcome, script = _run(samples.sample("two_calls"), samples.sample("answer_o1"), max_calls=2)
    got = _summary(outcome, script)
    want = {"status": "answer_ready", "calls": 2, "results": ["call_batch_a", "call_batch_b"], "model_calls": 2}
    assert got == want, f"a batch of 2 with max_calls=2: got {got!r}, want {want!r} (a batch that fits runs whole)"


def test_duplicate_call_id_rejected():
    outcome, script = _run(samples.sample("duplicate_call_ids"), samples.sample("answer_o1"))
    got = _summary(outcome, script)
    want = {"status": "duplicate_call_id", "calls": 0, "results": [], "model_calls": 1}
    assert got == want, f"two calls sharing call_dup in one batch: got {got!r}, want {want!r} (nothing runs)"
    outcome, script = _run(samples.tool_call("call_same"), samples.tool_call("call_same"), samples.sample("answer_o1"),
                           max_calls=5)
    got = _summary(outcome, script)
    want = {"status": "duplicate_call_id", "calls": 1, "results": ["call_same"], "model_calls": 2}
    assert got == want, f"turn 2 reuses turn 1's call_same: got {got!r}, want {want!r}"


def test_turn_limit():
    replies = [samples.tool_call(f"call_{n}") for n in range(1, 5)]
    outcome, script = _run(*replies, max_turns=2, max_calls=10)
    got = _summary(outcome, script)
    want = {"status": "turn_limit", "calls": 2, "results": ["call_1", "call_2"], "model_calls": 2}
    assert got == want, f"tool calls every turn, max_turns=2: got {got!r}, want {want!r}"
    outcome, script = _run(samples.tool_call("call_1"), samples.tool_call("call_2"), samples.sample("answer_o1"),
                           max_turns=3, max_calls=10)
    got = _summary(outcome, script)
    want = {"status": "answer_ready", "calls": 2, "results": ["call_1", "call_2"], "model_calls": 3}
    assert got == want, f"the answer on the last allowed turn (3 of 3): got {got!r}, want {want!r}"


ANY = "(any)"


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
    ],
)
def test_loop_stops_on_terminal_kinds(name, want_status, want_reason, want_retryable):
    outcome, script = _run(samples.sample(name), samples.sample("answer_o1"))
    got = _summary(outcome, script)
    want = {"status": want_status, "calls": 0, "results": [], "model_calls": 1}
    assert got == want, f"{name}: got {got!r}, want {want!r} (stop at once, nothing executed, no retry here)"
    verdict = outcome.verdict
    assert verdict is not None, f"{name}: outcome.verdict is None, want the classification of the reply"
    assert verdict.retryable is want_retryable, f"{name}: outcome.verdict.retryable: got {verdict.retryable!r}, want {want_retryable!r}"
    if want_reason is not ANY:
        assert verdict.reason == want_reason, f"{name}: outcome.verdict.reason: got {verdict.reason!r}, want {want_reason!r}"
