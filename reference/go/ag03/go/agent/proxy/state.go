package proxy

// course: begin imports
import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// course: end imports

// The bounds of one upstream response. Characters are Unicode code points, not bytes.
const (
	MaxPendingCalls  = 8      // function calls one response may open
	MaxArgumentChars = 16_000 // characters of one call's arguments, as streamed or as finally stated
	MaxTextChars     = 64_000 // characters of output text and refusal of one response, together
)

// FunctionCall is one function call of an upstream response, as its stream built it. It is closed
// once its response.function_call_arguments.done event arrived and stated exactly what the fragments
// spell: Arguments then holds them.
type FunctionCall struct {
	ItemID      string
	OutputIndex int
	CallID      string
	Name        string
	Fragments   []string // the argument deltas, in arrival order
	Arguments   string   // as the done event states them (equal to the fragments joined)
	Closed      bool     // the done event arrived
	// course: begin FunctionCall
	chars int // characters of the fragments so far
	// course: end FunctionCall
}

// Streamed is the call's fragments joined.
func (c *FunctionCall) Streamed() string { return strings.Join(c.Fragments, "") }

// ParsedArguments is the call's final arguments, which must be a JSON object (bad_arguments else).
func (c *FunctionCall) ParsedArguments() (map[string]any, error) {
	var value any
	if err := json.Unmarshal([]byte(c.Arguments), &value); err != nil {
		return nil, Fail(CodeBadArguments, "call %s: arguments are not JSON", c.CallID)
	}
	object, ok := value.(map[string]any)
	if !ok {
		return nil, Fail(CodeBadArguments, "call %s: arguments are not a JSON object", c.CallID)
	}
	return object, nil
}

// Turn is a complete upstream response (its id, model, created_at, status and usage, its text and
// refusal, the calls it asks for), or the response the client receives (Downstream).
type Turn struct {
	ID        string
	Model     string
	CreatedAt int64
	Status    string
	Text      string
	Refusal   string
	Calls     []*FunctionCall // in output_index order
	Usage     *Usage          // nil when the response reported none
	// What a response echoes of its request: Downstream sets them from the client's request.
	Tools             []json.RawMessage
	ToolChoice        json.RawMessage // "auto" when nil
	ParallelToolCalls bool
}

// StreamState is the state of one upstream Responses stream. Feed it every event of one response,
// then ask what they amount to with Finish. Progress is not permission: an item's done event, or a
// call whose arguments look complete, executes nothing; only Finish, after response.completed, hands
// out calls.
type StreamState struct {
	// course: begin StreamState
	response  *Response       // of response.created: names the stream
	terminal  *Response       // of response.completed
	calls     []*FunctionCall // in the order they opened
	texts     parts           // the output_text deltas
	refusals  parts           // the refusal deltas
	last      int64           // the last sequence number seen
	textChars int             // characters of text and refusal so far
	// course: end StreamState
}

// NewStreamState returns the state of a stream nothing was fed to yet.
func NewStreamState() *StreamState {
	// course: begin NewStreamState
	return &StreamState{last: -1}
	// course: end NewStreamState
}

// Feed takes the next event of the stream. It returns a *FailClosed as soon as the stream cannot be
// trusted: an event out of order or naming another response, a fragment or a done event for a call
// that was never added, a final statement (a done event, a finished item) that disagrees with what
// streamed, a bound passed, response.failed, response.incomplete or an error event (whose message,
// flat or nested under error, is kept). Events it does not need are progress to observe only.
func (s *StreamState) Feed(e Event) error {
	// course: begin StreamState_Feed
	if e.SequenceNumber != nil {
		if *e.SequenceNumber <= s.last {
			return Fail(CodeProtocol, "sequence number %d after %d", *e.SequenceNumber, s.last)
		}
		s.last = *e.SequenceNumber
	}
	if e.Type == "error" {
		detail := cmp.Or(e.Error, &ErrorDetail{Code: e.Code, Message: e.Message}) // live traffic nests it
		return Fail(CodeUpstreamError, "%s", cmp.Or(detail.Message, detail.Code, "error event"))
	}
	if s.response == nil {
		if e.Type != "response.created" {
			return Fail(CodeProtocol, "the stream began with %q, not response.created", e.Type)
		}
		response, err := responseOf(e)
		s.response = response
		return err
	}
	switch {
	case s.terminal != nil:
		return Fail(CodeProtocol, "%q arrived after the response had ended", e.Type)
	case e.Type == "response.created":
		return Fail(CodeProtocol, "response.created arrived twice")
	case e.Response != nil && e.Response.ID != s.response.ID:
		return Fail(CodeProtocol, "%s names response %q, the stream opened %s", e.Type, e.Response.ID, s.response.ID)
	case e.ResponseID != nil && *e.ResponseID != s.response.ID:
		return Fail(CodeProtocol, "%s names response %q, the stream opened %s", e.Type, *e.ResponseID, s.response.ID)
	}
	switch e.Type {
	case "response.output_item.added":
		return s.itemAdded(e)
	case "response.output_item.done":
		return s.itemDone(e)
	case "response.function_call_arguments.delta":
		return s.argumentsDelta(e)
	case "response.function_call_arguments.done":
		return s.argumentsDone(e)
	case "response.output_text.delta", "response.refusal.delta":
		return s.partDelta(e)
	case "response.output_text.done", "response.refusal.done":
		return s.partDone(e)
	case "response.completed":
		return s.completed(e)
	case "response.failed":
		return s.failed(e)
	case "response.incomplete":
		return s.incomplete(e)
	}
	return nil // in_progress, content parts, reasoning, ...: progress to observe only
	// course: end StreamState_Feed
}

