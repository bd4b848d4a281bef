"""Catalog: classifying one reply (agent/contract/classify.py)."""

import json
import random

import pytest

import ag00_samples as samples
from agent.contract import classify


def _classify(name):
    chosen = samples.sample(name)
    return classify.classify_response(chosen["body"], chosen["http_status"])


def _kind(verdict):
    """The kind as a plain string, so messages read 'text' rather than <Kind.TEXT: 'text'>."""
    return getattr(verdict.kind, "value", verdict.kind)


ANY = "(any reason)"


def _completed(*items):
    return {"status": "completed", "output": list(items)}


def _http_case(status, retryable, name=None):
    """One HTTP case: a generic error body, or an authored sample with its own status and error code."""
    if name is None:
        return pytest.param({"error": {"code": "sample"}}, status, retryable, "sample", id=str(status))
    return pytest.param(samples.body(name), status, retryable, samples.body(name)["error"]["code"], id=name)


@pytest.mark.parametrize(
    "body, status, want_retryable, want_reason",
    [_http_case(s, True) for s in (408, 429, 500, 502, 503, 504)]
    + [_http_case(s, False) for s in (400, 401, 403, 404, 409, 422, 428, 430, 451, 499, 501, 505, 507, 599, 600, 601)]
    + [_http_case(429, True, "http_429"), _http_case(500, True, "http_500"), _http_case(401, False, "http_401")],
)
def test_http_errors(body, status, want_retryable, want_reason):
    got = classify.classify_response(body, status)
    seen = (_kind(got), got.retryable, got.reason)
    want = ("http_error", want_retryable, want_reason)
    assert seen == want, f"HTTP {status}: got (kind, retryable, reason) {seen!r}, want {want!r}"


@pytest.mark.parametrize("status", [100, 101, 199, 201, 202, 204, 206, 299, 300, 301, 302, 304, 307, 308, 399])
def test_only_200_is_a_reply(status):
    body = samples.body("answer_o1")
    got = classify.classify_response(body, status)
    seen = (_kind(got), got.retryable)
    assert seen == ("http_error", False), (
        f"HTTP {status} with a completed body: got (kind, retryable) {seen!r}, want ('http_error', False); "
        "any status but 200 is an HTTP error, whatever the body says"
    )


@pytest.mark.parametrize(
    "case, body, status, want",
    [
        pytest.param("500 with error: null", {"error": None}, 500, ("http_error", None), id="http-error-null"),
        pytest.param("429 with no body", None, 429, ("http_error", None), id="http-body-null"),
        pytest.param("503 with a text body", "upstream timeout", 503, ("http_error", None), id="http-body-text"),
        pytest.param("error.code null", {"error": {"code": None, "message": "x", "type": "server_error"}}, 500, ("http_error", None), id="http-code-null"),
        pytest.param("error without a code", {"error": {"message": "x", "type": "invalid_request_error"}}, 400, ("http_error", None), id="http-no-code"),
        pytest.param("a code outside error", {"code": "rate_limit_exceeded", "message": "x"}, 429, ("http_error", None), id="http-top-level-code"),
        pytest.param("error null beside a code", {"error": None, "code": "server_error"}, 500, ("http_error", None), id="http-error-null-top-code"),
        pytest.param("failed with error: null", {"status": "failed", "output": [], "error": None}, 200, ("failed", None), id="failed-error-null"),
        pytest.param("failed with no error", {"status": "failed", "output": []}, 200, ("failed", None), id="failed-no-error"),
        pytest.param("incomplete with incomplete_details: null", {"status": "incomplete", "output": [], "incomplete_details": None},
                     200, ("incomplete", None), id="incomplete-details-null"),
        pytest.param("incomplete with incomplete_details: {}", {"status": "incomplete", "output": [], "incomplete_details": {}},
                     200, ("incomplete", None), id="incomplete-details-empty"),
        pytest.param("incomplete with reason: null", {"status": "incomplete", "output": [], "incomplete_details": {"reason": None}},
                     200, ("incomplete", None), id="incomplete-reason-null"),
        pytest.param("output: null", {"status": "completed", "output": None}, 200, ("unsupported", ANY), id="output-null"),
        pytest.param("incomplete with no output field", {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}},
                     200, ("incomplete", "max_output_tokens"), id="incomplete-no-output"),
        pytest.param("failed with output: null", {"status": "failed", "output": None, "error": {"code": "server_error"}},
                     200, ("failed", "server_error"), id="failed-output-null"),
        pytest.param("cancelled with no output field", {"status": "cancelled"}, 200, ("cancelled", None), id="cancelled-no-output"),
        pytest.param("a completed text reply with every optional field null",
                     {**samples.body("answer_o1"), "error": None, "incomplete_details": None, "usage": None}, 200, ("text", None),
                     id="completed-nulls"),
    ],
)
def test_explicit_nulls(case, body, status, want):
    got = classify.classify_response(body, status)
    seen = (_kind(got), got.reason if want[1] is not ANY else ANY)
    assert seen == want, f"{case}: got (kind, reason) {seen!r}, want {want!r} (a field sent as null holds nothing)"


