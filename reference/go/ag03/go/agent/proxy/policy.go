package proxy

// course: begin imports
import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// course: end imports

// MaxTurns bounds the upstream responses one client request may cost.
const MaxTurns = 4

// The content types of the answers, and the header that tells the official SDKs whether to retry
// one: they retry 408, 409, 429 and every 5xx (twice, by default) unless it says "false", and a retry
// would replay the whole conversation, the tools of the turns before the failure included.
const (
	ContentSSE  = "text/event-stream"
	ContentJSON = "application/json"
	ShouldRetry = "X-Should-Retry"
)

// Policy says how a request with tools is answered.
type Policy string

const (
	// BufferedFinalStream (the default) reads the upstream's responses here and answers with one
	// final response, as JSON or as a synthesized event stream, as the client asked.
	BufferedFinalStream Policy = "buffered_final_stream"
	// ProgressEvents forwards text as it streams, and ends in a completed or a failed response.
	ProgressEvents Policy = "progress_events"
)

// ErrUnknownPolicy is the error of Handle when the Proxy's Policy is neither of the two.
var ErrUnknownPolicy = errors.New("proxy: unknown policy")

// Tool runs one function call on its parsed arguments and returns the output the model reads. An
// error is the tool's failure (tool_failed); ctx ends when the client's request does.
type Tool func(ctx context.Context, arguments map[string]any) (string, error)

// Tools maps the name of each tool the proxy runs to its function.
type Tools map[string]Tool

// Proxy answers clients' Responses requests from an upstream model, running the tools it asks for.
type Proxy struct {
	Upstream          Upstream
	Tools             Tools
	Policy            Policy // BufferedFinalStream when empty
	ForwardToolEvents bool   // under ProgressEvents: forward tool-call events too, renumbered
}

// Request is a client's request body, each top-level field as the client wrote it: what the proxy
// does not read goes upstream unchanged. It is the client's: build a new one, never change it.
type Request map[string]json.RawMessage

// Handle answers one client request on w.
//
//   - A request without tools (none, or an empty list) is stateless: it goes upstream unchanged (not
//     even stream is forced) and its answer comes back through PassThrough, as text/event-stream
//     when the request says stream, application/json otherwise.
//   - Under BufferedFinalStream, the final Turn goes out whole (WriteWhole, 200): ToSSE when the
//     client asked for a stream, ToJSON otherwise.
//   - Under ProgressEvents, the answer is ProgressEvents' stream.
//   - Whatever fails closed before the answer began (a *FailClosed from the upstream or the
//     policies) is a 502 with ErrorBody, application/json, and the header X-Should-Retry: false
//     (ShouldRetry): never a 200 carrying a failure, never an answer a client retries.
//
// ctx is the client's request's: it ends when the client goes away. Every upstream request and every
// tool run for this request get it (never context.Background()), so that a client that leaves stops
// them, even while the upstream is silent.
//
// Handle returns nil once the answer went out whole. It returns an error when it could not: before
// anything was written (ErrUnknownPolicy, anything but a *FailClosed: the server answers 500), or
// after the answer began (a pass-through's upstream broke, a write failed because the client went
// away: the server cuts the connection, so that the client sees the answer cut).
func (p *Proxy) Handle(ctx context.Context, w http.ResponseWriter, req Request) error {
	// course: begin Proxy_Handle
	if p.Policy != "" && p.Policy != BufferedFinalStream && p.Policy != ProgressEvents {
		return fmt.Errorf("%w %q", ErrUnknownPolicy, p.Policy)
	}
	if len(req.Tools()) == 0 {
		body, _ := json.Marshal(req) // raw JSON values: nothing fails to marshal
		answer, err := p.Upstream.Open(ctx, body)
		if err != nil {
			return failClosed(w, err)
		}
		defer answer.Close()
		contentType := ContentJSON
		if req.Stream() {
			contentType = ContentSSE
		}
		return PassThrough(w, answer, contentType)
	}
	if p.Policy == ProgressEvents {
		return failClosed(w, p.ProgressEvents(ctx, w, req))
	}
	answer, err := p.BufferedFinalStream(ctx, req)
	switch {
	case err != nil:
		return failClosed(w, err)
	case req.Stream():
		WriteWhole(w, http.StatusOK, ContentSSE, ToSSE(answer))
	default:
		WriteWhole(w, http.StatusOK, ContentJSON, ToJSON(answer))
	}
	return nil
	// course: end Proxy_Handle
}

