package contract_test

// The ag00 catalog: the bounded tool loop (loop.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"tinyllm/agent/contract"
)

func samples(t *testing.T, names ...string) []sample {
	var out []sample
	for _, name := range names {
		out = append(out, loadSample(t, name))
	}
	return out
}

func wantSummary(status string, calls int, results []string, modelCalls int) summary {
	return summary{Status: status, Calls: calls, Results: append([]string{}, results...), ModelCalls: modelCalls}
}

func TestNormalRoundTrip(t *testing.T) {
	outcome, s := runScript(t, defaults, samples(t, "tool_call_o1", "answer_o1")...)
	if got, want := summarize(t, outcome, s), wantSummary("answer_ready", 1, []string{"call_o1"}, 2); !reflect.DeepEqual(got, want) {
		t.Errorf("o-1, then the matching answer: got %v, want %v", got, want)
	}
	if !sameJSON(t, outcome.Answer, receiptO1) {
		t.Errorf("Answer: got %#v, want the parsed answer %v", outcome.Answer, receiptO1)
	}
	if got, want := steps(outcome), []string{`(1, tool_requests, ["call_o1"])`, `(2, text, [])`}; !reflect.DeepEqual(got, want) {
		t.Errorf("Steps (turn, kind, executed): got %v, want %v", got, want)
	}
	if first := s.sent[0]; !bytes.Equal(first, encode(t, baseRequest())) {
		t.Errorf("the first request must be the one given: got %s", first)
	}
}

func TestResultEchoesCallID(t *testing.T) {
	outcome, _ := runScript(t, defaults, toolCall(t, "call_Zx9", "o-1"), loadSample(t, "answer_o1"))
	want := []any{resultItem("call_Zx9", receiptO1)}
	if got := items(t, encode(t, outcome.Results)); !reflect.DeepEqual(got, want) {
		t.Errorf("Results: got %s, want %v (the call_id copied, not the item id fc_...; output the receipt as JSON text)", encode(t, outcome.Results), want)
	}
	item := contract.FunctionCallOutput("call_q", map[string]string{"b": "1", "a": "x"})
	var fields map[string]any
	if err := json.Unmarshal(item, &fields); err != nil {
		t.Fatalf("FunctionCallOutput(\"call_q\", ...): got %q, want a JSON object (%v)", item, err)
	}
	output, _ := fields["output"].(string)
	if len(fields) != 3 || fields["type"] != "function_call_output" || fields["call_id"] != "call_q" ||
		!json.Valid([]byte(output)) || !sameJSON(t, []byte(output), map[string]string{"a": "x", "b": "1"}) {
		t.Errorf("FunctionCallOutput(\"call_q\", {b: 1, a: x}): got %s, want {type function_call_output, call_id call_q, output: the payload as JSON text}", item)
	}
}

// preambleReply is tool_call_preamble with a reasoning item first.
func preambleReply(t *testing.T) sample {
	body := bodyOf(t, "tool_call_preamble")
	body["output"] = append([]any{itemOf(bodyOf(t, "tool_call_o1"), 0)}, outputOf(body)...)
	return withBody(t, body)
}

// turnTail is what a turn adds to the input: its output items unchanged, then a result for each call.
func turnTail(t *testing.T, reply sample) []any {
	var body map[string]any
	if err := json.Unmarshal(reply.Body, &body); err != nil {
		t.Fatal(err)
	}
	tail := append([]any{}, outputOf(body)...)
	for _, item := range outputOf(body) {
		if m := item.(map[string]any); m["type"] == "function_call" {
			tail = append(tail, resultItem(m["call_id"].(string), receiptO1))
		}
	}
	return tail
}

