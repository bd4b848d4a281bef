"""Catalog: classifying one reply (agent/contract/classify.py)."""

import json

import pytest

import ag00_samples as samples
from agent.contract import classify


def _classify(name):
    chosen = samples.sample(name)
    return classify.classify_response(chosen["body"], chosen["http_status"])


def _kind(verdict):
    """The kind as a plain string, so messages read 'text' rather than <Kind.TEXT: 'text'>."""
    return getattr(verdict.kind, "value", verdict.kind)


def _completed(*items):
    return {"status": "completed", "output": list(items)}


def _http_case(status, retryable, name=None):
    """One HTTP case: a generic error body, or an authored sample with its own status and error code."""
    if name is None:
        return pytest.param({"error": {"code": "sample"}}, status, retryable, "sample", id=str(status))
    return pytest.param(samples.body(name), status, retryable, samples.body(name)["error"]["code"], id=name)


@pytest.mark.parametrize(
    "body, status, want_retryable, want_reason",
    [_http_case(s, True) for s in (429, 500, 502, 503, 599)]
    + [_http_case(s, False) for s in (400, 401, 403, 404, 409, 422, 600)]
    + [_http_case(429, True, "http_429"), _http_case(500, True, "http_500"), _http_case(401, False, "http_401")],
)
def test_http_errors(body, status, want_retryable, want_reason):
    got = classify.classify_response(body, status)
    seen = (_kind(got), got.retryable, got.reason)
    want = ("http_error", want_retryable, want_reason)
    assert seen == want, f"HTTP {status}: got (kind, retryable, reason) {seen!r}, want {want!r}"


def test_incomplete_keeps_reason():
    for name, reason in [("incomplete_max_tokens", "max_output_tokens"), ("incomplete_content_filter", "content_filter")]:
        got = _classify(name)
        seen = (_kind(got), got.reason)
        assert seen == ("incomplete", reason), f"{name}: got (kind, reason) {seen!r}, want ('incomplete', {reason!r})"
    got = classify.classify_response({"status": "incomplete", "output": []})
    seen = (_kind(got), got.reason)
    assert seen == ("incomplete", None), f"incomplete without incomplete_details: got {seen!r}, want ('incomplete', None)"


def test_failed_and_cancelled():
    got = _classify("failed")
    seen = (_kind(got), got.reason)
    assert seen == ("failed", "server_error"), f"failed sample: got (kind, reason) {seen!r}, want ('failed', 'server_error')"
    got = _classify("cancelled")
    assert _kind(got) == "cancelled", f"cancelled sample: got kind {_kind(got)!r}, want 'cancelled'"


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


def test_refusal_and_incomplete_apart():
    cut = _classify("incomplete_max_tokens")
    assert _kind(cut) == "incomplete", (
        f"an incomplete reply with partial text: got kind {_kind(cut)!r}, want 'incomplete' (status before items)"
    )
    filtered = _classify("incomplete_content_filter")
    assert _kind(filtered) == "incomplete", (
        f"stopped by content_filter: got kind {_kind(filtered)!r}, want 'incomplete' (a filter stop is not a refusal)"
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
        ("arguments as an object", {"arguments": {"order_id": "o-1"}}),
        ("empty arguments", {"arguments": ""}),
    ]],
)
def test_invalid_tool_call(case, change):
    got = _classify("invalid_tool_call")
    assert _kind(got) == "invalid_tool_call", f"invalid_tool_call sample: got kind {_kind(got)!r}, want 'invalid_tool_call'"
    body = samples.body("tool_call_o1")
    call = body["output"][1]
    for key, value in change.items():
        if value is None:
            del call[key]
        else:
            call[key] = value
    got = classify.classify_response(body)
    assert _kind(got) == "invalid_tool_call", f"function_call with {case}: got kind {_kind(got)!r}, want 'invalid_tool_call'"