// Finish is the response the stream amounts to, once it ended with response.completed and every call
// was closed by its done event, and the completed response states what streamed; a *FailClosed
// otherwise (missing_terminal, incomplete_call, mismatch).
func (s *StreamState) Finish() (Turn, error) {
	// course: begin StreamState_Finish
	if s.terminal == nil {
		return Turn{}, Fail(CodeMissingTerminal, "the stream ended before response.completed")
	}
	var open []string
	for _, c := range s.calls {
		if !c.Closed {
			open = append(open, c.CallID)
		}
	}
	if open != nil {
		return Turn{}, Fail(CodeIncompleteCall, "arguments never completed for %s", strings.Join(open, ", "))
	}
	if err := s.matchTerminal(); err != nil {
		return Turn{}, err
	}
	calls := slices.Clone(s.calls)
	slices.SortStableFunc(calls, func(a, b *FunctionCall) int { return cmp.Compare(a.OutputIndex, b.OutputIndex) })
	response := s.terminal
	return Turn{ID: response.ID, Model: response.Model, CreatedAt: response.CreatedAt, Status: "completed",
		Text: s.texts.joined(), Refusal: s.refusals.joined(), Calls: calls, Usage: response.Usage}, nil
	// course: end StreamState_Finish
}

// course: begin helpers

func (s *StreamState) itemAdded(e Event) error {
	item := e.Item
	if item == nil || item.Type != "function_call" {
		return nil
	}
	if item.ID == "" || item.CallID == "" || item.Name == "" {
		return Fail(CodeProtocol, "a function call item without its id, call_id or name")
	}
	if s.call(item.ID) != nil || slices.ContainsFunc(s.calls, func(c *FunctionCall) bool { return c.CallID == item.CallID }) {
		return Fail(CodeProtocol, "function call %s (%s) opened twice", item.ID, item.CallID)
	}
	if len(s.calls) == MaxPendingCalls {
		return Fail(CodeLimit, "more than %d function calls in one response", MaxPendingCalls)
	}
	call := &FunctionCall{ItemID: item.ID, OutputIndex: e.OutputIndex, CallID: item.CallID, Name: item.Name}
	s.calls = append(s.calls, call)
	return s.grow(call, valueOf(item.Arguments))
}

func (s *StreamState) itemDone(e Event) error {
	item := e.Item
	if item == nil || item.Type != "function_call" {
		return nil
	}
	call := s.call(item.ID)
	if call == nil || !call.Closed {
		return Fail(CodeProtocol, "function call item %q finished before it was added and closed", item.ID)
	}
	// The finished item restates the closed call; a slim one may leave its arguments out.
	if item.CallID != call.CallID || item.Name != call.Name || (item.Arguments != nil && *item.Arguments != call.Arguments) {
		return Fail(CodeMismatch, "call %s: its finished item differs from the stream", call.CallID)
	}
	return nil
}

func (s *StreamState) argumentsDelta(e Event) error {
	call, err := s.openCall(e)
	if err != nil {
		return err
	}
	return s.grow(call, valueOf(e.Delta))
}

func (s *StreamState) argumentsDone(e Event) error {
	call, err := s.openCall(e)
	if err != nil {
		return err
	}
	if e.Arguments == nil {
		return Fail(CodeProtocol, "call %s: the done event carries no arguments", call.CallID)
	}
	if utf8.RuneCountInString(*e.Arguments) > MaxArgumentChars {
		return Fail(CodeLimit, "call %s: arguments over %d characters", call.CallID, MaxArgumentChars)
	}
	// The done event is the authority, and it is checked: a fragment lost, repeated or changed on the
	// way makes the two disagree, and then neither can be trusted with a tool.
	if *e.Arguments != call.Streamed() {
		return Fail(CodeMismatch, "call %s: the done event's arguments differ from the streamed fragments", call.CallID)
	}
	call.Arguments, call.Closed = *e.Arguments, true
	return nil
}

func (s *StreamState) partDelta(e Event) error {
	if e.Delta == nil {
		return Fail(CodeProtocol, "%s without a text delta", e.Type)
	}
	s.textChars += utf8.RuneCountInString(*e.Delta)
	if s.textChars > MaxTextChars {
		return Fail(CodeLimit, "output text over %d characters", MaxTextChars)
	}
	s.partsOf(e).add(partKey{e.ItemID, e.ContentIndex}, *e.Delta)
	return nil
}

