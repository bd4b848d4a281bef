package contract_test

// The ag00 catalog: classifying one reply (classify.go).

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"tinyllm/agent/contract"
)

func classifySample(t *testing.T, name string) contract.Verdict {
	t.Helper()
	s := loadSample(t, name)
	return contract.Classify(s.HTTPStatus, s.Body)
}

func classifyBody(t *testing.T, body any) contract.Verdict {
	t.Helper()
	return contract.Classify(200, encode(t, body))
}

func TestHTTPErrors(t *testing.T) {
	type httpCase struct {
		status    int
		body      []byte
		retryable bool
		reason    string
		name      string
	}
	var cases []httpCase
	generic := []byte(`{"error": {"code": "sample"}}`)
	for _, status := range []int{408, 429, 500, 502, 503, 504} {
		cases = append(cases, httpCase{status, generic, true, "sample", fmt.Sprint(status)})
	}
	for _, status := range []int{400, 401, 403, 404, 409, 422, 428, 430, 451, 499, 501, 505, 507, 599, 600, 601} {
		cases = append(cases, httpCase{status, generic, false, "sample", fmt.Sprint(status)})
	}
	for _, c := range []struct {
		name      string
		retryable bool
		reason    string
	}{{"http_429", true, "rate_limit_exceeded"}, {"http_500", true, "server_error"}, {"http_401", false, "invalid_api_key"}} {
		s := loadSample(t, c.name)
		cases = append(cases, httpCase{s.HTTPStatus, s.Body, c.retryable, c.reason, c.name})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := contract.Classify(c.status, c.body)
			if got.Kind != contract.HTTPError || got.Retryable != c.retryable || got.Reason != c.reason {
				t.Errorf("HTTP %d: got (kind, retryable, reason) (%s, %v, %q), want (http_error, %v, %q)",
					c.status, got.Kind, got.Retryable, got.Reason, c.retryable, c.reason)
			}
		})
	}
}

func TestOnly200IsAReply(t *testing.T) {
	body := loadSample(t, "answer_o1").Body
	for _, status := range []int{100, 101, 199, 201, 202, 204, 206, 299, 300, 301, 302, 304, 307, 308, 399} {
		if got := contract.Classify(status, body); got.Kind != contract.HTTPError || got.Retryable {
			t.Errorf("HTTP %d with a completed body: got (kind, retryable) (%s, %v), want (http_error, false); "+
				"any status but 200 is an HTTP error, whatever the body says", status, got.Kind, got.Retryable)
		}
	}
}

func TestExplicitNulls(t *testing.T) {
	answerWithNulls := bodyOf(t, "answer_o1")
	answerWithNulls["error"], answerWithNulls["incomplete_details"], answerWithNulls["usage"] = nil, nil, nil
	const anyReason = "(any reason)"
	for _, c := range []struct {
		what   string
		status int
		body   string
		kind   contract.Kind
		reason string
	}{
		{"500 with error: null", 500, `{"error": null}`, contract.HTTPError, ""},
		{"429 with no body", 429, "", contract.HTTPError, ""},
		{"429 with a body of null", 429, "null", contract.HTTPError, ""},
		{"503 with a text body", 503, "upstream timeout", contract.HTTPError, ""},
		{"error.code null", 500, `{"error": {"code": null, "message": "x", "type": "server_error"}}`, contract.HTTPError, ""},
		{"error without a code", 400, `{"error": {"message": "x", "type": "invalid_request_error"}}`, contract.HTTPError, ""},
		{"a code outside error", 429, `{"code": "rate_limit_exceeded", "message": "x"}`, contract.HTTPError, ""},
		{"error null beside a code", 500, `{"error": null, "code": "server_error"}`, contract.HTTPError, ""},
		{"failed with error: null", 200, `{"status": "failed", "output": [], "error": null}`, contract.Failed, ""},
		{"failed with no error", 200, `{"status": "failed", "output": []}`, contract.Failed, ""},
		{"incomplete with incomplete_details: null", 200, `{"status": "incomplete", "output": [], "incomplete_details": null}`, contract.Incomplete, ""},
		{"incomplete with incomplete_details: {}", 200, `{"status": "incomplete", "output": [], "incomplete_details": {}}`, contract.Incomplete, ""},
		{"incomplete with reason: null", 200, `{"status": "incomplete", "output": [], "incomplete_details": {"reason": null}}`, contract.Incomplete, ""},
		{"output: null", 200, `{"status": "completed", "output": null}`, contract.Unsupported, anyReason},
		{"incomplete with no output field", 200, `{"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}`,
			contract.Incomplete, "max_output_tokens"},
		{"failed with output: null", 200, `{"status": "failed", "output": null, "error": {"code": "server_error"}}`, contract.Failed, "server_error"},
		{"cancelled with no output field", 200, `{"status": "cancelled"}`, contract.Cancelled, ""},
		{"a completed text reply with every optional field null", 200, string(encode(t, answerWithNulls)), contract.Text, ""},
	} {
		got := contract.Classify(c.status, []byte(c.body))
		if got.Kind != c.kind || (c.reason != anyReason && got.Reason != c.reason) {
			t.Errorf("%s: got (kind, reason) (%s, %q), want (%s, %q) (a field sent as null holds nothing)", c.what, got.Kind, got.Reason, c.kind, c.reason)
		}
	}
}

