// Package types is the agent's vocabulary: messages, tool calls, streamed deltas, and the seams
// later chapters plug into.
package types

// course: begin imports
import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
)

// ---- Messages and tools ---------------------------------------------------------------------

// course: end imports

// Role says who speaks in a message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one turn of a conversation. An assistant message may carry ToolCalls instead of (or
// beside) text; the answer to each call is a RoleTool message whose ToolCallID names that call.
type Message struct {
	Role       Role
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
	Name       string
}

// ToolCall is the model asking to run tool Name with the JSON object Args.
type ToolCall struct {
	ID   string
	Name string
	Args json.RawMessage
}

// ToolDef is a tool the model may call: its name, what it does, and a JSON Schema of its arguments.
type ToolDef struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// CallOptions are the sampling options of one call; nil leaves the server's default.
type CallOptions struct {
	Temperature *float64
	MaxTokens   *int
}

// CallOption sets one of the CallOptions.
type CallOption func(*CallOptions)

// WithTemperature asks for sampling temperature t.
func WithTemperature(t float64) CallOption { return func(o *CallOptions) { o.Temperature = &t } }

// WithMaxTokens caps the answer at n tokens.
func WithMaxTokens(n int) CallOption { return func(o *CallOptions) { o.MaxTokens = &n } }

// NewCallOptions applies opts, in order, to empty options.
func NewCallOptions(opts ...CallOption) CallOptions {
	var o CallOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// ---- Deltas: the pieces of a streamed answer --------------------------------------------------

// Delta is one piece of a streamed answer: TextDelta, ToolCallStartDelta, ToolCallArgsDelta,
// ToolCallEndDelta, UsageDelta, ErrorDelta or DoneDelta.
type Delta interface{ isDelta() }

// TextDelta is a piece of the answer's text (never empty).
type TextDelta struct{ Text string }

// ToolCallStartDelta is the first sight of tool call Index.
type ToolCallStartDelta struct {
	Index    int
	ID, Name string
}

// ToolCallArgsDelta is a fragment of the JSON arguments of tool call Index (never empty).
type ToolCallArgsDelta struct {
	Index    int
	Fragment string
}

// ToolCallEndDelta says tool call Index is complete; Call.Args holds all its fragments joined.
type ToolCallEndDelta struct {
	Index int
	Call  ToolCall
}

// UsageDelta is the tokens the call consumed, as the server counted them.
type UsageDelta struct{ In, Out int }

// ErrorDelta says the stream failed; nothing follows it.
type ErrorDelta struct{ Err error }

// DoneDelta says the stream finished normally; nothing follows it.
type DoneDelta struct{ FinishReason string }

func (TextDelta) isDelta()          {}
func (ToolCallStartDelta) isDelta() {}
func (ToolCallArgsDelta) isDelta()  {}
func (ToolCallEndDelta) isDelta()   {}
func (UsageDelta) isDelta()         {}
func (ErrorDelta) isDelta()         {}
func (DoneDelta) isDelta()          {}

// IsContent reports whether d is something a caller shows or acts on: text or a tool-call delta.
func IsContent(d Delta) bool {
	// course: begin IsContent
	switch d.(type) {
	case TextDelta, ToolCallStartDelta, ToolCallArgsDelta, ToolCallEndDelta:
		return true
	}
	return false
	// course: end IsContent
}

// ---- Folding a stream back into one message ---------------------------------------------------

// Usage is the token count of one call.
type Usage struct{ In, Out int }

// ErrIncomplete is the error of a stream that ended with neither a DoneDelta nor an ErrorDelta.
var ErrIncomplete = errors.New("types: the stream ended without a done or error delta")

// Accumulator folds deltas, in the order they came, into one assistant message. Its zero value
// is ready to use.
type Accumulator struct {
	// course: begin Accumulator_fields
	text   strings.Builder
	calls  map[int]ToolCall // finished calls by index
	usage  Usage
	finish string
	done   bool
	err    error
	// course: end Accumulator_fields
}

// Add takes in one delta. Start and argument deltas need no bookkeeping: the end delta carries
// the whole call.
func (a *Accumulator) Add(d Delta) {
	// course: begin Accumulator_Add
	switch d := d.(type) {
	case TextDelta:
		a.text.WriteString(d.Text)
	case ToolCallEndDelta:
		if a.calls == nil {
			a.calls = make(map[int]ToolCall)
		}
		a.calls[d.Index] = d.Call
	case UsageDelta:
		a.usage = Usage{In: d.In, Out: d.Out}
	case DoneDelta:
		a.done = true
		a.finish = d.FinishReason
	case ErrorDelta:
		if a.err == nil {
			a.err = d.Err
		}
	}
	// course: end Accumulator_Add
}

// Message is the assistant message so far, its tool calls in index order (not the order they
// finished in), a call without arguments given "{}".
func (a *Accumulator) Message() Message {
	// course: begin Accumulator_Message
	indexes := make([]int, 0, len(a.calls))
	for i := range a.calls {
		indexes = append(indexes, i)
	}
	sort.Ints(indexes)
	var calls []ToolCall
	for _, i := range indexes {
		call := a.calls[i]
		if len(call.Args) == 0 {
			call.Args = json.RawMessage("{}")
		}
		calls = append(calls, call)
	}
	return Message{Role: RoleAssistant, Content: a.text.String(), ToolCalls: calls}
	// course: end Accumulator_Message
}

// Usage is the last usage reported (zeros when none was).
func (a *Accumulator) Usage() Usage {
	// course: begin Accumulator_Usage
	return a.usage
	// course: end Accumulator_Usage
}

// FinishReason is why the model stopped ("stop", "tool_calls", "length", ...); "" until the
// DoneDelta.
func (a *Accumulator) FinishReason() string {
	// course: begin Accumulator_FinishReason
	return a.finish
	// course: end Accumulator_FinishReason
}

// Err is why the stream failed: its first ErrorDelta's error, ErrIncomplete without a DoneDelta,
// else nil.
func (a *Accumulator) Err() error {
	// course: begin Accumulator_Err
	if a.err != nil {
		return a.err
	}
	if !a.done {
		return ErrIncomplete
	}
	return nil
	// course: end Accumulator_Err
}

// Collect reads ch to its end and returns the message and usage, with the stream's error.
func Collect(ch <-chan Delta) (Message, Usage, error) {
	// course: begin Collect
	var acc Accumulator
	for d := range ch {
		acc.Add(d)
	}
	return acc.Message(), acc.Usage(), acc.Err()
	// course: end Collect
}

// ---- Providers --------------------------------------------------------------------------------

// Provider is anything that streams a model's answer to a conversation.
//
// ChatStream sends the request and returns an error when there is no stream at all (an *APIError
// for a non-2xx answer, a network error). Otherwise the producer sends deltas on the channel and
// closes it: a good stream ends with exactly one DoneDelta, a failed one with one ErrorDelta, and
// nothing follows either. Cancelling ctx stops the stream and closes the channel; a caller that
// stops reading early must cancel ctx, or the producer waits for it forever.
type Provider interface {
	ChatStream(ctx context.Context, msgs []Message, tools []ToolDef, opts ...CallOption) (<-chan Delta, error)
}

// ---- Seams: declared here, implemented by later chapters --------------------------------------

// Decision is what a gate decides about a tool call.
type Decision int

const (
	Allow Decision = iota
	Deny
	NeedApproval
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	case NeedApproval:
		return "need_approval"
	}
	return "Decision(" + strconv.Itoa(int(d)) + ")"
}