def _incomplete_case(name):
    if name == "details-null":
        chosen = samples.sample("incomplete_max_tokens")
        chosen["body"]["incomplete_details"] = None
        return chosen["body"]
    if name == "details-absent":
        return {"status": "incomplete", "output": []}
    return samples.body(name)


@pytest.mark.parametrize(
    "name, reason",
    [("incomplete_max_tokens", "max_output_tokens"), ("incomplete_content_filter", "content_filter"),
     ("details-absent", None), ("details-null", None)],
)
def test_incomplete_keeps_reason(name, reason):
    got = classify.classify_response(_incomplete_case(name))
    seen = (_kind(got), got.reason)
    assert seen == ("incomplete", reason), f"incomplete reply ({name}): got (kind, reason) {seen!r}, want ('incomplete', {reason!r})"


def test_failed_and_cancelled():
    got = _classify("failed")
    seen = (_kind(got), got.reason)
    assert seen == ("failed", "server_error"), f"failed sample: got (kind, reason) {seen!r}, want ('failed', 'server_error')"
    got = _classify("cancelled")
    seen = (_kind(got), got.reason, got.retryable)
    assert seen == ("cancelled", None, False), f"cancelled sample: got (kind, reason, retryable) {seen!r}, want ('cancelled', None, False)"


def test_refusal_not_text():
    got = _classify("refusal")
    seen = (_kind(got), got.reason, got.text)
    want = ("refused", "I can't help with that request.", "")
    assert seen == want, f"refusal sample: got (kind, reason, text) {seen!r}, want {want!r}"
    mixed = _completed({"type": "message", "status": "completed", "content": [
        {"type": "output_text", "text": "Sure, "},
        {"type": "refusal", "refusal": "on second thought, no."},
    ]})
    got = classify.classify_response(mixed)
    assert _kind(got) == "refused", f"text then a refusal in one message: got kind {_kind(got)!r}, want 'refused'"
    bare = _completed({"type": "message", "status": "completed", "content": [{"type": "refusal"}]})
    got = classify.classify_response(bare)
    seen = (_kind(got), got.reason)
    assert seen == ("refused", None), f"a refusal part without its refusal text: got (kind, reason) {seen!r}, want ('refused', None)"


def _refusal_items(case):
    call = samples.body("tool_call_o1")["output"][1]
    refusal = samples.body("refusal")["output"][0]
    if case == "call-then-refusal":
        return [call, refusal]
    if case == "refusal-then-call":
        return [refusal, call]
    text_then_refusal = {**refusal, "content": [{"type": "output_text", "text": "Let me check. "}] + refusal["content"]}
    return samples.body("two_calls")["output"] + [text_then_refusal]


@pytest.mark.parametrize("case", ["call-then-refusal", "refusal-then-call", "two-calls-then-text-and-refusal"])
def test_refusal_beats_tool_calls(case):
    got = classify.classify_response(_completed(*_refusal_items(case)))
    seen = (_kind(got), got.reason, len(got.calls))
    want = ("refused", "I can't help with that request.", 0)
    assert seen == want, f"{case}: got (kind, reason, number of calls) {seen!r}, want {want!r} (a refusal anywhere wins)"


def test_refusal_and_incomplete_apart():
    cut = _classify("incomplete_max_tokens")
    assert _kind(cut) == "incomplete", (
        f"an incomplete reply with partial text: got kind {_kind(cut)!r}, want 'incomplete' (status before items)"
    )
    filtered = _classify("incomplete_content_filter")
    assert _kind(filtered) == "incomplete", (
        f"stopped by content_filter: got kind {_kind(filtered)!r}, want 'incomplete' (a filter stop is not a refusal)"
    )
    cut_call = samples.body("tool_call_o1")
    cut_call.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    got = classify.classify_response(cut_call)
    assert (_kind(got), got.calls) == ("incomplete", ()), (
        f"an incomplete reply holding a complete-looking function_call: got (kind, calls) {(_kind(got), got.calls)!r}, "
        "want ('incomplete', ()) (nothing from a cut reply is acted on)"
    )
    failed_text = samples.body("answer_o1")
    failed_text.update(status="failed", error={"code": "server_error"})
    got = classify.classify_response(failed_text)
    assert (_kind(got), got.reason, got.text) == ("failed", "server_error", ""), (
        f"a failed reply holding text: got (kind, reason, text) {(_kind(got), got.reason, got.text)!r}, want ('failed', 'server_error', '')"
    )
    refused = _classify("refusal")
    assert (_kind(refused), refused.reason) != (_kind(filtered), filtered.reason), (
        f"a refusal and a filtered stop must differ: both gave {(_kind(refused), refused.reason)!r}"
    )
    assert _kind(refused) == "refused", f"refusal sample: got kind {_kind(refused)!r}, want 'refused'"