func TestNextInputKeepsOutputItems(t *testing.T) {
	t.Run("bytes-as-received", sentAsReceived)
	for _, c := range []string{"reasoning-preamble-call", "two-calls", "second-turn"} {
		t.Run(c, func(t *testing.T) {
			var replies []sample
			var tail []any
			switch c {
			case "reasoning-preamble-call":
				replies = []sample{preambleReply(t), loadSample(t, "answer_o1")}
				tail = turnTail(t, replies[0])
			case "two-calls":
				replies = samples(t, "two_calls", "answer_o1")
				tail = turnTail(t, replies[0])
			default:
				replies = []sample{toolCall(t, "call_t1", "o-1"), preambleReply(t), loadSample(t, "answer_o1")}
				tail = append(turnTail(t, replies[0]), turnTail(t, replies[1])...)
			}
			with := limits{turns: 3, calls: 3}
			if c == "two-calls" {
				with.calls = 2 // the batch spends the whole budget
			}
			_, s := runScript(t, with, replies...)
			if len(s.sent) != len(replies) {
				t.Fatalf("model calls: got %d, want %d", len(s.sent), len(replies))
			}
			last, original := s.request(len(replies)), value(t, baseRequest()).(map[string]any)
			want := items(t, append(original["input"].([]any), tail...))
			if got := items(t, last["input"]); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: the last input must be the first input, then each turn's output items unchanged (reasoning, preamble "+
					"message, function_call), each followed by that turn's function_call_output items:\ngot types  %v\nwant types %v\ngot  %s\nwant %s",
					c, itemTypes(got), itemTypes(want), encode(t, got), encode(t, want))
			}
			delete(last, "input")
			delete(original, "input")
			if !reflect.DeepEqual(last, original) {
				t.Errorf("%s: the last request besides its input: got %v, want %v (model, tools and budget kept)", c, last, original)
			}
			if !bytes.Equal(s.sent[0], encode(t, baseRequest())) {
				t.Errorf("%s: the first request sent differs from the request given: %s", c, s.sent[0])
			}
		})
	}
}

