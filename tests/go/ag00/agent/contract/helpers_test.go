package contract_test

// Helpers of the ag00 catalog: the authored sample replies of fixtures/ag00 (COURSE_FIXTURES), a
// scripted model that answers with them and records what it was sent, and JSON compared as values.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"tinyllm/agent/contract"
)

const (
	question = "What is the status of order o-1?"
	model    = "sample-model"
)

// me is the customer the loop acts for unless a test says otherwise: the owner of o-1.
var me = contract.Principal{Tenant: "shop-a", User: "u-1"}

var receiptO1 = map[string]any{"order_id": "o-1", "status": "delivered", "source": "read_order"}

// sample is one authored reply: the HTTP status and the body it came with.
type sample struct {
	HTTPStatus int             `json:"http_status"`
	Body       json.RawMessage `json:"body"`
}

var (
	fixturesMu sync.Mutex
	fixtures   = map[string][]byte{}
)

// loadSample reads fixtures/ag00/<name>.json from the folder COURSE_FIXTURES names (course check
// sets it); each call returns a sample of its own.
func loadSample(t *testing.T, name string) sample {
	t.Helper()
	fixturesMu.Lock()
	raw, ok := fixtures[name]
	if !ok {
		dir := os.Getenv("COURSE_FIXTURES")
		if dir == "" {
			fixturesMu.Unlock()
			t.Fatal("COURSE_FIXTURES is not set: run the catalog with `course check`, or set it to the chapter's fixtures folder")
		}
		var err error
		if raw, err = os.ReadFile(filepath.Join(dir, name+".json")); err != nil {
			fixturesMu.Unlock()
			t.Fatalf("reading the sample %s: %v", name, err)
		}
		fixtures[name] = raw
	}
	fixturesMu.Unlock()
	var s sample
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("the sample %s: %v", name, err)
	}
	return s
}

// reply is the sample as the model's Reply, its body a copy the loop may do anything with.
func (s sample) reply() contract.Reply {
	return contract.Reply{StatusCode: s.HTTPStatus, Body: bytes.Clone(s.Body)}
}

// bodyOf is a sample's body decoded into plain values, for a test to change.
func bodyOf(t *testing.T, name string) map[string]any {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(loadSample(t, name).Body, &body); err != nil {
		t.Fatalf("the body of %s: %v", name, err)
	}
	return body
}

// outputOf is the output list of a decoded body, and item i of it.
func outputOf(body map[string]any) []any { return body["output"].([]any) }

func itemOf(body map[string]any, i int) map[string]any { return outputOf(body)[i].(map[string]any) }

// withBody is a 200 sample holding body.
func withBody(t *testing.T, body any) sample {
	return sample{HTTPStatus: 200, Body: encode(t, body)}
}

// completed is the body of a completed reply holding items.
func completed(items ...any) map[string]any {
	return map[string]any{"status": "completed", "output": append([]any{}, items...)}
}

// toolCall is the o-1 tool-call sample with its own call_id (and item id) and order id.
func toolCall(t *testing.T, callID, orderID string) sample {
	body := bodyOf(t, "tool_call_o1")
	call := itemOf(body, 1)
	call["call_id"], call["id"] = callID, "fc_"+callID
	call["arguments"] = string(encode(t, map[string]string{"order_id": orderID}))
	return withBody(t, body)
}

// answer is the answer sample with its text replaced.
func answer(t *testing.T, text string) sample {
	body := bodyOf(t, "answer_o1")
	itemOf(body, 0)["content"].([]any)[0].(map[string]any)["text"] = text
	return withBody(t, body)
}

// batch is one reply holding a function_call for each {call_id, order_id}, in that order.
func batch(t *testing.T, calls ...[2]string) sample {
	body := bodyOf(t, "two_calls")
	var items []any
	for _, c := range calls {
		item := map[string]any{}
		for k, v := range itemOf(body, 0) {
			item[k] = v
		}
		item["id"], item["call_id"] = "fc_"+c[0], c[0]
		item["arguments"] = string(encode(t, map[string]string{"order_id": c[1]}))
		items = append(items, item)
	}
	body["output"] = items
	return withBody(t, body)
}

// baseRequest is a request written out by hand, so that the loop's tests do not lean on BuildRequest.
func baseRequest() *contract.Request {
	return &contract.Request{
		Model: model,
		Input: []json.RawMessage{
			json.RawMessage(`{"role": "developer", "content": "Use read_order; reply with its receipt as JSON."}`),
			json.RawMessage(`{"role": "user", "content": "What is the status of order o-1?"}`),
		},
		Tools:           []contract.Tool{{Type: "function", Name: "read_order", Strict: true, Parameters: map[string]any{"type": "object"}}},
		MaxOutputTokens: 500,
	}
}

// script stands in for the model: it answers each request with the next scripted reply, and keeps
// each request as JSON, as it was when sent.
type script struct {
	t       *testing.T
	replies []sample
	sent    [][]byte
}