func TestIncompleteKeepsReason(t *testing.T) {
	detailsNull := bodyOf(t, "incomplete_max_tokens")
	detailsNull["incomplete_details"] = nil
	for _, c := range []struct {
		name   string
		body   []byte
		reason string
	}{
		{"incomplete_max_tokens", loadSample(t, "incomplete_max_tokens").Body, "max_output_tokens"},
		{"incomplete_content_filter", loadSample(t, "incomplete_content_filter").Body, "content_filter"},
		{"details absent", []byte(`{"status": "incomplete", "output": []}`), ""},
		{"details null", encode(t, detailsNull), ""},
	} {
		if got := contract.Classify(200, c.body); got.Kind != contract.Incomplete || got.Reason != c.reason {
			t.Errorf("an incomplete reply (%s): got (kind, reason) (%s, %q), want (incomplete, %q)", c.name, got.Kind, got.Reason, c.reason)
		}
	}
}

func TestFailedAndCancelled(t *testing.T) {
	if got := classifySample(t, "failed"); got.Kind != contract.Failed || got.Reason != "server_error" {
		t.Errorf("the failed sample: got (kind, reason) (%s, %q), want (failed, \"server_error\")", got.Kind, got.Reason)
	}
	if got := classifySample(t, "cancelled"); got.Kind != contract.Cancelled || got.Reason != "" || got.Retryable {
		t.Errorf("the cancelled sample: got (kind, reason, retryable) (%s, %q, %v), want (cancelled, \"\", false)", got.Kind, got.Reason, got.Retryable)
	}
}

func message(parts ...any) map[string]any {
	return map[string]any{"type": "message", "status": "completed", "content": append([]any{}, parts...)}
}

func outputText(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text}
}

func TestRefusalNotText(t *testing.T) {
	got := classifySample(t, "refusal")
	if got.Kind != contract.Refused || got.Reason != "I can't help with that request." || got.Text != "" {
		t.Errorf("the refusal sample: got (kind, reason, text) (%s, %q, %q), want (refused, \"I can't help with that request.\", \"\")",
			got.Kind, got.Reason, got.Text)
	}
	mixed := completed(message(outputText("Sure, "), map[string]any{"type": "refusal", "refusal": "on second thought, no."}))
	if got := classifyBody(t, mixed); got.Kind != contract.Refused {
		t.Errorf("text, then a refusal, in one message: got kind %s, want refused", got.Kind)
	}
	bare := completed(message(map[string]any{"type": "refusal"}))
	if got := classifyBody(t, bare); got.Kind != contract.Refused || got.Reason != "" {
		t.Errorf("a refusal part without its refusal text: got (kind, reason) (%s, %q), want (refused, \"\")", got.Kind, got.Reason)
	}
}

func TestRefusalBeatsToolCalls(t *testing.T) {
	call := itemOf(bodyOf(t, "tool_call_o1"), 1)
	refusal := itemOf(bodyOf(t, "refusal"), 0)
	textThenRefusal := itemOf(bodyOf(t, "refusal"), 0)
	textThenRefusal["content"] = append([]any{outputText("Let me check. ")}, textThenRefusal["content"].([]any)...)
	for _, c := range []struct {
		name  string
		items []any
	}{
		{"a call, then a refusal", []any{call, refusal}},
		{"a refusal, then a call", []any{refusal, call}},
		{"two calls, then text and a refusal", append(outputOf(bodyOf(t, "two_calls")), textThenRefusal)},
	} {
		got := classifyBody(t, completed(c.items...))
		if got.Kind != contract.Refused || got.Reason != "I can't help with that request." || len(got.Calls) != 0 {
			t.Errorf("%s: got (kind, reason, number of calls) (%s, %q, %d), want (refused, \"I can't help with that request.\", 0) (a refusal anywhere wins)",
				c.name, got.Kind, got.Reason, len(got.Calls))
		}
	}
}

