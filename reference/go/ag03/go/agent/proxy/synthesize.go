package proxy

// course: begin imports
import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
)

// course: end imports

// What the client receives under the buffered policy is built from a finished Turn, never from the
// upstream's bytes: a Responses object as JSON, or the same response told as an event stream, as the
// real API tells one. Every object validates against the official SDKs' types.

// ResponseObject is a Responses object as the proxy writes it.
type ResponseObject struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"` // always "response"
	CreatedAt         int64             `json:"created_at"`
	Status            string            `json:"status"`
	Model             string            `json:"model"`
	Output            []Message         `json:"output"`
	Usage             *Usage            `json:"usage"`
	Error             *ErrorDetail      `json:"error"`
	IncompleteDetails *struct{}         `json:"incomplete_details"` // always null here
	ParallelToolCalls bool              `json:"parallel_tool_calls"`
	ToolChoice        json.RawMessage   `json:"tool_choice"`
	Tools             []json.RawMessage `json:"tools"`
}

// Message is the assistant message item that carries the answer.
type Message struct {
	ID      string `json:"id"`
	Type    string `json:"type"` // always "message"
	Status  string `json:"status"`
	Role    string `json:"role"` // always "assistant"
	Content []Part `json:"content"`
}

// NewResponseObject is the Responses object of turn: with status "completed", its one message (see
// MessageItem) and its usage; with any other status ("in_progress", "failed"), no output and no
// usage. failure is the error of a failed response, nil otherwise. It echoes turn's Tools,
// ToolChoice ("auto" when nil) and ParallelToolCalls.
func NewResponseObject(turn Turn, status string, failure *ErrorDetail) ResponseObject {
	object := ResponseObject{ID: turn.ID, Object: "response", CreatedAt: turn.CreatedAt, Status: status, Model: turn.Model,
		Output: []Message{}, Error: failure, ParallelToolCalls: turn.ParallelToolCalls, ToolChoice: turn.ToolChoice,
		Tools: append([]json.RawMessage{}, turn.Tools...)}
	if object.ToolChoice == nil {
		object.ToolChoice = json.RawMessage(`"auto"`)
	}
	if status == "completed" {
		object.Output = []Message{MessageItem(turn, status)}
		object.Usage = turn.Usage
	}
	return object
}

// EventWriter frames downstream events as server-sent events, numbering them in the order they are
// written: one writer numbers a whole stream, from 0, without a gap or a repeat.
type EventWriter struct {
	Next int // the sequence number of the next event
}

// Event frames one event: an event: line naming kind, a data: line holding its JSON object (type
// kind, sequence_number Next, and fields), and one blank line; LF line ends.
func (w *EventWriter) Event(kind string, fields map[string]any) []byte {
	// course: begin EventWriter_Event
	payload := map[string]any{"type": kind, "sequence_number": w.Next}
	maps.Copy(payload, fields)
	w.Next++
	data, _ := json.Marshal(payload) // strings, numbers, raw JSON and this package's types: nothing fails to marshal
	return fmt.Appendf(nil, "event: %s\ndata: %s\n\n", kind, data)
	// course: end EventWriter_Event
}

// MessageItem is the assistant message of turn, its id "msg_" and turn's id without "resp_". In
// progress it has no parts yet (an empty list, never null); completed, an output_text part holding
// the text (annotations empty), then a refusal part when turn refused. A message that only refuses
// has the refusal part alone, as the API sends it; an empty answer still has its empty text part.
func MessageItem(turn Turn, status string) Message {
	// course: begin MessageItem
	content := []Part{}
	if status == "completed" {
		if turn.Text != "" || turn.Refusal == "" {
			content = append(content, Part{Type: "output_text", Text: turn.Text})
		}
		if turn.Refusal != "" {
			content = append(content, Part{Type: "refusal", Refusal: turn.Refusal})
		}
	}
	return Message{ID: "msg_" + strings.TrimPrefix(turn.ID, "resp_"), Type: "message", Status: status, Role: "assistant",
		Content: content}
	// course: end MessageItem
}

// ToJSON is the body of a non-streamed answer: the completed response object of turn.
func ToJSON(turn Turn) []byte {
	// course: begin ToJSON
	body, _ := json.Marshal(NewResponseObject(turn, "completed", nil)) // its types cannot fail to marshal
	return body
	// course: end ToJSON
}

