package responses

// course: begin imports
import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// course: end imports

// The bounds of what one response may make an Assembly keep. Characters are Unicode code points
// (utf8.RuneCountInString), not bytes: the bounds read the same in every track.
const (
	MaxPreviewChars  = 64_000 // text and refusal characters shown while streaming, all deltas together
	MaxPendingCalls  = 8      // function-call items one response may open
	MaxArgumentChars = 16_000 // characters buffered for one call's arguments, the added item's included
)

// Assembly folds the events of one response, in order, into one assistant decision. Accept
// returns the Message only at response.completed, and only once the whole response validated;
// every event before it is progress.
type Assembly struct {
	// course: begin Assembly_fields
	tools        map[string]ToolSpec
	report       Report
	responseID   string                  // "" until response.created
	pending      map[string]*pendingCall // the function calls streamed so far, by item id
	order        []string                // their item ids, in the order they were added
	previewChars int
	ended        bool // completed, or failed: no further event is accepted
	// course: end Assembly_fields
}

// NewAssembly returns the assembly of one response to a request that exposed tools. report
// observes progress (nil: nothing is shown).
func NewAssembly(tools []ToolSpec, report Report) *Assembly {
	// course: begin NewAssembly
	if report == nil {
		report = func(string, string) {}
	}
	a := &Assembly{tools: make(map[string]ToolSpec, len(tools)), report: report, pending: make(map[string]*pendingCall)}
	for _, tool := range tools {
		a.tools[tool.Name] = tool
	}
	return a
	// course: end NewAssembly
}

// Accept folds in one event, the JSON data of one server-sent event: the validated decision at
// response.completed, nil for progress, or a *ResponseError that ends the response, after which
// every event fails with "ended". A failure discards every call buffered so far.
//
// Lifecycle: response.created comes first (else not_started), once (duplicate_created), with a
// non-empty id (missing_id); an event naming another response by response_id or by its response
// object's id is identity_mismatch; response.failed, response.incomplete and error fail with
// failed, incomplete and error, their detail what the provider said. Progress: text and refusal
// deltas are reported as ("text" or "refusal", delta), 64,000 characters in all (preview_limit);
// function_call items are buffered by item id, at most 8 (call_limit), never twice
// (duplicate_item); an argument delta goes to the item it names (unknown_item when it names no
// buffered call) and is reported as ("arguments", "ITEM: N characters buffered"), 16,000 characters
// per call (argument_limit); function_call_arguments.done must state exactly the buffered
// arguments, after which no fragment may come, and a call's output_item.done must restate it
// (call_mismatch); every other event, known or not, is progress. At response.completed the status
// must be "completed" (status) and the output only message items (output_text and refusal parts)
// and function calls (unsupported_item); each call must have a non-empty id used once (call_id),
// have been streamed (call_not_streamed), equal what was streamed byte for byte (call_mismatch),
// name an exposed tool (unknown_tool) with a JSON object of exactly its parameters, all strings
// (bad_arguments); no streamed call may be missing (call_missing). A wrong shape anywhere (an
// event that is not an object, without a type, a field of the wrong JSON type) is malformed_event;
// a field that is absent reads as its empty value, a field that is null does not.
func (a *Assembly) Accept(data []byte) (*Message, error) {
	// course: begin Assembly_Accept
	if a.ended {
		return nil, &ResponseError{Code: "ended", Detail: "an event arrived after the response ended"}
	}
	message, err := a.accept(data)
	if err != nil {
		a.ended = true
		clear(a.pending) // nothing buffered may outlive a failed response
		a.order = nil
	}
	return message, err
	// course: end Assembly_Accept
}

// Pending is how many function calls are buffered: none once the response failed.
func (a *Assembly) Pending() int {
	// course: begin Assembly_Pending
	return len(a.pending)
	// course: end Assembly_Pending
}

// course: begin helpers

// pendingCall is a function call as streamed so far.
type pendingCall struct {
	callID, name string
	arguments    strings.Builder
	chars        int  // characters in arguments
	closed       bool // its arguments.done came, stating exactly these arguments
}

// fields is a JSON object with its values undecoded: a key that is absent is not in the map, a
// null value is "null". encoding/json matches struct fields without regard to case, a map does not.
type fields map[string]json.RawMessage

var previews = map[string]string{"response.output_text.delta": "text", "response.refusal.delta": "refusal"}