// Verdict is a gate's decision, with the Reason of a denial or the Marker of a pending approval.
type Verdict struct {
	Decision Decision
	Reason   string
	Marker   string
}

// Gate decides whether a tool call may run.
type Gate interface {
	Check(ctx context.Context, c ToolCall) (Verdict, error)
}

// CallContext is what the loop knows when a gate is asked: has untrusted text entered the
// conversation, and in which iteration.
type CallContext struct {
	Tainted bool
	Iter    int
}

// WithCallContext returns a copy of ctx carrying cc.
func WithCallContext(ctx context.Context, cc CallContext) context.Context {
	// course: begin WithCallContext
	return context.WithValue(ctx, callContextKey{}, cc)
	// course: end WithCallContext
}

// CallContextFrom is the CallContext ctx carries. With none attached it is tainted: a gate called
// without context must err on the cautious side, never assume the conversation is clean.
func CallContextFrom(ctx context.Context) CallContext {
	// course: begin CallContextFrom
	if cc, ok := ctx.Value(callContextKey{}).(CallContext); ok {
		return cc
	}
	return CallContext{Tainted: true}
	// course: end CallContextFrom
}

// StepKind says what a step does: call the model, or run a tool.
type StepKind string

const (
	StepLLM  StepKind = "llm"
	StepTool StepKind = "tool"
)

// StepRunner runs each model call and tool call as a named step (a durable runner records the
// results and replays them).
type StepRunner interface {
	RunStep(ctx context.Context, name string, kind StepKind, fn func(context.Context) ([]byte, error)) ([]byte, error)
}

// Direct is the StepRunner that just runs the step.
type Direct struct{}

// RunStep calls fn with ctx.
func (Direct) RunStep(ctx context.Context, name string, kind StepKind, fn func(context.Context) ([]byte, error)) ([]byte, error) {
	// course: begin Direct_RunStep
	return fn(ctx)
	// course: end Direct_RunStep
}

// LLMStep is the step name of the model call of iteration iter: "llm/3".
func LLMStep(iter int) string {
	// course: begin LLMStep
	return "llm/" + strconv.Itoa(iter)
	// course: end LLMStep
}

// ToolStep is the step name of the i-th tool call of iteration iter: "tool/3/0/get_weather".
func ToolStep(iter, i int, name string) string {
	// course: begin ToolStep
	return "tool/" + strconv.Itoa(iter) + "/" + strconv.Itoa(i) + "/" + name
	// course: end ToolStep
}

// StepToolName is the tool name in a tool step's name, and false when step is not one. The name
// is everything after the third "/", so a tool name may itself contain "/".
func StepToolName(step string) (string, bool) {
	// course: begin StepToolName
	parts := strings.SplitN(step, "/", 4)
	if len(parts) != 4 || parts[0] != string(StepTool) || parts[3] == "" {
		return "", false
	}
	if !isNumber(parts[1]) || !isNumber(parts[2]) {
		return "", false
	}
	return parts[3], true
	// course: end StepToolName
}

// course: begin helpers
type callContextKey struct{}

// isNumber accepts ASCII digits only: no sign, no spaces, no other scripts' digits.
func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// course: end helpers