// Opening is the events before any content: response.created and response.in_progress, each with
// the response in progress, then response.output_item.added with the message in progress at output
// index 0.
func Opening(w *EventWriter, turn Turn) []byte {
	// course: begin Opening
	started := NewResponseObject(turn, "in_progress", nil)
	out := w.Event("response.created", map[string]any{"response": started})
	out = append(out, w.Event("response.in_progress", map[string]any{"response": started})...)
	return append(out, w.Event("response.output_item.added", map[string]any{"output_index": 0,
		"item": MessageItem(turn, "in_progress")})...)
	// course: end Opening
}

// TextPartOpening is response.content_part.added for the message's text part, empty: it opens just
// before the first text delta.
func TextPartOpening(w *EventWriter, turn Turn) []byte {
	// course: begin TextPartOpening
	return w.Event("response.content_part.added", partPlace(turn, 0, map[string]any{"part": Part{Type: "output_text"}}))
	// course: end TextPartOpening
}

// TextDelta is one response.output_text.delta of the message's text part (logprobs empty).
func TextDelta(w *EventWriter, turn Turn, delta string) []byte {
	// course: begin TextDelta
	return w.Event("response.output_text.delta", partPlace(turn, 0, map[string]any{"delta": delta, "logprobs": []any{}}))
	// course: end TextDelta
}

// Closing is the events after the text: each part of the completed message closed in turn (the text
// part with response.output_text.done, preceded by its opening when textOpened is false; a refusal
// part opened, spelled whole in one response.refusal.delta and stated by response.refusal.done),
// each followed by its response.content_part.done; then response.output_item.done with the
// completed message, and response.completed with the response object ToJSON gives.
func Closing(w *EventWriter, turn Turn, textOpened bool) []byte {
	// course: begin Closing
	item := MessageItem(turn, "completed")
	var out []byte
	for index, part := range item.Content {
		if part.Type == "output_text" {
			if !textOpened {
				out = append(out, TextPartOpening(w, turn)...)
			}
			out = append(out, w.Event("response.output_text.done", partPlace(turn, index, map[string]any{"text": part.Text, "logprobs": []any{}}))...)
		} else {
			out = append(out, w.Event("response.content_part.added", partPlace(turn, index, map[string]any{"part": Part{Type: "refusal"}}))...)
			out = append(out, w.Event("response.refusal.delta", partPlace(turn, index, map[string]any{"delta": part.Refusal}))...)
			out = append(out, w.Event("response.refusal.done", partPlace(turn, index, map[string]any{"refusal": part.Refusal}))...)
		}
		out = append(out, w.Event("response.content_part.done", partPlace(turn, index, map[string]any{"part": part}))...)
	}
	out = append(out, w.Event("response.output_item.done", map[string]any{"output_index": 0, "item": item})...)
	return append(out, w.Event("response.completed", map[string]any{"response": NewResponseObject(turn, "completed", nil)})...)
	// course: end Closing
}

// Failed is the response.failed event that ends a stream after progress went out: the response
// shown, status failed, its error code one of the API's own (server_error: the SDKs accept no other)
// and the proxy's code leading the message ("missing_terminal: the stream ended ...").
func Failed(w *EventWriter, turn Turn, failure *FailClosed) []byte {
	// course: begin Failed
	detail := &ErrorDetail{Code: "server_error", Message: failure.Error()}
	return w.Event("response.failed", map[string]any{"response": NewResponseObject(turn, "failed", detail)})
	// course: end Failed
}

// ToSSE is the body of a streamed answer: Opening, the text part opened and the whole text in one
// delta (neither when the text is empty), then Closing; one EventWriter numbers it all.
func ToSSE(turn Turn) []byte {
	// course: begin ToSSE
	var w EventWriter
	out := Opening(&w, turn)
	if turn.Text != "" {
		out = append(out, TextPartOpening(&w, turn)...)
		out = append(out, TextDelta(&w, turn, turn.Text)...)
	}
	return append(out, Closing(&w, turn, turn.Text != "")...)
	// course: end ToSSE
}

// course: begin helpers
// partPlace adds to fields where a content part of turn's message is: its item id, output index 0,
// and the part's index.
func partPlace(turn Turn, index int, fields map[string]any) map[string]any {
	fields["item_id"] = MessageItem(turn, "in_progress").ID
	fields["output_index"] = 0
	fields["content_index"] = index
	return fields
}

// course: end helpers