func (a *Assembly) accept(data []byte) (*Message, error) {
	event, ok := object(data)
	if !ok {
		return nil, fail("malformed_event", "an event must be a JSON object, got %.80s", data)
	}
	kind, err := event.text("type")
	if err != nil {
		return nil, err
	}
	if kind == "" {
		return nil, fail("malformed_event", "an event without a type")
	}
	if kind == "response.created" {
		if a.responseID != "" {
			return nil, fail("duplicate_created", "response.created arrived twice")
		}
		response, err := event.object("response")
		if err != nil {
			return nil, err
		}
		if a.responseID, err = response.text("id"); err != nil {
			return nil, err
		}
		if a.responseID == "" {
			return nil, fail("missing_id", "response.created carries no response id")
		}
		return nil, nil
	}
	if a.responseID == "" {
		return nil, fail("not_started", "%s arrived before response.created", kind)
	}
	if err := a.checkIdentity(event); err != nil {
		return nil, err
	}
	switch kind {
	case "response.failed", "response.incomplete", "error":
		return nil, fail(strings.TrimPrefix(kind, "response."), "%s", failureDetail(event))
	case "response.output_text.delta", "response.refusal.delta":
		delta, err := event.text("delta")
		if err != nil {
			return nil, err
		}
		a.previewChars += utf8.RuneCountInString(delta)
		if a.previewChars > MaxPreviewChars {
			return nil, fail("preview_limit", "more than %d characters of text", MaxPreviewChars)
		}
		a.report(previews[kind], delta)
	case "response.output_item.added":
		item, err := event.object("item")
		if err != nil {
			return nil, err
		}
		return nil, a.added(item)
	case "response.function_call_arguments.delta":
		itemID, call, err := a.openCall(event)
		if err != nil {
			return nil, err
		}
		delta, err := event.text("delta")
		if err != nil {
			return nil, err
		}
		call.arguments.WriteString(delta)
		call.chars += utf8.RuneCountInString(delta)
		if err := checkSize(itemID, call); err != nil {
			return nil, err
		}
		a.report("arguments", fmt.Sprintf("%s: %d characters buffered", itemID, call.chars))
	case "response.function_call_arguments.done":
		// The final arguments are the authority, so they are checked: against every fragment.
		itemID, call, err := a.openCall(event)
		if err != nil {
			return nil, err
		}
		arguments, ok := text(event["arguments"])
		if !ok {
			return nil, fail("malformed_event", "the done event of item %q states no arguments", itemID)
		}
		if arguments != call.arguments.String() {
			return nil, fail("call_mismatch", "item %q: the done event's arguments differ from the streamed fragments", itemID)
		}
		call.closed = true
	case "response.output_item.done":
		if item, ok := object(event["item"]); ok {
			if kind, _ := text(item["type"]); kind == "function_call" {
				return nil, a.finished(item)
			}
		}
	case "response.completed":
		a.ended = true
		response, err := event.object("response")
		if err != nil {
			return nil, err
		}
		return a.completed(response)
	}
	// Everything else, *.done events included, is progress: one part finished, not the response.
	return nil, nil
}

// checkIdentity: item events may name their response, lifecycle events carry it; either must be ours.
func (a *Assembly) checkIdentity(event fields) error {
	var claims []json.RawMessage
	if claimed, ok := event["response_id"]; ok {
		claims = append(claims, claimed)
	}
	if response, ok := object(event["response"]); ok {
		claims = append(claims, response["id"]) // nil when the object has no id: not ours either
	}
	for _, claimed := range claims {
		if id, ok := text(claimed); !ok || id != a.responseID {
			return fail("identity_mismatch", "an event of response %s inside %q", orNothing(claimed), a.responseID)
		}
	}
	return nil
}

func (a *Assembly) added(item fields) error {
	if kind, _ := text(item["type"]); kind != "function_call" {
		return nil // a message or another item starting: judged at completion
	}
	itemID, err := item.text("id")
	if err != nil {
		return err
	}
	if a.pending[itemID] != nil {
		return fail("duplicate_item", "function-call item %q added twice", itemID)
	}
	if len(a.pending) == MaxPendingCalls {
		return fail("call_limit", "more than %d function calls", MaxPendingCalls)
	}
	values, err := item.texts("call_id", "name", "arguments") // arguments: usually "", or a first fragment
	if err != nil {
		return err
	}
	call := &pendingCall{callID: values[0], name: values[1], chars: utf8.RuneCountInString(values[2])}
	call.arguments.WriteString(values[2])
	a.pending[itemID] = call
	a.order = append(a.order, itemID)
	return checkSize(itemID, call)
}