func (s *script) Send(_ context.Context, req *contract.Request) (contract.Reply, error) {
	s.sent = append(s.sent, encode(s.t, req))
	turn := len(s.sent)
	if turn > len(s.replies) {
		s.t.Fatalf("the loop asked the model for turn %d, but only %d replies were scripted", turn, len(s.replies))
	}
	return s.replies[turn-1].reply(), nil
}

// request is the request sent on turn n (from 1), decoded.
func (s *script) request(n int) map[string]any {
	var req map[string]any
	if err := json.Unmarshal(s.sent[n-1], &req); err != nil {
		s.t.Fatalf("request %d: %v", n, err)
	}
	return req
}

// limits are what a test gives the loop: MaxTurns 3, MaxCalls 2 and the owner of o-1 unless it
// says otherwise.
type limits struct {
	turns, calls int
	principal    *contract.Principal
}

var defaults = limits{turns: 3, calls: 2}

// runScript runs the loop on a hand-written request with the scripted replies, and checks that the
// request it was given is left as it was.
func runScript(t *testing.T, with limits, replies ...sample) (*contract.Outcome, *script) {
	t.Helper()
	s := &script{t: t, replies: replies}
	principal := me
	if with.principal != nil {
		principal = *with.principal
	}
	given := baseRequest()
	loop := &contract.Loop{Model: s, Principal: principal, MaxTurns: with.turns, MaxCalls: with.calls}
	outcome, err := loop.Run(context.Background(), given)
	if err != nil || outcome == nil {
		t.Fatalf("Run: got outcome %v and error %v, want an outcome and no error (the model answered every turn)", outcome, err)
	}
	if now, want := encode(t, given), encode(t, baseRequest()); !bytes.Equal(now, want) {
		t.Fatalf("Run changed the request it was given: it is now %s", now)
	}
	return outcome, s
}

// summary is what most loop tests compare: the status, the calls counted, the call_ids of the
// results and the number of model calls.
type summary struct {
	Status     string
	Calls      int
	Results    []string
	ModelCalls int
}

func summarize(t *testing.T, o *contract.Outcome, s *script) summary {
	t.Helper()
	return summary{Status: o.Status, Calls: o.Calls, Results: resultIDs(t, o), ModelCalls: len(s.sent)}
}

func resultIDs(t *testing.T, o *contract.Outcome) []string {
	t.Helper()
	ids := []string{}
	for _, item := range o.Results {
		var result struct {
			CallID string `json:"call_id"`
		}
		if err := json.Unmarshal(item, &result); err != nil {
			t.Fatalf("a result item is not a JSON object: %s", item)
		}
		ids = append(ids, result.CallID)
	}
	return ids
}

func (s summary) String() string {
	return fmt.Sprintf("{status %s, calls %d, results %q, model calls %d}", s.Status, s.Calls, s.Results, s.ModelCalls)
}

// steps is each Step as (turn, kind, executed), comparable and readable.
func steps(o *contract.Outcome) []string {
	out := []string{}
	for _, s := range o.Steps {
		out = append(out, fmt.Sprintf("(%d, %s, %q)", s.Turn, s.Kind, s.Executed))
	}
	return out
}

// encode is v as JSON.
func encode(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding %#v: %v", v, err)
	}
	return data
}

// value is v as JSON decodes it (maps, slices, strings, float64, bool, nil): JSON text and Go
// values made comparable. Raw JSON is decoded as it is; anything else is encoded first.
func value(t *testing.T, v any) any {
	t.Helper()
	var data []byte
	switch v := v.(type) {
	case []byte:
		data = v
	case json.RawMessage:
		data = v
	default:
		data = encode(t, v)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("not JSON: %q (%v)", data, err)
	}
	return out
}

func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	return reflect.DeepEqual(value(t, a), value(t, b))
}

// items are input items decoded, each function_call_output's output text read as the value it
// holds: equal results written with other spacing compare equal.
func items(t *testing.T, list any) []any {
	t.Helper()
	decoded, ok := value(t, list).([]any)
	if !ok {
		t.Fatalf("not a JSON list: %v", list)
	}
	for _, item := range decoded {
		if m, ok := item.(map[string]any); ok && m["type"] == "function_call_output" {
			if text, ok := m["output"].(string); ok {
				var payload any
				if json.Unmarshal([]byte(text), &payload) == nil {
					m["output"] = payload
				}
			}
		}
	}
	return decoded
}

// resultItem is the function_call_output item that returns payload for callID.
func resultItem(callID string, payload any) map[string]any {
	return map[string]any{"type": "function_call_output", "call_id": callID, "output": payload}
}

var errNoReply = errors.New("the connection was reset before any reply")

// firstFew is the first eight of what went wrong, one a line: enough to see the pattern.
func firstFew(wrong []string) string {
	return strings.Join(wrong[:min(8, len(wrong))], "\n")
}