// TestNextInputKeepsOutputItems compares items as values; the items go back byte for byte too (as
// compact JSON: the key order and the numbers' spelling of the reply kept), since the API may carry
// fields a decoder does not know, and a round trip through Go values reorders keys and turns numbers
// into float64.
func sentAsReceived(t *testing.T) {
	reply := loadSample(t, "tool_call_o1")
	var body struct {
		Output []json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(reply.Body, &body); err != nil {
		t.Fatal(err)
	}
	_, s := runScript(t, defaults, reply, loadSample(t, "answer_o1"))
	if len(s.sent) != 2 {
		t.Fatalf("model calls: got %d, want 2", len(s.sent))
	}
	for i, item := range body.Output {
		var compact bytes.Buffer
		if err := json.Compact(&compact, item); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(s.sent[1], compact.Bytes()) {
			t.Errorf("output item %d must go back as it came (its keys in their order, its values as written): want %s in the "+
				"second request, got %s", i, compact.Bytes(), s.sent[1])
		}
	}
}

func itemTypes(list []any) []string {
	var types []string
	for _, item := range list {
		m, _ := item.(map[string]any)
		name, _ := m["type"].(string)
		if name == "" {
			name, _ = m["role"].(string)
		}
		types = append(types, name)
	}
	return types
}

// editEverything does what a model may do to a body it was handed, which is its own: edit it in
// place at every depth (the bytes of its items, its tools, their schemas).
func editEverything(req *contract.Request) {
	for _, item := range req.Input {
		if i := bytes.Index(item, []byte(`"role"`)); i >= 0 {
			copy(item[i:], `"ROLE"`)
		}
	}
	for i := range req.Tools {
		req.Tools[i].Name = "edited_by_the_model"
		if req.Tools[i].Parameters != nil {
			req.Tools[i].Parameters["edited_by_the_model"] = true
		}
	}
}

func TestSentRequestsAreSnapshots(t *testing.T) {
	marker := json.RawMessage(`{"type": "message", "role": "user", "content": "added by the model's own wrapper"}`)
	for _, c := range []string{"call-then-answer", "two-turns-of-calls", "a model that edits what it was sent"} {
		t.Run(c, func(t *testing.T) {
			edits := strings.HasPrefix(c, "a model that edits")
			replies := samples(t, "tool_call_o1", "answer_o1")
			if c != "call-then-answer" {
				replies = []sample{toolCall(t, "call_s1", "o-1"), toolCall(t, "call_s2", "o-1"), loadSample(t, "answer_o1")}
			}
			// A model that keeps each body it is given, and extends it (a body it was given is its own):
			// neither may change what it kept, nor reach the conversation.
			var kept []*contract.Request
			var left [][]byte
			model := contract.ModelFunc(func(_ context.Context, req *contract.Request) (contract.Reply, error) {
				if received := encode(t, req); bytes.Contains(received, []byte("by the model")) || bytes.Contains(received, []byte("by_the_model")) ||
					bytes.Contains(received, []byte(`"ROLE"`)) {
					t.Errorf("%s: request %d holds what the model did to an earlier body: %s\n"+
						"each body must share nothing with the given request, the conversation or another body", c, len(kept)+1, received)
				}
				if edits {
					editEverything(req)
				}
				req.Input = append(req.Input, marker)
				kept, left = append(kept, req), append(left, encode(t, req))
				if len(kept) > len(replies) {
					t.Fatalf("the loop asked the model for turn %d, but only %d replies were scripted", len(kept), len(replies))
				}
				return replies[len(kept)-1].reply(), nil
			})
			given := baseRequest()
			outcome, err := (&contract.Loop{Model: model, Principal: me, MaxTurns: 3, MaxCalls: 2}).Run(context.Background(), given)
			if err != nil || outcome == nil || outcome.Status != contract.AnswerReady {
				t.Fatalf("%s: got %+v and error %v, want answer_ready", c, outcome, err)
			}
			for turn, body := range kept {
				if now := encode(t, body); !bytes.Equal(now, left[turn]) {
					t.Errorf("%s: the request sent on turn %d changed after it was sent:\nat send %s\nnow     %s\n"+
						"each turn needs a body of its own, with a slice of its own", c, turn+1, left[turn], now)
				}
			}
			if !bytes.Equal(encode(t, given), encode(t, baseRequest())) {
				t.Errorf("%s: Run changed the request it was given: it is now %s", c, encode(t, given))
			}
		})
	}
}

func TestRunsAreIndependent(t *testing.T) {
	first, _ := runScript(t, defaults, samples(t, "tool_call_o1", "answer_o1")...)
	if first.Status != contract.AnswerReady {
		t.Errorf("the first run (read o-1, answer): got %s, want answer_ready", first.Status)
	}
	second, _ := runScript(t, defaults, loadSample(t, "answer_o1"))
	if second.Status != contract.UnverifiedAnswer {
		t.Errorf("a second run that answers without reading: got %s, want unverified_answer (receipts of an earlier run do not count)", second.Status)
	}
	third, s := runScript(t, defaults, samples(t, "tool_call_o1", "answer_o1")...)
	if got, want := summarize(t, third, s), wantSummary("answer_ready", 1, []string{"call_o1"}, 2); !reflect.DeepEqual(got, want) {
		t.Errorf("a third run reusing call_o1: got %v, want %v (call_ids of an earlier run do not count)", got, want)
	}
}

func TestAnswerMustMatchReceipt(t *testing.T) {
	for _, c := range []struct {
		what    string
		replies []string
		status  string
	}{
		{"a status no receipt supports", []string{"tool_call_o1", "answer_o1_wrong_status"}, "unverified_answer"},
		{"a prose answer", []string{"tool_call_o1", "answer_prose"}, "unverified_answer"},
		{"an answer with no tool call at all", []string{"answer_o1"}, "unverified_answer"},
		{"the matching answer", []string{"tool_call_o1", "answer_o1"}, "answer_ready"},
	} {
		if outcome, _ := runScript(t, defaults, samples(t, c.replies...)...); outcome.Status != c.status {
			t.Errorf("%s: got status %s, want %s", c.what, outcome.Status, c.status)
		}
	}
	extra := map[string]any{"note": "verified"}
	for k, v := range receiptO1 {
		extra[k] = v
	}
	outcome, _ := runScript(t, defaults, loadSample(t, "tool_call_o1"), answer(t, string(encode(t, extra))))
	if outcome.Status != contract.UnverifiedAnswer {
		t.Errorf("an answer with a key the receipt lacks: got %s, want unverified_answer (an exact match only)", outcome.Status)
	}
}

// receiptWith is the o-1 receipt with one field changed.
func receiptWith(key string, v any) map[string]any {
	out := map[string]any{}
	for k, x := range receiptO1 {
		out[k] = x
	}
	out[key] = v
	return out
}

func TestNearMissAnswersUnverified(t *testing.T) {
	for _, c := range []struct {
		what   string
		answer any
	}{
		{"a key missing", map[string]any{"order_id": "o-1", "status": "delivered"}},
		{"only the order id", map[string]any{"order_id": "o-1"}},
		{"the status in another case", receiptWith("status", "Delivered")},
		{"the order id in another case", receiptWith("order_id", "O-1")},
		{"the status with a trailing blank", receiptWith("status", "delivered ")},
		{"the receipt inside a list", []any{receiptO1}},
		{"the receipt inside an object", map[string]any{"answer": receiptO1}},
		{"the receipt as a JSON string", string(encode(t, receiptO1))},
		{"an empty object", map[string]any{}},
		{"null", nil},
	} {
		text := string(encode(t, c.answer))
		outcome, _ := runScript(t, defaults, loadSample(t, "tool_call_o1"), answer(t, text))
		if outcome.Status != contract.UnverifiedAnswer || !sameJSON(t, outcome.Answer, c.answer) {
			t.Errorf("the answer text %s (%s) after reading o-1: got (status, answer) (%s, %#v), want (unverified_answer, %s)",
				text, c.what, outcome.Status, outcome.Answer, text)
		}
	}
}

func TestAnswerTextMustBeJSON(t *testing.T) {
	receipt := string(encode(t, receiptO1))
	for _, c := range []struct{ what, text string }{
		{"in a markdown code fence", "```json\n" + receipt + "\n```"},
		{"a sentence before it", "Here it is: " + receipt},
		{"a sentence after it", receipt + " Anything else?"},
		{"two copies", receipt + receipt},
		{"in single quotes", strings.ReplaceAll(receipt, `"`, "'")},
		{"as Go prints a map", fmt.Sprint(receiptO1)},
	} {
		outcome, _ := runScript(t, defaults, loadSample(t, "tool_call_o1"), answer(t, c.text))
		if outcome.Status != contract.UnverifiedAnswer || outcome.Answer != nil {
			t.Errorf("the answer text %q (%s): got (status, answer) (%s, %#v), want (unverified_answer, nil); "+
				"the whole text must be JSON: nothing is dug out of prose or code fences", c.text, c.what, outcome.Status, outcome.Answer)
		}
	}
}

func TestAnswerComparedAsJSON(t *testing.T) {
	pretty, _ := json.MarshalIndent(receiptO1, "", "  ")
	for _, c := range []struct{ what, text string }{
		{"keys in another order", `{"status": "delivered", "source": "read_order", "order_id": "o-1"}`},
		{"no spaces", `{"order_id":"o-1","status":"delivered","source":"read_order"}`},
		{"pretty-printed", string(pretty)},
		{"blank lines around it", "\n  " + string(encode(t, receiptO1)) + "\n"},
		{"escaped characters", `{"order_id": "o\u002d1", "status": "delivered", "source": "read_order"}`},
	} {
		outcome, _ := runScript(t, defaults, loadSample(t, "tool_call_o1"), answer(t, c.text))
		if outcome.Status != contract.AnswerReady || !sameJSON(t, outcome.Answer, receiptO1) {
			t.Errorf("the answer text %q (%s): got (status, answer) (%s, %#v), want (answer_ready, %v); "+
				"equal JSON written differently is the same answer: compare parsed values, not text", c.text, c.what, outcome.Status, outcome.Answer, receiptO1)
		}
	}
}

// wrongAnswers runs the loop on tool_call_o1, then each answer text, and says of each text whose run
// does not end with status and, as the Answer, the JSON value of want(text), what it ended with.
func wrongAnswers(t *testing.T, texts []string, status string, want func(text string) any) []string {
	t.Helper()
	var wrong []string
	for _, text := range texts {
		outcome, _ := runScript(t, defaults, loadSample(t, "tool_call_o1"), answer(t, text))
		if outcome.Status != status || !sameJSON(t, outcome.Answer, want(text)) {
			wrong = append(wrong, fmt.Sprintf("the answer text %q: got (status, answer) (%s, %#v)", text, outcome.Status, outcome.Answer))
		}
	}
	return wrong
}

func TestGeneratedNearReceiptsUnverified(t *testing.T) {
	var texts []string
	for _, v := range receiptNearMisses(3, 40) {
		texts = append(texts, string(encode(t, v)))
	}
	itself := func(text string) any { return json.RawMessage(text) }
	if wrong := wrongAnswers(t, texts, contract.UnverifiedAnswer, itself); len(wrong) > 0 {
		t.Errorf("after reading o-1, %d answers close to the receipt but not equal to it were not unverified_answer (with the parsed answer kept):\n%s",
			len(wrong), firstFew(wrong))
	}
}

func TestGeneratedReceiptRewritingsAccepted(t *testing.T) {
	receipt := func(string) any { return receiptO1 }
	if wrong := wrongAnswers(t, receiptTexts(5, 40), contract.AnswerReady, receipt); len(wrong) > 0 {
		t.Errorf("%d ways of writing the o-1 receipt as JSON were not answer_ready (compare parsed values, not text):\n%s",
			len(wrong), firstFew(wrong))
	}
}

func TestAnswerProseKeptAsNone(t *testing.T) {
	outcome, _ := runScript(t, defaults, samples(t, "tool_call_o1", "answer_prose")...)
	if outcome.Status != contract.UnverifiedAnswer || outcome.Answer != nil {
		t.Errorf("a prose answer: got (status, answer) (%s, %#v), want (unverified_answer, nil)", outcome.Status, outcome.Answer)
	}
	for _, text := range []string{"", "   "} {
		outcome, _ := runScript(t, defaults, loadSample(t, "tool_call_o1"), answer(t, text))
		if outcome.Status != contract.UnverifiedAnswer || outcome.Answer != nil {
			t.Errorf("the answer text %q: got (status, answer) (%s, %#v), want (unverified_answer, nil) (still a text reply)", text, outcome.Status, outcome.Answer)
		}
	}
}

func TestCrossTenantStopsLoop(t *testing.T) {
	outcome, s := runScript(t, defaults, samples(t, "tool_call_o2_cross_tenant", "answer_o1")...)
	if got, want := summarize(t, outcome, s), wantSummary("permission_denied", 1, nil, 1); !reflect.DeepEqual(got, want) {
		t.Errorf("the model asks for o-2 of shop-b: got %v, want %v", got, want)
	}
	if want := map[string]string{"error": "permission_denied"}; !reflect.DeepEqual(outcome.Denial, want) {
		t.Errorf("Denial: got %v, want %v", outcome.Denial, want)
	}
	if got, want := steps(outcome), []string{`(1, tool_requests, [])`}; !reflect.DeepEqual(got, want) {
		t.Errorf("Steps (turn, kind, executed): got %v, want %v", got, want)
	}
}

func TestDeniedCallStopsBatch(t *testing.T) {
	outcome, s := runScript(t, defaults, batch(t, [2]string{"call_bad", "o-2"}, [2]string{"call_good", "o-1"}), loadSample(t, "answer_o1"))
	if got, want := summarize(t, outcome, s), wantSummary("permission_denied", 1, nil, 1); !reflect.DeepEqual(got, want) {
		t.Errorf("a batch of o-2 (foreign), then o-1: got %v, want %v (stop at the denial; o-1 never runs)", got, want)
	}
	if got := steps(outcome); !reflect.DeepEqual(got, []string{`(1, tool_requests, [])`}) {
		t.Errorf("Steps: got %v, want [(1, tool_requests, [])] (a denied call did not run)", got)
	}
	outcome, s = runScript(t, defaults, batch(t, [2]string{"call_good", "o-1"}, [2]string{"call_bad", "o-3"}), loadSample(t, "answer_o1"))
	if got, want := summarize(t, outcome, s), wantSummary("permission_denied", 2, []string{"call_good"}, 1); !reflect.DeepEqual(got, want) {
		t.Errorf("a batch of o-1, then o-3 (another customer's): got %v, want %v", got, want)
	}
	if want := map[string]string{"error": "permission_denied"}; !reflect.DeepEqual(outcome.Denial, want) {
		t.Errorf("Denial: got %v, want %v", outcome.Denial, want)
	}
}

func TestLoopStopsOnEachDenial(t *testing.T) {
	for _, c := range []struct{ what, name, arguments, reason string }{
		{"a call to update_order", "update_order", `{"order_id": "o-1"}`, "unknown_tool"},
		{"a call with a tenant in its arguments", "read_order", `{"order_id": "o-1", "tenant": "shop-a"}`, "invalid_arguments"},
		{"a call for an unknown order", "read_order", `{"order_id": "o-404"}`, "permission_denied"},
		{"a call whose arguments are not JSON", "read_order", "{order_id: o-1", "invalid_arguments"},
	} {
		body := bodyOf(t, "tool_call_o1")
		call := itemOf(body, 1)
		call["call_id"], call["name"], call["arguments"] = "call_d", c.name, c.arguments
		outcome, s := runScript(t, defaults, withBody(t, body), loadSample(t, "answer_o1"))
		if got, want := summarize(t, outcome, s), wantSummary(c.reason, 1, nil, 1); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v, want %v (the denial's reason is the run's status)", c.what, got, want)
		}
		if want := map[string]string{"error": c.reason}; !reflect.DeepEqual(outcome.Denial, want) {
			t.Errorf("%s: Denial got %v, want %v", c.what, outcome.Denial, want)
		}
	}
}