def test_tool_requests():
    got = _classify("tool_call_o1")
    ids = [c.get("call_id") for c in got.calls]
    assert (_kind(got), ids) == ("tool_requests", ["call_o1"]), (
        f"tool_call_o1: got (kind, call_ids) {(_kind(got), ids)!r}, want ('tool_requests', ['call_o1'])"
    )
    want_item = samples.body("tool_call_o1")["output"][1]
    assert got.calls[0] == want_item, f"the call item must be passed on unchanged: got {got.calls[0]!r}, want {want_item!r}"
    got = _classify("two_calls")
    ids = [c.get("call_id") for c in got.calls]
    assert ids == ["call_batch_a", "call_batch_b"], f"two_calls: got call_ids {ids!r}, want them in output order"
    odd = samples.body("tool_call_o1")
    odd["output"][1].update(call_id=" call spaced ", extra_field={"kept": [1, None]})
    want_item = json.loads(json.dumps(odd["output"][1]))
    got = classify.classify_response(odd)
    assert list(got.calls) == [want_item], f"a call with an unusual call_id and an extra field: got {list(got.calls)!r}, want it unchanged {want_item!r}"
    other = samples.body("tool_call_o1")
    other["output"][1]["name"] = "update_order"
    got = classify.classify_response(other)
    seen = (_kind(got), [c.get("name") for c in got.calls])
    assert seen == ("tool_requests", ["update_order"]), (
        f"a well-formed call to a tool we never registered: got {seen!r}, want ('tool_requests', ['update_order']) "
        "(the classifier reads shapes; execute_call refuses unknown tools)"
    )
    for field, value in [("status", "in_progress"), ("arguments", "{not json"), ("arguments", "{}")]:
        odd_call = samples.body("tool_call_o1")
        odd_call["output"][1][field] = value
        got = classify.classify_response(odd_call)
        seen = (_kind(got), [c.get(field) for c in got.calls])
        assert seen == ("tool_requests", [value]), (
            f"a function_call with {field} {value!r}: got {seen!r}, want ('tool_requests', [{value!r}]) "
            "(the classifier reads neither the call's status nor its arguments' content: execute_call judges those)"
        )
    bare = samples.body("tool_call_o1")
    del bare["output"][1]["status"]
    got = classify.classify_response(bare)
    seen = (_kind(got), [c.get("call_id") for c in got.calls])
    assert seen == ("tool_requests", ["call_o1"]), f"a function_call without a status field: got {seen!r}, want ('tool_requests', ['call_o1'])"
    got = _classify("tool_call_preamble")
    seen = (_kind(got), [c.get("call_id") for c in got.calls])
    assert seen == ("tool_requests", ["call_pre"]), (
        f"text beside a call: got {seen!r}, want ('tool_requests', ['call_pre']) (the text is a preamble, not an answer)"
    )