func TestRefusalAndIncompleteApart(t *testing.T) {
	if cut := classifySample(t, "incomplete_max_tokens"); cut.Kind != contract.Incomplete {
		t.Errorf("an incomplete reply with partial text: got kind %s, want incomplete (the status before the items)", cut.Kind)
	}
	filtered := classifySample(t, "incomplete_content_filter")
	if filtered.Kind != contract.Incomplete {
		t.Errorf("stopped by content_filter: got kind %s, want incomplete (a filtered stop is not a refusal)", filtered.Kind)
	}
	cutCall := bodyOf(t, "tool_call_o1")
	cutCall["status"], cutCall["incomplete_details"] = "incomplete", map[string]any{"reason": "max_output_tokens"}
	if got := classifyBody(t, cutCall); got.Kind != contract.Incomplete || len(got.Calls) != 0 {
		t.Errorf("an incomplete reply holding a complete-looking function_call: got (kind, calls) (%s, %v), want (incomplete, none) "+
			"(nothing from a cut reply is acted on)", got.Kind, got.Calls)
	}
	failedText := bodyOf(t, "answer_o1")
	failedText["status"], failedText["error"] = "failed", map[string]any{"code": "server_error"}
	if got := classifyBody(t, failedText); got.Kind != contract.Failed || got.Reason != "server_error" || got.Text != "" {
		t.Errorf("a failed reply holding text: got (kind, reason, text) (%s, %q, %q), want (failed, \"server_error\", \"\")", got.Kind, got.Reason, got.Text)
	}
	refused := classifySample(t, "refusal")
	if refused.Kind == filtered.Kind && refused.Reason == filtered.Reason {
		t.Errorf("a refusal and a filtered stop must differ: both gave (%s, %q)", refused.Kind, refused.Reason)
	}
	if refused.Kind != contract.Refused {
		t.Errorf("the refusal sample: got kind %s, want refused", refused.Kind)
	}
}

func callIDs(calls []contract.Call) []string {
	ids := []string{}
	for _, c := range calls {
		ids = append(ids, c.CallID)
	}
	return ids
}

func TestToolRequests(t *testing.T) {
	got := classifySample(t, "tool_call_o1")
	want := contract.Call{ID: "fc_sample_o1", CallID: "call_o1", Name: "read_order", Arguments: `{"order_id": "o-1"}`}
	if got.Kind != contract.ToolRequests || len(got.Calls) != 1 || got.Calls[0] != want {
		t.Errorf("tool_call_o1: got (kind, calls) (%s, %+v), want (tool_requests, [%+v]), the call's fields as they came", got.Kind, got.Calls, want)
	}
	if body := bodyOf(t, "tool_call_o1"); !sameJSON(t, got.Output, body["output"]) {
		t.Errorf("tool_call_o1: Output got %s, want every output item unchanged: %s", encode(t, got.Output), encode(t, body["output"]))
	}
	if got := classifySample(t, "two_calls"); !reflect.DeepEqual(callIDs(got.Calls), []string{"call_batch_a", "call_batch_b"}) {
		t.Errorf("two_calls: got call_ids %q, want [call_batch_a call_batch_b], in output order", callIDs(got.Calls))
	}

	odd := bodyOf(t, "tool_call_o1")
	itemOf(odd, 1)["call_id"] = " call spaced "
	itemOf(odd, 1)["extra_field"] = map[string]any{"kept": []any{1, nil}}
	got = classifyBody(t, odd)
	if len(got.Calls) != 1 || got.Calls[0].CallID != " call spaced " || !sameJSON(t, got.Output, odd["output"]) {
		t.Errorf("a call with an unusual call_id and an extra field: got calls %+v and Output %s, want the call_id \" call spaced \" as it came "+
			"and the items unchanged %s", got.Calls, encode(t, got.Output), encode(t, odd["output"]))
	}

	other := bodyOf(t, "tool_call_o1")
	itemOf(other, 1)["name"] = "update_order"
	if got := classifyBody(t, other); got.Kind != contract.ToolRequests || len(got.Calls) != 1 || got.Calls[0].Name != "update_order" {
		t.Errorf("a well-formed call to a tool we never registered: got (kind, calls) (%s, %+v), want (tool_requests, the update_order call) "+
			"(the classifier reads shapes; ExecuteCall refuses unknown tools)", got.Kind, got.Calls)
	}
	for _, c := range []struct{ field, value string }{{"status", "in_progress"}, {"arguments", "{not json"}, {"arguments", "{}"}} {
		body := bodyOf(t, "tool_call_o1")
		itemOf(body, 1)[c.field] = c.value
		got := classifyBody(t, body)
		if got.Kind != contract.ToolRequests || len(got.Calls) != 1 || (c.field == "arguments" && got.Calls[0].Arguments != c.value) {
			t.Errorf("a function_call with %s %q: got (kind, calls) (%s, %+v), want tool_requests with that call "+
				"(the classifier reads neither the call's status nor its arguments' content: ExecuteCall judges those)", c.field, c.value, got.Kind, got.Calls)
		}
	}
	bare := bodyOf(t, "tool_call_o1")
	delete(itemOf(bare, 1), "status")
	if got := classifyBody(t, bare); got.Kind != contract.ToolRequests || !reflect.DeepEqual(callIDs(got.Calls), []string{"call_o1"}) {
		t.Errorf("a function_call without a status field: got (kind, call_ids) (%s, %q), want (tool_requests, [call_o1])", got.Kind, callIDs(got.Calls))
	}
	if got := classifySample(t, "tool_call_preamble"); got.Kind != contract.ToolRequests || !reflect.DeepEqual(callIDs(got.Calls), []string{"call_pre"}) {
		t.Errorf("text beside a call: got (kind, call_ids) (%s, %q), want (tool_requests, [call_pre]) (the text is a preamble, not an answer)",
			got.Kind, callIDs(got.Calls))
	}
}