func TestLoopUsesGivenPrincipal(t *testing.T) {
	ownerB := contract.Principal{Tenant: "shop-b", User: "u-2"}
	receiptO2 := `{"order_id": "o-2", "status": "processing", "source": "read_order"}`
	outcome, s := runScript(t, limits{turns: 3, calls: 2, principal: &ownerB}, toolCall(t, "call_b", "o-2"), answer(t, receiptO2))
	if got, want := summarize(t, outcome, s), wantSummary("answer_ready", 1, []string{"call_b"}, 2); !reflect.DeepEqual(got, want) {
		t.Errorf("shop-b/u-2 reads its own o-2: got %v, want %v (the principal passed in decides)", got, want)
	}
	stranger := contract.Principal{Tenant: "shop-a", User: "u-7"}
	outcome, s = runScript(t, limits{turns: 3, calls: 2, principal: &stranger}, toolCall(t, "call_s", "o-1"), loadSample(t, "answer_o1"))
	if got, want := summarize(t, outcome, s), wantSummary("permission_denied", 1, nil, 1); !reflect.DeepEqual(got, want) {
		t.Errorf("shop-a/u-7 asks for o-1 of u-1: got %v, want %v", got, want)
	}
}

func toolCalls(t *testing.T, ids ...string) []sample {
	var out []sample
	for _, id := range ids {
		out = append(out, toolCall(t, id, "o-1"))
	}
	return out
}

