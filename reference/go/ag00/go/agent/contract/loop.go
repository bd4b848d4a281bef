package contract

// course: begin imports
import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// course: end imports
// The defaults of NewLoop.
const (
	MaxTurns = 3 // model calls per run
	MaxCalls = 2 // tool calls per run, across all turns
)

// How a run can end, besides a refusal reason of ExecuteCall or a Kind of Classify.
const (
	AnswerReady      = "answer_ready"      // the answer equals a receipt of this run: the task is done
	UnverifiedAnswer = "unverified_answer" // an answer no receipt of this run supports
	BudgetExhausted  = "budget_exhausted"  // the next batch of calls would exceed MaxCalls
	TurnLimit        = "turn_limit"        // MaxTurns model calls, and still no end
	DuplicateCallID  = "duplicate_call_id" // a call_id seen before, in this batch or an earlier one
)

// A Reply is one HTTP exchange as the loop sees it: the status code and the body as received.
type Reply struct {
	StatusCode int
	Body       []byte
}

// A Model sends one request body and returns the reply. The *Request it is given is its own: it
// may keep it, or change it, and the loop never touches it again. An error means no reply came
// (the connection failed, ctx ended); an HTTP error status is a Reply like any other.
type Model interface {
	Send(ctx context.Context, req *Request) (Reply, error)
}

// ModelFunc lets an ordinary function be a Model.
type ModelFunc func(ctx context.Context, req *Request) (Reply, error)

// Send calls f(ctx, req).
func (f ModelFunc) Send(ctx context.Context, req *Request) (Reply, error) { return f(ctx, req) }

// A Step is one turn: what its reply was classified as, and which calls ran.
type Step struct {
	Turn     int
	Kind     Kind
	Executed []string // the call_ids, in the order they ran
}

// An Outcome is how a run ended.
type Outcome struct {
	Status  string            // AnswerReady, UnverifiedAnswer, a limit, a refusal reason, or a Kind
	Calls   int               // tool calls run, counted against MaxCalls
	Results []json.RawMessage // the function_call_output items sent back
	Steps   []Step
	Verdict *Verdict          // the last classification; nil when no reply came
	Denial  map[string]string // what a refused call returned
	Answer  any               // the final text parsed as JSON, verified or not; nil when it is not JSON
}

// A Loop drives one request to a final status, for one principal, within its limits. Zero limits
// allow nothing: MaxTurns 0 sends nothing, MaxCalls 0 runs no call.
type Loop struct {
	Model     Model
	Principal Principal
	MaxTurns  int // model calls per run
	MaxCalls  int // tool calls per run, across all turns
}

// NewLoop returns a Loop that sends through model, acts for TrustedPrincipal, and allows MaxTurns
// turns and MaxCalls calls.
func NewLoop(model Model) *Loop {
	return &Loop{Model: model, Principal: TrustedPrincipal, MaxTurns: MaxTurns, MaxCalls: MaxCalls}
}

// FunctionCallOutput is the input item that returns payload to the model as the result of the call
// callID: {"type": "function_call_output", "call_id": callID, "output": payload as JSON text}.
func FunctionCallOutput(callID string, payload map[string]string) json.RawMessage {
	// course: begin FunctionCallOutput
	output, _ := json.Marshal(payload) // strings always encode; a map's keys come out sorted
	item, _ := json.Marshal(map[string]string{"type": "function_call_output", "call_id": callID, "output": string(output)})
	return item
	// course: end FunctionCallOutput
}