func TestTextAndEmpty(t *testing.T) {
	want := string(encode(t, map[string]string{"order_id": "o-1", "status": "delivered", "source": "read_order"}))
	if got := classifySample(t, "answer_o1"); got.Kind != contract.Text || !sameJSON(t, []byte(got.Text), []byte(want)) {
		t.Errorf("answer_o1: got (kind, text) (%s, %q), want (text, the receipt of o-1 as JSON)", got.Kind, got.Text)
	}
	reasoning := func(id string, summary ...any) map[string]any {
		return map[string]any{"type": "reasoning", "id": id, "summary": append([]any{}, summary...)}
	}
	summary := reasoning("rs_sum", map[string]any{"type": "summary_text", "text": "Thinking about o-1."})
	for _, c := range []struct {
		what string
		body map[string]any
		text string
	}{
		{"two output_text parts", completed(message(outputText("Deliv"), outputText("ered."))), "Delivered."},
		{"two messages with a reasoning item between (every part, joined by nothing)",
			completed(message(outputText("Your order ")), reasoning("rs_between"), message(outputText("arrived."))), "Your order arrived."},
		{"text with blanks around it (kept exactly)", completed(message(outputText("  Delivered.\n"))), "  Delivered.\n"},
		{"a message without a status field", completed(map[string]any{"type": "message", "role": "assistant", "content": []any{outputText("ok")}}), "ok"},
		{"one output_text part whose text is empty", completed(message(outputText(""))), ""},
		{"a reasoning item with no id or summary, then a message",
			completed(map[string]any{"type": "reasoning"}, map[string]any{"type": "message", "content": []any{outputText("ok")}}), "ok"},
		{"a message whose status is null", completed(map[string]any{"type": "message", "status": nil, "content": []any{outputText("ok")}}), "ok"},
		{"a reasoning summary, then a message", completed(summary, message(outputText("Delivered."))), "Delivered."},
	} {
		if got := classifyBody(t, c.body); got.Kind != contract.Text || got.Text != c.text {
			t.Errorf("%s: got (kind, text) (%s, %q), want (text, %q)", c.what, got.Kind, got.Text, c.text)
		}
	}
	for _, c := range []struct {
		what string
		body map[string]any
	}{
		{"empty_output (a reasoning item only)", bodyOf(t, "empty_output")},
		{"a reasoning item with a summary, nothing else (reasoning is never read)", completed(summary)},
		{"no output items", completed()},
		{"a message with no content parts", completed(message())},
	} {
		if got := classifyBody(t, c.body); got.Kind != contract.Empty || got.Text != "" {
			t.Errorf("%s: got (kind, text) (%s, %q), want (empty, \"\")", c.what, got.Kind, got.Text)
		}
	}
}