func TestBudgetExhaustedAfterAllowedCalls(t *testing.T) {
	outcome, s := runScript(t, limits{turns: 6, calls: 2}, toolCalls(t, "call_1", "call_2", "call_3", "call_4")...)
	if got, want := summarize(t, outcome, s), wantSummary("budget_exhausted", 2, []string{"call_1", "call_2"}, 3); !reflect.DeepEqual(got, want) {
		t.Errorf("a model that asks again and again, MaxCalls 2: got %v, want %v", got, want)
	}
	outcome, s = runScript(t, limits{turns: 3, calls: 0}, toolCall(t, "call_1", "o-1"), loadSample(t, "answer_o1"))
	if got, want := summarize(t, outcome, s), wantSummary("budget_exhausted", 0, nil, 1); !reflect.DeepEqual(got, want) {
		t.Errorf("MaxCalls 0 and one call asked for: got %v, want %v (0 allows no call; it is not 'no limit')", got, want)
	}
	outcome, s = runScript(t, limits{turns: 6, calls: 2}, append(toolCalls(t, "call_1", "call_2"), loadSample(t, "answer_o1"))...)
	if got, want := summarize(t, outcome, s), wantSummary("answer_ready", 2, []string{"call_1", "call_2"}, 3); !reflect.DeepEqual(got, want) {
		t.Errorf("exactly MaxCalls 2 calls, then the answer: got %v, want %v (the second call is allowed)", got, want)
	}
}