def test_text_and_empty():
    got = _classify("answer_o1")
    want_text = json.dumps({"order_id": "o-1", "status": "delivered", "source": "read_order"})
    assert (_kind(got), got.text) == ("text", want_text), f"answer_o1: got {(_kind(got), got.text)!r}, want ('text', {want_text!r})"
    two_parts = _completed({"type": "message", "status": "completed", "content": [
        {"type": "output_text", "text": "Deliv"}, {"type": "output_text", "text": "ered."}]})
    got = classify.classify_response(two_parts)
    assert (_kind(got), got.text) == ("text", "Delivered."), f"two output_text parts: got {(_kind(got), got.text)!r}, want ('text', 'Delivered.')"
    two_messages = _completed(
        {"type": "message", "status": "completed", "content": [{"type": "output_text", "text": "Your order "}]},
        {"type": "reasoning", "id": "rs_between", "summary": []},
        {"type": "message", "status": "completed", "content": [{"type": "output_text", "text": "arrived."}]})
    got = classify.classify_response(two_messages)
    assert (_kind(got), got.text) == ("text", "Your order arrived."), (
        f"two messages with a reasoning item between: got {(_kind(got), got.text)!r}, want ('text', 'Your order arrived.') (every part, joined by '')"
    )
    padded = _completed({"type": "message", "status": "completed", "content": [{"type": "output_text", "text": "  Delivered.\n"}]})
    got = classify.classify_response(padded)
    assert (_kind(got), got.text) == ("text", "  Delivered.\n"), f"text with blanks around it: got {(_kind(got), got.text)!r}, want ('text', '  Delivered.\\n') (kept exactly)"
    no_status = _completed({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]})
    got = classify.classify_response(no_status)
    assert (_kind(got), got.text) == ("text", "ok"), f"a message without a status field: got {(_kind(got), got.text)!r}, want ('text', 'ok')"
    blank = _completed({"type": "message", "status": "completed", "content": [{"type": "output_text", "text": ""}]})
    got = classify.classify_response(blank)
    assert (_kind(got), got.text) == ("text", ""), f"one output_text part with text '': got {(_kind(got), got.text)!r}, want ('text', '')"
    no_id = _completed({"type": "reasoning"}, {"type": "message", "content": [{"type": "output_text", "text": "ok"}]})
    got = classify.classify_response(no_id)
    assert (_kind(got), got.text) == ("text", "ok"), f"a reasoning item with no id or summary, then a message: got {(_kind(got), got.text)!r}, want ('text', 'ok')"
    summary = {"type": "reasoning", "id": "rs_sum", "summary": [{"type": "summary_text", "text": "Thinking about o-1."}]}
    got = classify.classify_response(_completed(summary))
    assert (_kind(got), got.text) == ("empty", ""), f"a reasoning item with a summary, nothing else: got {(_kind(got), got.text)!r}, want ('empty', '') (reasoning is never read)"
    with_text = _completed(summary, {"type": "message", "status": "completed", "content": [{"type": "output_text", "text": "Delivered."}]})
    got = classify.classify_response(with_text)
    assert (_kind(got), got.text) == ("text", "Delivered."), f"a reasoning summary, then a message: got {(_kind(got), got.text)!r}, want ('text', 'Delivered.')"
    for name, body in [("empty_output (reasoning only)", samples.body("empty_output")),
                       ("no output items", _completed()),
                       ("a message with no content parts", _completed({"type": "message", "status": "completed", "content": []}))]:
        got = classify.classify_response(body)
        assert _kind(got) == "empty", f"{name}: got kind {_kind(got)!r}, want 'empty'"


@pytest.mark.parametrize(
    "case, body",
    [pytest.param(case, body, id=case) for case, body in [
        ("web_search_call item", samples.body("unsupported_item")),
        ("body is a list", []),
        ("body is a string", "completed"),
        ("status in_progress", {"status": "in_progress", "output": []}),
        ("status missing", {"output": []}),
        ("output is not a list", {"status": "completed", "output": {}}),
        ("item is not an object", _completed("message")),
        ("item is null", _completed(None)),
        ("item without a type", _completed({"id": "x", "content": []})),
        ("item type null", _completed({"type": None})),
        ("content part is not an object", _completed({"type": "message", "status": "completed", "content": ["hi"]})),
        ("content part without a type", _completed({"type": "message", "status": "completed", "content": [{"text": "hi"}]})),
        ("output_text with a list text", _completed({"type": "message", "status": "completed", "content": [{"type": "output_text", "text": ["hi"]}]})),
        ("message status incomplete", _completed({"type": "message", "status": "incomplete", "content": []})),
        ("a refusal in a message still in progress", _completed({"type": "message", "status": "in_progress", "content": [{"type": "refusal", "refusal": "no"}]})),
        ("a refusal in content that is not a list", _completed({"type": "message", "status": "completed", "content": {"type": "refusal", "refusal": "no"}})),
        ("message content null", _completed({"type": "message", "status": "completed", "content": None})),
        ("status null", {"status": None, "output": []}),
        ("status queued", {"status": "queued", "output": []}),
        ("status Completed", {"status": "Completed", "output": []}),
        ("status with a blank", {"status": "completed ", "output": []}),
        ("content part output_audio", _completed({"type": "message", "status": "completed", "content": [{"type": "output_audio"}]})),
        ("output_text without a string", _completed({"type": "message", "status": "completed", "content": [{"type": "output_text", "text": None}]})),
        ("message still in progress", _completed({"type": "message", "status": "in_progress", "content": []})),
        ("message content not a list", _completed({"type": "message", "status": "completed", "content": "hi"})),
    ]],
)
def test_unsupported_shapes(case, body):
    got = classify.classify_response(body)
    assert _kind(got) == "unsupported", f"{case}: got kind {_kind(got)!r}, want 'unsupported'"