// openCall is the call an arguments event names, still open to fragments.
func (a *Assembly) openCall(event fields) (string, *pendingCall, error) {
	itemID, err := event.text("item_id")
	if err != nil {
		return "", nil, err
	}
	call := a.pending[itemID]
	if call == nil {
		return "", nil, fail("unknown_item", "arguments for item %q, which was never added as a function call", itemID)
	}
	if call.closed {
		return "", nil, fail("call_mismatch", "arguments for item %q after its done event stated them", itemID)
	}
	return itemID, call, nil
}

func checkSize(itemID string, call *pendingCall) error {
	if call.chars > MaxArgumentChars {
		return fail("argument_limit", "item %q has more than %d characters of arguments", itemID, MaxArgumentChars)
	}
	return nil
}

// finished checks a call's finished item: the same call id and name, and the same arguments if it states them.
func (a *Assembly) finished(item fields) error {
	itemID, err := item.text("id")
	if err != nil {
		return err
	}
	call := a.pending[itemID]
	if call == nil {
		return fail("unknown_item", "function-call item %q finished without being added", itemID)
	}
	restated, err := item.texts("call_id", "name")
	if err != nil {
		return err
	}
	same := restated[0] == call.callID && restated[1] == call.name
	if raw, stated := item["arguments"]; stated {
		arguments, ok := text(raw)
		same = same && ok && arguments == call.arguments.String()
	}
	if !same {
		return fail("call_mismatch", "finished item %q differs from the streamed call", itemID)
	}
	return nil
}

// completed validates the whole response, then builds the decision: nothing is released before every check.
func (a *Assembly) completed(response fields) (*Message, error) {
	if status, ok := text(response["status"]); !ok || status != "completed" {
		return nil, fail("status", "response.completed with the status %s", orNothing(response["status"]))
	}
	output, ok := list(response["output"])
	if !ok {
		return nil, fail("malformed_event", "response.completed without an output list")
	}
	var content, refusal strings.Builder
	var calls []ToolCall
	callIDs := make(map[string]bool)
	final := make(map[string]bool) // item ids of the calls in the output
	for _, raw := range output {
		item, _ := object(raw)
		kind, _ := text(item["type"]) // "" for an item that is not an object
		switch kind {
		case "message":
			if err := messageParts(item, &content, &refusal); err != nil {
				return nil, err
			}
		case "function_call":
			itemID, call, err := a.finalCall(item, callIDs)
			if err != nil {
				return nil, err
			}
			final[itemID], callIDs[call.ID] = true, true
			calls = append(calls, call)
		default:
			return nil, fail("unsupported_item", "an output item of type %s cannot be replayed", orNothing(item["type"]))
		}
	}
	for _, itemID := range a.order {
		if !final[itemID] {
			return nil, fail("call_missing", "streamed call item %q is not in the final output", itemID)
		}
	}
	return &Message{Role: RoleAssistant, Content: content.String(), ToolCalls: calls, Refusal: refusal.String()}, nil
}

func (a *Assembly) finalCall(item fields, callIDs map[string]bool) (string, ToolCall, error) {
	values, err := item.texts("id", "call_id", "name", "arguments")
	if err != nil {
		return "", ToolCall{}, err
	}
	itemID, callID, name, arguments := values[0], values[1], values[2], values[3]
	if callID == "" || callIDs[callID] {
		return "", ToolCall{}, fail("call_id", "call id %q is empty or repeated", callID)
	}
	streamed := a.pending[itemID]
	if streamed == nil {
		return "", ToolCall{}, fail("call_not_streamed", "final call item %q was never streamed", itemID)
	}
	if streamed.callID != callID || streamed.name != name || streamed.arguments.String() != arguments {
		return "", ToolCall{}, fail("call_mismatch", "final call item %q differs from the streamed bytes", itemID)
	}
	tool, ok := a.tools[name]
	if !ok {
		return "", ToolCall{}, fail("unknown_tool", "call %q names %q, which is not exposed", callID, name)
	}
	parsed, err := parseArguments(tool, arguments)
	if err != nil {
		return "", ToolCall{}, err
	}
	return itemID, ToolCall{ID: callID, Name: name, Arguments: parsed}, nil
}