func TestOversizedBatchExecutesNothing(t *testing.T) {
	for _, c := range []struct {
		what    string
		replies []sample
		calls   int
		want    summary
	}{
		{"a batch of 2 with MaxCalls 1 (none of the batch runs)", samples(t, "two_calls"), 1, wantSummary("budget_exhausted", 0, nil, 1)},
		{"1 call, then a batch of 2 with MaxCalls 2", []sample{toolCall(t, "call_first", "o-1"), loadSample(t, "two_calls")}, 2,
			wantSummary("budget_exhausted", 1, []string{"call_first"}, 2)},
		{"a batch of 2 with MaxCalls 2 (a batch that fits runs whole)", samples(t, "two_calls", "answer_o1"), 2,
			wantSummary("answer_ready", 2, []string{"call_batch_a", "call_batch_b"}, 2)},
	} {
		outcome, s := runScript(t, limits{turns: 3, calls: c.calls}, c.replies...)
		if got := summarize(t, outcome, s); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.what, got, c.want)
		}
	}
}

func TestDuplicateCallIDRejected(t *testing.T) {
	for _, c := range []struct {
		what    string
		replies []sample
		calls   int
		want    summary
	}{
		{"two calls sharing call_dup in one batch (nothing runs)", samples(t, "duplicate_call_ids", "answer_o1"), 2,
			wantSummary("duplicate_call_id", 0, nil, 1)},
		{"a batch call_x, call_y, call_x", []sample{batch(t, [2]string{"call_x", "o-1"}, [2]string{"call_y", "o-1"}, [2]string{"call_x", "o-1"})}, 5,
			wantSummary("duplicate_call_id", 0, nil, 1)},
		{"two calls sharing call_dup with MaxCalls 1 (ids are checked before the budget)", samples(t, "duplicate_call_ids"), 1,
			wantSummary("duplicate_call_id", 0, nil, 1)},
		{"call_a and call_A in one batch are two ids (compared exactly)",
			[]sample{batch(t, [2]string{"call_a", "o-1"}, [2]string{"call_A", "o-1"}), loadSample(t, "answer_o1")}, 5,
			wantSummary("answer_ready", 2, []string{"call_a", "call_A"}, 2)},
		{"turn 2 reuses turn 1's call_same", append(toolCalls(t, "call_same", "call_same"), loadSample(t, "answer_o1")), 5,
			wantSummary("duplicate_call_id", 1, []string{"call_same"}, 2)},
		{"turn 3 reuses turn 1's call_one", toolCalls(t, "call_one", "call_two", "call_one"), 5,
			wantSummary("duplicate_call_id", 2, []string{"call_one", "call_two"}, 3)},
	} {
		outcome, s := runScript(t, limits{turns: 3, calls: c.calls}, c.replies...)
		if got := summarize(t, outcome, s); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.what, got, c.want)
		}
	}
}