@pytest.mark.parametrize(
    "case, change",
    [pytest.param(case, change, id=case) for case, change in [
        ("no call_id", {"call_id": None}),
        ("empty call_id", {"call_id": ""}),
        ("no name", {"name": None}),
        ("empty name", {"name": ""}),
        ("name null", {"name": ...}),
        ("call_id a number", {"call_id": 7}),
        ("call_id null", {"call_id": ...}),
        ("no arguments", {"arguments": None}),
        ("arguments null", {"arguments": ...}),
        ("arguments as an object", {"arguments": {"order_id": "o-1"}}),
        ("empty arguments", {"arguments": ""}),
        ("second call of a batch with an empty name", "batch"),
    ]],
)
def test_invalid_tool_call(case, change):
    got = _classify("invalid_tool_call")
    assert _kind(got) == "invalid_tool_call", f"invalid_tool_call sample: got kind {_kind(got)!r}, want 'invalid_tool_call'"
    if change == "batch":
        body = samples.body("two_calls")
        body["output"][1]["name"] = ""
        change = {}
    else:
        body = samples.body("tool_call_o1")
    call = body["output"][-1]
    for key, value in change.items():
        if value is None:
            del call[key]
        else:
            call[key] = None if value is ... else value
    got = classify.classify_response(body)
    assert _kind(got) == "invalid_tool_call", f"function_call with {case}: got kind {_kind(got)!r}, want 'invalid_tool_call'"


# The course's table ("Reading the HTTP status"): what may pass if the same request goes out again.
RETRYABLE = frozenset({408, 429, 500, 502, 503, 504})


@pytest.mark.parametrize("band", ["1xx", "2xx", "3xx", "4xx", "5xx", "6xx"])
def test_every_status_classified(band):
    first = int(band[0]) * 100
    wrong = []
    for status in range(first, first + 100):
        got = classify.classify_response(samples.body("answer_o1"), status)
        seen = (_kind(got), got.retryable)
        want = ("text", False) if status == 200 else ("http_error", status in RETRYABLE)
        if seen != want or classify.is_retryable(status) is not want[1]:
            wrong.append(f"{status}: got (kind, retryable) {seen!r}, is_retryable {classify.is_retryable(status)!r}; want {want!r}")
    assert not wrong, f"statuses {band} with a completed text body, {len(wrong)} wrong:\n" + "\n".join(wrong[:8])


def _decisive_case(rng):
    """A random output and the verdict the chapter's rules give for it: the walk stops at the first
    refusal, invalid call or unsupported item; otherwise calls, then text, then empty."""
    call = samples.body("tool_call_o1")["output"][1]
    pieces = {
        "reasoning": ({"type": "reasoning", "id": "rs_g", "summary": []}, None),
        "text": ({"type": "message", "status": "completed", "content": [{"type": "output_text", "text": "t"}]}, None),
        "call": (call, None),
        "refusal": ({"type": "message", "status": "completed", "content": [{"type": "refusal", "refusal": "no"}]}, "refused"),
        "bad call": ({**call, "call_id": ""}, "invalid_tool_call"),
        "unknown item": ({"type": "file_search_call", "id": "fs_g"}, "unsupported"),
        "bad part": ({"type": "message", "status": "completed", "content": [{"type": "output_image"}]}, "unsupported"),
    }
    names = [rng.choice(list(pieces)) for _ in range(rng.randrange(1, 6))]
    items, want = [], None
    for n, name in enumerate(names):
        item, decides = pieces[name]
        item = json.loads(json.dumps(item))
        if name == "call":
            item["call_id"] = item["id"] = f"call_g{n}"
        items.append(item)
        if decides and want is None:
            want = decides
    if want is None:
        want = "tool_requests" if "call" in names else "text" if "text" in names else "empty"
    return names, items, want


@pytest.mark.parametrize("seed", range(6))
def test_first_decisive_item_wins(seed):
    rng = random.Random(seed)
    wrong = []
    for _ in range(40):
        names, items, want = _decisive_case(rng)
        got = classify.classify_response(_completed(*items))
        if _kind(got) != want:
            wrong.append(f"items {names}: got {_kind(got)!r}, want {want!r}")
    assert not wrong, (f"{len(wrong)} generated outputs misread (the first refusal, bad call or unknown shape decides; "
                       "else calls, then text, then empty):\n" + "\n".join(wrong[:8]))