// Run sends req, then the conversation as it grows, at most l.MaxTurns times, and returns how the
// run ended. Each turn's reply is classified: tool requests run (when the whole batch passes its
// checks) and their results go back; a text answer, a refusal, an error or any other kind ends the
// run, which never retries. req is left as it was. The error is Send's, when a turn got no reply.
func (l *Loop) Run(ctx context.Context, req *Request) (*Outcome, error) {
	// course: begin Loop_Run
	outcome := &Outcome{}
	conversation := slices.Clone(req.Input) // ours: the caller's request stays as it was
	var receipts []map[string]string        // what this run's reads returned: the only evidence an answer may lean on
	seen := make(map[string]bool)           // this run's call_ids
	for turn := 1; turn <= l.MaxTurns; turn++ {
		sent := copyRequest(req, conversation) // a body of its own every turn, for the model to keep or edit
		reply, err := l.Model.Send(ctx, sent)
		if err != nil {
			return nil, fmt.Errorf("turn %d: %w", turn, err)
		}
		verdict := Classify(reply.StatusCode, reply.Body)
		outcome.Verdict = &verdict
		outcome.Steps = append(outcome.Steps, Step{Turn: turn, Kind: verdict.Kind})
		step := &outcome.Steps[len(outcome.Steps)-1]

		if verdict.Kind == Text {
			outcome.Answer = parseJSON(verdict.Text)
			outcome.Status = UnverifiedAnswer
			if matchesReceipt(outcome.Answer, receipts) {
				outcome.Status = AnswerReady
			}
			return outcome, nil
		}
		if verdict.Kind != ToolRequests {
			outcome.Status = string(verdict.Kind) // refused, incomplete, http_error...: never retried here
			return outcome, nil
		}

		// The next input repeats the model's own output items (reasoning, preamble, calls) before
		// the results: a result must follow the call it answers.
		conversation = append(conversation, verdict.Output...)
		// The whole batch passes, or none of it runs: half a batch would leave calls the model asked
		// for without results, and spend budget on work the run then drops.
		if !freshCallIDs(verdict.Calls, seen) {
			outcome.Status = DuplicateCallID
			return outcome, nil
		}
		if outcome.Calls+len(verdict.Calls) > l.MaxCalls {
			outcome.Status = BudgetExhausted
			return outcome, nil
		}
		for _, call := range verdict.Calls {
			seen[call.CallID] = true
			outcome.Calls++
			result := ExecuteCall(call, l.Principal)
			if result.Denied != "" {
				outcome.Status, outcome.Denial = result.Denied, result.Payload
				return outcome, nil
			}
			receipts = append(receipts, result.Payload)
			item := FunctionCallOutput(call.CallID, result.Payload)
			outcome.Results = append(outcome.Results, item)
			conversation = append(conversation, item)
			step.Executed = append(step.Executed, call.CallID)
		}
	}
	outcome.Status = TurnLimit
	return outcome, nil
	// course: end Loop_Run
}

// course: begin helpers
// copyRequest is req with conversation as its Input, sharing nothing with either: a struct copy
// alone would share the Input and Tools arrays, each item's bytes and each schema's maps, so that
// a model editing its body in place would edit the caller's request and the conversation too.
func copyRequest(req *Request, conversation []json.RawMessage) *Request {
	sent := *req
	sent.Input = make([]json.RawMessage, len(conversation))
	for i, item := range conversation {
		sent.Input[i] = slices.Clone(item)
	}
	sent.Tools = make([]Tool, len(req.Tools))
	for i, tool := range req.Tools {
		tool.Parameters = copySchema(tool.Parameters)
		sent.Tools[i] = tool
	}
	return &sent
}

// copySchema is a deep copy of a JSON Schema, made by writing it as JSON and reading it back: new
// maps and slices to the last level (nil stays nil). A schema holds only what JSON can write.
func copySchema(schema map[string]any) map[string]any {
	text, _ := json.Marshal(schema)
	var copied map[string]any
	_ = json.Unmarshal(text, &copied)
	return copied
}

// freshCallIDs reports whether no call of the batch repeats a call_id seen before, or one of another
// call of the batch: two results under one call_id cannot be told apart.
func freshCallIDs(batch []Call, seen map[string]bool) bool {
	inBatch := make(map[string]bool, len(batch))
	for _, call := range batch {
		if seen[call.CallID] || inBatch[call.CallID] {
			return false
		}
		inBatch[call.CallID] = true
	}
	return true
}

// parseJSON is the value of the whole text as JSON, or nil when it is not JSON: nothing is fished
// out of a sentence or a code fence around it.
func parseJSON(text string) any {
	var value any
	if json.Unmarshal([]byte(text), &value) != nil {
		return nil
	}
	return value
}

// matchesReceipt reports whether answer, a parsed JSON value, equals one of the receipts: an object
// with exactly a receipt's keys, each holding the same string. Values are compared, not text, so
// key order and spacing do not matter.
func matchesReceipt(answer any, receipts []map[string]string) bool {
	fields, ok := answer.(map[string]any)
	if !ok {
		return false
	}
	return slices.ContainsFunc(receipts, func(receipt map[string]string) bool {
		if len(fields) != len(receipt) {
			return false
		}
		for key, want := range receipt {
			if got, ok := fields[key].(string); !ok || got != want {
				return false
			}
		}
		return true
	})
}

// course: end helpers