func TestTurnLimit(t *testing.T) {
	replies := toolCalls(t, "call_1", "call_2", "call_3", "call_4")
	outcome, s := runScript(t, limits{turns: 2, calls: 10}, replies...)
	if got, want := summarize(t, outcome, s), wantSummary("turn_limit", 2, []string{"call_1", "call_2"}, 2); !reflect.DeepEqual(got, want) {
		t.Errorf("tool calls every turn, MaxTurns 2: got %v, want %v", got, want)
	}
	if v := outcome.Verdict; v == nil || v.Kind != contract.ToolRequests || !reflect.DeepEqual(callIDs(v.Calls), []string{"call_2"}) {
		t.Errorf("Verdict after turn_limit: got %+v, want the last classification: tool_requests with call_2", v)
	}
	outcome, s = runScript(t, limits{turns: 2, calls: 2}, replies...)
	if got, want := summarize(t, outcome, s), wantSummary("turn_limit", 2, []string{"call_1", "call_2"}, 2); !reflect.DeepEqual(got, want) {
		t.Errorf("tool calls every turn, MaxTurns 2 and MaxCalls 2 (both used up): got %v, want %v (no call was refused)", got, want)
	}
	outcome, s = runScript(t, limits{turns: 0, calls: 2}, loadSample(t, "answer_o1"))
	if got, want := summarize(t, outcome, s), wantSummary("turn_limit", 0, nil, 0); !reflect.DeepEqual(got, want) {
		t.Errorf("MaxTurns 0: got %v, want %v (no model call at all)", got, want)
	}
	if outcome.Verdict != nil {
		t.Errorf("MaxTurns 0: Verdict got %+v, want nil (nothing was classified)", outcome.Verdict)
	}
	outcome, s = runScript(t, limits{turns: 3, calls: 10}, append(toolCalls(t, "call_1", "call_2"), loadSample(t, "answer_o1"))...)
	if got, want := summarize(t, outcome, s), wantSummary("answer_ready", 2, []string{"call_1", "call_2"}, 3); !reflect.DeepEqual(got, want) {
		t.Errorf("the answer on the last allowed turn (3 of 3): got %v, want %v", got, want)
	}
}