func TestUnsupportedShapes(t *testing.T) {
	msg := func(status any, content any) map[string]any {
		return map[string]any{"type": "message", "status": status, "content": content}
	}
	refusalPart := map[string]any{"type": "refusal", "refusal": "no"}
	for _, c := range []struct {
		what string
		body any
	}{
		{"web_search_call item", bodyOf(t, "unsupported_item")},
		{"body is a list", []any{}},
		{"body is a string", "completed"},
		{"body is null", nil},
		{"status in_progress", map[string]any{"status": "in_progress", "output": []any{}}},
		{"status missing", map[string]any{"output": []any{}}},
		{"output is not a list", map[string]any{"status": "completed", "output": map[string]any{}}},
		{"output missing", map[string]any{"status": "completed"}},
		{"item is not an object", completed("message")},
		{"item is null", completed(nil)},
		{"item without a type", completed(map[string]any{"id": "x", "content": []any{}})},
		{"item type null", completed(map[string]any{"type": nil})},
		{"content part is not an object", completed(message("hi"))},
		{"content part without a type", completed(message(map[string]any{"text": "hi"}))},
		{"output_text with a list text", completed(message(map[string]any{"type": "output_text", "text": []any{"hi"}}))},
		{"message status incomplete", completed(msg("incomplete", []any{}))},
		{"a refusal in a message still in progress", completed(msg("in_progress", []any{refusalPart}))},
		{"a refusal in content that is not a list", completed(msg("completed", refusalPart))},
		{"message content null", completed(msg("completed", nil))},
		{"message without content", completed(map[string]any{"type": "message", "status": "completed"})},
		{"status null", map[string]any{"status": nil, "output": []any{}}},
		{"status queued", map[string]any{"status": "queued", "output": []any{}}},
		{"status Completed", map[string]any{"status": "Completed", "output": []any{}}},
		{"status with a blank", map[string]any{"status": "completed ", "output": []any{}}},
		// JSON keys are exact: encoding/json matches a struct's fields ignoring case, the API does not
		{"Status in another case", map[string]any{"Status": "completed", "output": []any{message(outputText("hi"))}}},
		{"STATUS in another case", map[string]any{"STATUS": "completed", "output": []any{message(outputText("hi"))}}},
		{"content part output_audio", completed(message(map[string]any{"type": "output_audio"}))},
		{"output_text without a string", completed(message(map[string]any{"type": "output_text", "text": nil}))},
		{"output_text with no text field", completed(message(map[string]any{"type": "output_text"}))},
		{"message still in progress", completed(msg("in_progress", []any{}))},
		{"message content not a list", completed(msg("completed", "hi"))},
		{"message status a number", completed(msg(1, []any{outputText("ok")}))},
	} {
		if got := classifyBody(t, c.body); got.Kind != contract.Unsupported {
			t.Errorf("%s: got kind %s, want unsupported", c.what, got.Kind)
		}
	}
	if got := contract.Classify(200, []byte(`{"status": "completed", "output": [`)); got.Kind != contract.Unsupported {
		t.Errorf("a body cut short (not JSON): got kind %s, want unsupported", got.Kind)
	}
}

func TestInvalidToolCall(t *testing.T) {
	if got := classifySample(t, "invalid_tool_call"); got.Kind != contract.InvalidToolCall {
		t.Errorf("the invalid_tool_call sample: got kind %s, want invalid_tool_call", got.Kind)
	}
	const absent = "(absent)"
	for _, c := range []struct {
		what, field string
		value       any
	}{
		{"no call_id", "call_id", absent},
		{"an empty call_id", "call_id", ""},
		{"call_id null", "call_id", nil},
		{"call_id a number", "call_id", 7},
		{"no name", "name", absent},
		{"an empty name", "name", ""},
		{"name null", "name", nil},
		{"no arguments", "arguments", absent},
		{"arguments null", "arguments", nil},
		{"arguments as an object", "arguments", map[string]any{"order_id": "o-1"}},
		{"empty arguments", "arguments", ""},
	} {
		body := bodyOf(t, "tool_call_o1")
		call := itemOf(body, 1)
		if c.value == absent {
			delete(call, c.field)
		} else {
			call[c.field] = c.value
		}
		if got := classifyBody(t, body); got.Kind != contract.InvalidToolCall {
			t.Errorf("a function_call with %s: got kind %s, want invalid_tool_call", c.what, got.Kind)
		}
	}
	second := bodyOf(t, "two_calls")
	itemOf(second, 1)["name"] = ""
	if got := classifyBody(t, second); got.Kind != contract.InvalidToolCall {
		t.Errorf("a batch whose second call has an empty name: got kind %s, want invalid_tool_call", got.Kind)
	}
}