// PassThrough answers 200 with contentType and the upstream's body, byte for byte and read by read,
// each read written and flushed at once: nothing parsed, nothing tidied, nothing held back until the
// end. It returns nil at the end of body, and otherwise the error that ended it, as it came: a body
// that broke (never turned into a quiet end: the server then cuts the answer), or a write that failed.
func PassThrough(w http.ResponseWriter, body io.Reader, contentType string) error {
	// course: begin PassThrough
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	chunk := make([]byte, 32<<10)
	for {
		n, err := body.Read(chunk)
		if n > 0 {
			if failed := send(w, chunk[:n]); failed != nil {
				return failed
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	// course: end PassThrough
}

// BufferedFinalStream reads the upstream's responses here, running the tools each complete one asks
// for (Continued), until one answers without a call, and returns the answer built from them all:
// Downstream(req, the first turn, every turn). Each upstream request is a new body: the client's
// fields, stream true (the proxy reads every answer as a stream, to fail closed on it), and the
// conversation so far as its input (InputItems to begin with). After MaxTurns upstream responses
// without a final one, it fails closed with turn_limit.
func (p *Proxy) BufferedFinalStream(ctx context.Context, req Request) (Turn, error) {
	// course: begin Proxy_BufferedFinalStream
	turns, err := p.converse(ctx, req, func(int, Event) error { return nil })
	if err != nil {
		return Turn{}, err
	}
	return Downstream(req, turns[0], turns), nil
	// course: end Proxy_BufferedFinalStream
}

// ProgressEvents answers with an event stream (200, text/event-stream) that one EventWriter numbers
// from 0. It opens once the first upstream response is created, with Opening for the response shown:
// Downstream(req, a Turn named after that upstream response (its id, model, created_at), no turns).
// Each non-empty response.output_text.delta goes out as it arrives (TextDelta, the first one after
// TextPartOpening), written and flushed at once. Tool-call events (function_call_arguments .delta and
// .done, and output_item .added and .done of function_call items) go out only when
// p.ForwardToolEvents, moved into the downstream response: each upstream call takes the next output
// index after the message's 0 (1, 2, ...) and an item id of the proxy's own, the same for every
// event of that call, across upstream responses. Tools run as in BufferedFinalStream, only after
// each response completed, under the same MaxTurns. The stream ends with Closing for Downstream(req,
// the response shown, every turn).
//
// A failure while nothing was written is returned as it is (Handle answers a *FailClosed with a 502).
// Once the stream began, a *FailClosed ends it with one Failed event for the response shown, and
// ProgressEvents returns nil; a write that fails (the client went away) is returned, and nothing
// more is read upstream.
func (p *Proxy) ProgressEvents(ctx context.Context, w http.ResponseWriter, req Request) error {
	// course: begin Proxy_ProgressEvents
	var (
		writer     EventWriter
		shown      *Turn // the downstream response: nil until the stream began
		textOpened bool
		calls      = forwardedCalls{}
	)
	turns, err := p.converse(ctx, req, func(turn int, e Event) error {
		var out []byte
		if shown == nil {
			opened := Downstream(req, Turn{ID: e.Response.ID, Model: e.Response.Model, CreatedAt: e.Response.CreatedAt}, nil)
			shown = &opened
			w.Header().Set("Content-Type", ContentSSE)
			w.WriteHeader(http.StatusOK)
			out = Opening(&writer, opened)
		}
		switch {
		case e.Type == "response.output_text.delta" && *e.Delta != "":
			if !textOpened {
				textOpened = true
				out = append(out, TextPartOpening(&writer, *shown)...)
			}
			out = append(out, TextDelta(&writer, *shown, *e.Delta)...)
		case p.ForwardToolEvents && isToolEvent(e):
			out = append(out, calls.forward(&writer, *shown, turn, e)...)
		}
		if len(out) == 0 {
			return nil
		}
		return send(w, out)
	})
	var failure *FailClosed
	switch {
	case err == nil:
		return send(w, Closing(&writer, Downstream(req, *shown, turns), textOpened))
	case shown != nil && errors.As(err, &failure):
		return send(w, Failed(&writer, *shown, failure))
	}
	return err
	// course: end Proxy_ProgressEvents
}

// OneTurn sends body upstream (with ctx) and reads the answer to its end: each event fed to a new
// StreamState and then, when observe is not nil, handed to observe (whose error ends the turn); then
// the Turn the state amounts to (Finish). The upstream body is closed on every path, before OneTurn
// returns; any error on the way (the reader's, the state's, observe's) is returned as it came.
func OneTurn(ctx context.Context, upstream Upstream, body []byte, observe func(Event) error) (Turn, error) {
	// course: begin OneTurn
	answer, err := upstream.Open(ctx, body)
	if err != nil {
		return Turn{}, err
	}
	defer answer.Close()
	state, events := NewStreamState(), NewEventReader(answer)
	for {
		e, err := events.Next()
		if err == io.EOF {
			return state.Finish()
		}
		if err == nil {
			err = state.Feed(e)
		}
		if err == nil && observe != nil {
			err = observe(e)
		}
		if err != nil {
			return Turn{}, err
		}
	}
	// course: end OneTurn
}

// Continued is the conversation after a turn that asked for calls: the batch run (RunCalls), each
// call and its result appended. A call id the conversation already holds (a function_call item of
// the client's input, or of an earlier turn) fails closed as protocol before anything runs: its
// result could answer either call.
func Continued(ctx context.Context, conversation []json.RawMessage, turn Turn, tools Tools) ([]json.RawMessage, error) {
	// course: begin Continued
	for _, raw := range conversation {
		var item struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
		}
		_ = json.Unmarshal(raw, &item) // an item of another shape holds no call id
		if item.Type == "function_call" && slices.ContainsFunc(turn.Calls, func(c *FunctionCall) bool { return c.CallID == item.CallID }) {
			return nil, Fail(CodeProtocol, "call id %s was already used in this conversation", item.CallID)
		}
	}
	items, err := RunCalls(ctx, turn.Calls, tools)
	if err != nil {
		return nil, err
	}
	return append(conversation, items...), nil
	// course: end Continued
}

// RunCalls runs a complete batch of calls, each exactly once, in their order, after checking that
// every one can run: each names a tool the proxy runs (unknown_tool, naming them all) and each one's
// final arguments are a JSON object (ParsedArguments: bad_arguments). Each tool gets ctx. A tool's
// error stops the batch there: tool_failed, its words in the message and the error itself as the
// *FailClosed's Err. It returns the items that carry the calls and their results into the next
// request: per call, {"type": "function_call", "call_id", "name", "arguments"} then
// {"type": "function_call_output", "call_id", "output"}.
func RunCalls(ctx context.Context, calls []*FunctionCall, tools Tools) ([]json.RawMessage, error) {
	// course: begin RunCalls
	var unknown []string
	for _, c := range calls {
		if tools[c.Name] == nil && !slices.Contains(unknown, c.Name) {
			unknown = append(unknown, c.Name)
		}
	}
	if unknown != nil {
		return nil, Fail(CodeUnknownTool, "the model called %s, which this proxy does not run", strings.Join(unknown, ", "))
	}
	arguments := make([]map[string]any, len(calls))
	for i, c := range calls {
		parsed, err := c.ParsedArguments()
		if err != nil {
			return nil, err
		}
		arguments[i] = parsed
	}
	items := make([]json.RawMessage, 0, 2*len(calls))
	for i, c := range calls {
		output, err := tools[c.Name](ctx, arguments[i])
		if err != nil { // a tool that breaks is a failure to report, not one to retry
			return nil, &FailClosed{Code: CodeToolFailed, Message: fmt.Sprintf("%s failed: %v", c.Name, err), Err: err}
		}
		call, _ := json.Marshal(functionCallItem{"function_call", c.CallID, c.Name, c.Arguments})
		result, _ := json.Marshal(functionCallOutput{"function_call_output", c.CallID, output})
		items = append(items, call, result)
	}
	return items, nil
	// course: end RunCalls
}

// Downstream is the response the client receives for req, in every mode: named after namedAfter (its
// id, model and created_at: the first upstream response), holding the text and the refusal of every
// turn in order and no calls (the proxy ran them), the usage of them all added up (TotalUsage), and
// what req asked for echoed: its tools, its tool_choice ("auto" when it has none) and its
// parallel_tool_calls (true when it has none).
func Downstream(req Request, namedAfter Turn, turns []Turn) Turn {
	// course: begin Downstream
	answer := namedAfter
	var text, refusal strings.Builder
	for _, t := range turns {
		text.WriteString(t.Text)
		refusal.WriteString(t.Refusal)
	}
	answer.Text, answer.Refusal, answer.Calls, answer.Usage = text.String(), refusal.String(), nil, TotalUsage(turns)
	answer.Tools, answer.ToolChoice, answer.ParallelToolCalls = req.Tools(), json.RawMessage(`"auto"`), true
	req.Decode("tool_choice", &answer.ToolChoice)
	req.Decode("parallel_tool_calls", &answer.ParallelToolCalls)
	return answer
	// course: end Downstream
}

// course: begin helpers
// converse runs the upstream side of one client request: each upstream response read whole
// (OneTurn, observe seeing each of its events with the turn's number), the tools of each complete
// one run, until one answers without a call. The turns, in order.
func (p *Proxy) converse(ctx context.Context, req Request, observe func(turn int, e Event) error) ([]Turn, error) {
	conversation, err := InputItems(req)
	if err != nil {
		return nil, err
	}
	var turns []Turn
	for len(turns) < MaxTurns {
		number := len(turns)
		turn, err := OneTurn(ctx, p.Upstream, upstreamBody(req, conversation), func(e Event) error { return observe(number, e) })
		if err != nil {
			return nil, err
		}
		turns = append(turns, turn)
		if len(turn.Calls) == 0 {
			return turns, nil
		}
		if conversation, err = Continued(ctx, conversation, turn, p.Tools); err != nil {
			return nil, err
		}
	}
	return nil, Fail(CodeTurnLimit, "no final answer within %d upstream responses", MaxTurns)
}

// upstreamBody is the next upstream request: a new body, the client's fields but stream true and the
// conversation so far as its input.
func upstreamBody(req Request, conversation []json.RawMessage) []byte {
	fields := maps.Clone(req)
	fields["stream"] = json.RawMessage("true")
	fields["input"], _ = json.Marshal(conversation) // raw JSON values: nothing fails to marshal
	body, _ := json.Marshal(fields)
	return body
}

// failClosed answers a *FailClosed with a 502 not to be retried; any other error (nil included) is
// returned as it is.
func failClosed(w http.ResponseWriter, err error) error {
	var failure *FailClosed
	if !errors.As(err, &failure) {
		return err
	}
	w.Header().Set(ShouldRetry, "false")
	WriteWhole(w, http.StatusBadGateway, ContentJSON, ErrorBody(failure))
	return nil
}

// send writes data and flushes it to the client at once.
func send(w http.ResponseWriter, data []byte) error {
	_, err := w.Write(data)
	if err == nil {
		err = http.NewResponseController(w).Flush()
	}
	return err
}

func isToolEvent(e Event) bool {
	switch e.Type {
	case "response.function_call_arguments.delta", "response.function_call_arguments.done":
		return true
	case "response.output_item.added", "response.output_item.done":
		return e.Item != nil && e.Item.Type == "function_call"
	}
	return false
}

// forwardedCalls gives each upstream call whose events go downstream its place there: an output
// index after the message's and an item id of the proxy's own, by (turn, upstream item id).
type forwardedCalls map[callKey]callPlace

type callKey struct {
	turn int
	item string
}

type callPlace struct {
	id    string
	index int
}

// forward is e renumbered into the downstream response shown, its other fields as they came.
func (f forwardedCalls) forward(w *EventWriter, shown Turn, turn int, e Event) []byte {
	var fields map[string]any
	_ = json.Unmarshal(e.Raw, &fields) // the reader decoded it once already: a JSON object
	delete(fields, "type")
	delete(fields, "sequence_number")
	key := callKey{turn, e.ItemID}
	if e.Item != nil {
		key.item = e.Item.ID
	}
	place, known := f[key]
	if !known {
		place = callPlace{fmt.Sprintf("fc_%s_%d", strings.TrimPrefix(shown.ID, "resp_"), len(f)+1), len(f) + 1}
		f[key] = place
	}
	if item, ok := fields["item"].(map[string]any); ok {
		item["id"] = place.id
	} else {
		fields["item_id"] = place.id
	}
	fields["output_index"] = place.index
	return w.Event(e.Type, fields)
}

type functionCallItem struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type functionCallOutput struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

// course: end helpers

// Stream is whether the client asked for a streamed answer ("stream": true).
func (r Request) Stream() bool {
	var stream bool
	r.Decode("stream", &stream)
	return stream
}

// Tools is the request's tools, each as the client wrote it: none when it has none (or no list).
func (r Request) Tools() []json.RawMessage {
	var tools []json.RawMessage
	r.Decode("tools", &tools)
	return tools
}

// Decode reads the field name into v (a pointer, as for json.Unmarshal) and says whether it could:
// false when the request has no such field, or one that does not fit v.
func (r Request) Decode(name string, v any) bool {
	raw, ok := r[name]
	return ok && json.Unmarshal(raw, v) == nil
}

// InputItems is the request's input as a list of items: a bare string is one user message, and no
// input at all is none.
func InputItems(req Request) ([]json.RawMessage, error) {
	var text string
	if req.Decode("input", &text) {
		message, _ := json.Marshal(map[string]string{"role": "user", "content": text})
		return []json.RawMessage{message}, nil
	}
	var items []json.RawMessage
	if raw, given := req["input"]; given && json.Unmarshal(raw, &items) != nil {
		return nil, errors.New("proxy: the request's input is neither a text nor a list of items")
	}
	return append([]json.RawMessage{}, items...), nil
}

// TotalUsage is the usage of turns added up, details included; nil when none of them reported any.
func TotalUsage(turns []Turn) *Usage {
	var total Usage
	reported := false
	for _, t := range turns {
		u := cmp.Or(t.Usage, &Usage{})
		reported = reported || t.Usage != nil
		total.InputTokens += u.InputTokens
		total.InputTokensDetails.CachedTokens += u.InputTokensDetails.CachedTokens
		total.InputTokensDetails.CacheWriteTokens += u.InputTokensDetails.CacheWriteTokens
		total.OutputTokens += u.OutputTokens
		total.OutputTokensDetails.ReasoningTokens += u.OutputTokensDetails.ReasoningTokens
	}
	if !reported {
		return nil
	}
	total.TotalTokens = total.InputTokens + total.OutputTokens
	return &total
}

// ErrorBody is a failure in the API's error shape: {"error": {"message", "type", "param", "code"}}.
func ErrorBody(failure *FailClosed) []byte {
	return apiError(failure.Message, "upstream_error", failure.Code)
}