func TestLoopStopsOnTerminalKinds(t *testing.T) {
	const anyReason = "(any reason)"
	for _, c := range []struct {
		name, status, reason string
		retryable            bool
	}{
		{"refusal", "refused", "I can't help with that request.", false},
		{"incomplete_max_tokens", "incomplete", "max_output_tokens", false},
		{"incomplete_content_filter", "incomplete", "content_filter", false},
		{"failed", "failed", "server_error", false},
		{"cancelled", "cancelled", anyReason, false},
		{"empty_output", "empty", anyReason, false},
		{"unsupported_item", "unsupported", anyReason, false},
		{"invalid_tool_call", "invalid_tool_call", anyReason, false},
		{"http_429", "http_error", "rate_limit_exceeded", true},
		{"http_500", "http_error", "server_error", true},
		{"http_401", "http_error", "invalid_api_key", false},
		{"http_408", "http_error", "rate_limit_exceeded", true},
		{"http_201", "http_error", anyReason, false},
		{"incomplete_null_details", "incomplete", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var chosen sample
			switch c.name {
			case "http_408":
				chosen = loadSample(t, "http_429")
				chosen.HTTPStatus = 408
			case "http_201":
				chosen = loadSample(t, "answer_o1")
				chosen.HTTPStatus = 201
			case "incomplete_null_details":
				body := bodyOf(t, "incomplete_max_tokens")
				body["incomplete_details"] = nil
				chosen = withBody(t, body)
			default:
				chosen = loadSample(t, c.name)
			}
			outcome, s := runScript(t, defaults, chosen, loadSample(t, "answer_o1"))
			if got, want := summarize(t, outcome, s), wantSummary(c.status, 0, nil, 1); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: got %v, want %v (stop at once, nothing run, no retry here)", c.name, got, want)
			}
			if got, want := steps(outcome), []string{fmt.Sprintf("(1, %s, [])", c.status)}; !reflect.DeepEqual(got, want) {
				t.Errorf("%s: Steps (turn, kind, executed): got %v, want %v", c.name, got, want)
			}
			v := outcome.Verdict
			if v == nil {
				t.Fatalf("%s: Verdict is nil, want the classification of the reply", c.name)
			}
			if v.Retryable != c.retryable {
				t.Errorf("%s: Verdict.Retryable got %v, want %v", c.name, v.Retryable, c.retryable)
			}
			if c.reason != anyReason && v.Reason != c.reason {
				t.Errorf("%s: Verdict.Reason got %q, want %q", c.name, v.Reason, c.reason)
			}
		})
	}
	t.Run("no-reply", func(t *testing.T) {
		sends := 0
		model := contract.ModelFunc(func(context.Context, *contract.Request) (contract.Reply, error) {
			sends++
			return contract.Reply{}, errNoReply
		})
		outcome, err := (&contract.Loop{Model: model, Principal: me, MaxTurns: 3, MaxCalls: 2}).Run(context.Background(), baseRequest())
		if outcome != nil || !errors.Is(err, errNoReply) || sends != 1 {
			t.Errorf("a model whose Send fails: got outcome %+v, error %v after %d sends; want no outcome and Send's error "+
				"(errors.Is finds it), after one send: the loop never retries", outcome, err, sends)
		}
	})

	t.Run("send-gets-the-callers-context", func(t *testing.T) {
		ctx := context.WithValue(context.Background(), callerKey{}, "the caller's")
		var seen []any
		model := contract.ModelFunc(func(got context.Context, req *contract.Request) (contract.Reply, error) {
			seen = append(seen, got.Value(callerKey{}))
			if len(seen) == 1 {
				return toolCall(t, "call_1", "o-1").reply(), nil
			}
			return loadSample(t, "answer_o1").reply(), nil
		})
		if _, err := (&contract.Loop{Model: model, Principal: me, MaxTurns: 3, MaxCalls: 2}).Run(ctx, baseRequest()); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if want := []any{"the caller's", "the caller's"}; !reflect.DeepEqual(seen, want) {
			t.Errorf("the context each Send got carried %v, want %v: Send takes Run's ctx (its deadline, its cancel, "+
				"its values), not one of its own", seen, want)
		}
	})
	t.Run("send-out-of-time", func(t *testing.T) {
		for _, failure := range []error{context.DeadlineExceeded, fmt.Errorf("post: %w", context.DeadlineExceeded),
			context.Canceled} {
			model := contract.ModelFunc(func(context.Context, *contract.Request) (contract.Reply, error) {
				return contract.Reply{}, failure
			})
			outcome, err := (&contract.Loop{Model: model, Principal: me, MaxTurns: 3, MaxCalls: 2}).Run(context.Background(), baseRequest())
			if outcome != nil || !errors.Is(err, failure) {
				t.Errorf("a Send that fails with %v: got outcome %+v, error %v; want no outcome and an error errors.Is "+
					"finds it in (running out of time is no reply: not a turn limit, not an answer)", failure, outcome, err)
			}
		}
	})
}

// callerKey marks the context Run was given.
type callerKey struct{}

func TestLoopDefaults(t *testing.T) {
	s := &script{t: t, replies: toolCalls(t, "call_1", "call_2", "call_3", "call_4")}
	loop := contract.NewLoop(s)
	if loop.Model != contract.Model(s) || loop.Principal != contract.TrustedPrincipal || loop.MaxTurns != 3 || loop.MaxCalls != 2 {
		t.Errorf("NewLoop(model): got %+v, want the model given, TrustedPrincipal, MaxTurns 3 and MaxCalls 2", loop)
	}
	outcome, err := loop.Run(context.Background(), baseRequest())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := summarize(t, outcome, s), wantSummary("budget_exhausted", 2, []string{"call_1", "call_2"}, 3); !reflect.DeepEqual(got, want) {
		t.Errorf("NewLoop(model).Run with its defaults (3 turns, 2 calls): got %v, want %v", got, want)
	}
	s = &script{t: t, replies: []sample{toolCall(t, "call_1", "o-1"), loadSample(t, "answer_o1")}}
	if outcome, err = contract.NewLoop(s).Run(context.Background(), baseRequest()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := summarize(t, outcome, s), wantSummary("answer_ready", 1, []string{"call_1"}, 2); !reflect.DeepEqual(got, want) {
		t.Errorf("NewLoop(model).Run reading o-1 as the default principal shop-a/u-1: got %v, want %v", got, want)
	}
	s = &script{t: t, replies: toolCalls(t, "call_1", "call_2", "call_3")}
	loop = contract.NewLoop(s)
	loop.MaxCalls = 9
	if outcome, err = loop.Run(context.Background(), baseRequest()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := summarize(t, outcome, s), wantSummary("turn_limit", 3, []string{"call_1", "call_2", "call_3"}, 3); !reflect.DeepEqual(got, want) {
		t.Errorf("MaxCalls 9 and the default MaxTurns 3: got %v, want %v", got, want)
	}
}