// retryableStatus is the course's table ("Reading the HTTP status"): what may pass if the same
// request goes out again.
var retryableStatus = map[int]bool{408: true, 429: true, 500: true, 502: true, 503: true, 504: true}

func TestEveryStatusClassified(t *testing.T) {
	body := loadSample(t, "answer_o1").Body
	for band := 1; band <= 6; band++ {
		t.Run(fmt.Sprintf("%dxx", band), func(t *testing.T) {
			var wrong []string
			for status := band * 100; status < band*100+100; status++ {
				got := contract.Classify(status, body)
				wantKind, wantRetryable := contract.HTTPError, retryableStatus[status]
				if status == 200 {
					wantKind = contract.Text
				}
				if got.Kind != wantKind || got.Retryable != wantRetryable || contract.IsRetryable(status) != wantRetryable {
					wrong = append(wrong, fmt.Sprintf("%d: got (kind, retryable) (%s, %v), IsRetryable %v; want (%s, %v)",
						status, got.Kind, got.Retryable, contract.IsRetryable(status), wantKind, wantRetryable))
				}
			}
			if len(wrong) > 0 {
				t.Errorf("statuses %dxx with a completed text body, %d wrong:\n%s", band, len(wrong), firstFew(wrong))
			}
		})
	}
}

// decisiveCase is a random output and the kind the chapter's rules give it: the walk stops at the
// first refusal, invalid call or unsupported item; otherwise calls, then text, then empty.
func decisiveCase(t *testing.T, rng *rand.Rand) ([]string, []any, contract.Kind) {
	call := itemOf(bodyOf(t, "tool_call_o1"), 1)
	badCall := itemOf(bodyOf(t, "tool_call_o1"), 1)
	badCall["call_id"] = ""
	type piece struct {
		item    map[string]any
		decides contract.Kind
	}
	pieces := map[string]piece{
		"reasoning":    {map[string]any{"type": "reasoning", "id": "rs_g", "summary": []any{}}, ""},
		"text":         {message(outputText("t")), ""},
		"call":         {call, ""},
		"refusal":      {message(map[string]any{"type": "refusal", "refusal": "no"}), contract.Refused},
		"bad call":     {badCall, contract.InvalidToolCall},
		"unknown item": {map[string]any{"type": "file_search_call", "id": "fs_g"}, contract.Unsupported},
		"bad part":     {message(map[string]any{"type": "output_image"}), contract.Unsupported},
	}
	kinds := []string{"reasoning", "text", "call", "refusal", "bad call", "unknown item", "bad part"}
	var names []string
	var items []any
	var want contract.Kind
	for n := 1 + rng.IntN(5); n > 0; n-- {
		name := kinds[rng.IntN(len(kinds))]
		p := pieces[name]
		item := map[string]any{}
		for k, v := range p.item {
			item[k] = v
		}
		if name == "call" {
			item["call_id"], item["id"] = fmt.Sprintf("call_g%d", len(items)), fmt.Sprintf("fc_g%d", len(items))
		}
		names, items = append(names, name), append(items, item)
		if want == "" {
			want = p.decides
		}
	}
	switch {
	case want != "":
	case slices.Contains(names, "call"):
		want = contract.ToolRequests
	case slices.Contains(names, "text"):
		want = contract.Text
	default:
		want = contract.Empty
	}
	return names, items, want
}

func TestFirstDecisiveItemWins(t *testing.T) {
	for seed := uint64(0); seed < 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := seeded(seed)
			var wrong []string
			for i := 0; i < 40; i++ {
				names, items, want := decisiveCase(t, rng)
				if got := classifyBody(t, completed(items...)); got.Kind != want {
					wrong = append(wrong, fmt.Sprintf("items %q: got %s, want %s", names, got.Kind, want))
				}
			}
			if len(wrong) > 0 {
				t.Errorf("%d generated outputs misread (the first refusal, bad call or unknown shape decides; else calls, then text, then empty):\n%s",
					len(wrong), firstFew(wrong))
			}
		})
	}
}