func (s *StreamState) partDone(e Event) error {
	stated := e.Text
	if e.Type == "response.refusal.done" {
		stated = e.Refusal
	}
	if stated != nil && *stated != s.partsOf(e).of(partKey{e.ItemID, e.ContentIndex}) { // no text stated: the deltas stand
		return Fail(CodeMismatch, "%s states other text than its deltas spelled", e.Type)
	}
	return nil
}

func (s *StreamState) completed(e Event) error {
	response, err := responseOf(e)
	if err != nil {
		return err
	}
	if response.Status != "" && response.Status != "completed" {
		return Fail(CodeProtocol, "response.completed with status %q", response.Status)
	}
	s.terminal = response
	return nil
}

func (s *StreamState) failed(e Event) error {
	response, err := responseOf(e)
	if err != nil {
		return err
	}
	detail := cmp.Or(response.Error, &ErrorDetail{})
	return Fail(CodeUpstreamFailed, "%s", cmp.Or(detail.Message, detail.Code, "response.failed"))
}

func (s *StreamState) incomplete(e Event) error {
	response, err := responseOf(e)
	if err != nil {
		return err
	}
	reason := "no reason given"
	if details := response.IncompleteDetails; details != nil && details.Reason != "" {
		reason = details.Reason
	}
	return Fail(CodeUpstreamIncomplete, "the response is incomplete (%s)", reason)
}

// call is the call opened under itemID, or nil.
func (s *StreamState) call(itemID string) *FunctionCall {
	at := slices.IndexFunc(s.calls, func(c *FunctionCall) bool { return c.ItemID == itemID })
	if at < 0 {
		return nil
	}
	return s.calls[at]
}

// openCall is the call a fragment or a done event names, which must be open.
func (s *StreamState) openCall(e Event) (*FunctionCall, error) {
	call := s.call(e.ItemID)
	if call == nil {
		return nil, Fail(CodeProtocol, "arguments for unknown item %q", e.ItemID)
	}
	if call.Closed {
		return nil, Fail(CodeProtocol, "arguments for call %s after its done event", call.CallID)
	}
	return call, nil
}

func (s *StreamState) grow(call *FunctionCall, piece string) error {
	call.chars += utf8.RuneCountInString(piece)
	if call.chars > MaxArgumentChars {
		return Fail(CodeLimit, "call %s: arguments over %d characters", call.CallID, MaxArgumentChars)
	}
	call.Fragments = append(call.Fragments, piece)
	return nil
}

func (s *StreamState) partsOf(e Event) *parts {
	if strings.HasPrefix(e.Type, "response.refusal.") {
		return &s.refusals
	}
	return &s.texts
}

// matchTerminal checks what the completed response states again: its function calls, its text and
// its refusal must be exactly the ones streamed. A slim terminal event without an output list leaves
// the stream standing.
func (s *StreamState) matchTerminal() error {
	output := s.terminal.Output
	if output == nil {
		return nil
	}
	streamed := map[string]*FunctionCall{}
	for _, c := range s.calls {
		streamed[c.CallID] = c
	}
	var text, refusal strings.Builder
	for _, item := range output {
		switch item.Type {
		case "function_call":
			call := streamed[item.CallID]
			if call == nil || item.Name != call.Name || item.Arguments == nil || *item.Arguments != call.Arguments {
				return Fail(CodeMismatch, "the completed response lists call %q unlike the stream", item.CallID)
			}
			delete(streamed, item.CallID)
		case "message":
			for _, part := range item.Content {
				switch part.Type {
				case "output_text":
					text.WriteString(part.Text)
				case "refusal":
					refusal.WriteString(part.Refusal)
				}
			}
		}
	}
	for _, c := range s.calls {
		if streamed[c.CallID] != nil {
			return Fail(CodeMismatch, "call %s is missing from the completed response", c.CallID)
		}
	}
	if text.String() != s.texts.joined() || refusal.String() != s.refusals.joined() {
		return Fail(CodeMismatch, "the completed response states other text than the stream spelled")
	}
	return nil
}

func responseOf(e Event) (*Response, error) {
	if e.Response == nil || e.Response.ID == "" {
		return nil, Fail(CodeProtocol, "%s without a response id", e.Type)
	}
	return e.Response, nil
}

func valueOf(text *string) string {
	if text == nil {
		return ""
	}
	return *text
}

// partKey names one content part: the item it belongs to, and its index there.
type partKey struct {
	item    string
	content int
}

// parts holds the deltas of each content part of one kind, the parts in the order they began.
type parts struct {
	order  []partKey
	deltas map[partKey]*strings.Builder
}

func (p *parts) add(key partKey, delta string) {
	if p.deltas == nil {
		p.deltas = map[partKey]*strings.Builder{}
	}
	if p.deltas[key] == nil {
		p.order = append(p.order, key)
		p.deltas[key] = &strings.Builder{}
	}
	p.deltas[key].WriteString(delta)
}

func (p *parts) of(key partKey) string {
	if b := p.deltas[key]; b != nil {
		return b.String()
	}
	return ""
}

func (p *parts) joined() string {
	var all strings.Builder
	for _, key := range p.order {
		all.WriteString(p.deltas[key].String())
	}
	return all.String()
}

// course: end helpers