// parseArguments is the argument object: JSON, an object, exactly the tool's names, every value a string.
func parseArguments(tool ToolSpec, arguments string) (map[string]string, error) {
	var value any
	if err := json.Unmarshal([]byte(arguments), &value); err != nil {
		return nil, fail("bad_arguments", "%s arguments are not JSON: %.80q", tool.Name, arguments)
	}
	object, ok := value.(map[string]any) // null is no object, though it unmarshals into a nil map
	if ok && len(object) == len(tool.Parameters) {
		for _, name := range tool.Parameters {
			_, ok = object[name]
			if !ok {
				break
			}
		}
	}
	if !ok || len(object) != len(tool.Parameters) {
		return nil, fail("bad_arguments", "%s needs exactly %q, got %.80q", tool.Name, tool.Parameters, arguments)
	}
	parsed := make(map[string]string, len(object))
	for name, v := range object {
		s, ok := v.(string)
		if !ok {
			return nil, fail("bad_arguments", "%s arguments must all be strings, %q is not", tool.Name, name)
		}
		parsed[name] = s
	}
	return parsed, nil
}

func messageParts(item fields, content, refusal *strings.Builder) error {
	parts, ok := list(item["content"])
	if !ok {
		return fail("malformed_event", "a message item without a content list")
	}
	for _, raw := range parts {
		part, _ := object(raw)
		kind, _ := text(part["type"])
		into, name := content, "text"
		switch kind {
		case "output_text":
		case "refusal":
			into, name = refusal, "refusal"
		default:
			return fail("unsupported_item", "message content of type %s cannot be replayed", orNothing(part["type"]))
		}
		s, err := part.text(name)
		if err != nil {
			return err
		}
		into.WriteString(s)
	}
	return nil
}

// failureDetail is what the provider said went wrong: from the response object of a lifecycle
// event, else from an error event, whose fields may be nested under "error" or not.
func failureDetail(event fields) string {
	var sources []fields
	if response, ok := object(event["response"]); ok {
		failure, _ := object(response["error"])
		details, _ := object(response["incomplete_details"])
		sources = []fields{failure, details}
	} else {
		nested, _ := object(event["error"])
		sources = []fields{nested, event}
	}
	for _, source := range sources {
		for _, key := range []string{"message", "reason", "code"} {
			if said, ok := text(source[key]); ok && said != "" {
				return said
			}
		}
	}
	return "no detail given"
}

// text is the field name when it is a string; "" when it is absent; malformed_event otherwise (null included).
func (f fields) text(name string) (string, error) {
	raw, present := f[name]
	if !present {
		return "", nil
	}
	s, ok := text(raw)
	if !ok {
		return "", fail("malformed_event", "the field %q must be a string, got %.80s", name, raw)
	}
	return s, nil
}

// texts is the fields names, each as text reads it.
func (f fields) texts(names ...string) ([]string, error) {
	values := make([]string, len(names))
	for i, name := range names {
		var err error
		if values[i], err = f.text(name); err != nil {
			return nil, err
		}
	}
	return values, nil
}

// object is the field name when it is an object; malformed_event otherwise.
func (f fields) object(name string) (fields, error) {
	value, ok := object(f[name])
	if !ok {
		return nil, fail("malformed_event", "the field %q must be an object", name)
	}
	return value, nil
}

// text decodes a JSON string; false for anything else (absent, null, a number ...).
func text(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	err := json.Unmarshal(raw, &s)
	return s, err == nil
}

// object decodes a JSON object; false for anything else. (null unmarshals into a nil map without error.)
func object(raw []byte) (fields, bool) {
	var f fields
	err := json.Unmarshal(raw, &f)
	return f, err == nil && f != nil
}

// list decodes a JSON array; false for anything else, null included.
func list(raw json.RawMessage) ([]json.RawMessage, bool) {
	var items []json.RawMessage
	err := json.Unmarshal(raw, &items)
	return items, err == nil && items != nil
}

func orNothing(raw json.RawMessage) string {
	if raw == nil {
		return "(none)"
	}
	return fmt.Sprintf("%.80s", raw)
}

func fail(code, format string, args ...any) *ResponseError {
	return &ResponseError{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// course: end helpers
