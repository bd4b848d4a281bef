package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"unicode/utf8"
)

// Event is one event of an upstream Responses stream: the fields the proxy reads, each as the event
// states it, and the event's JSON as it came (Raw). A pointer field is nil when the event leaves the
// field out (or sends null); a field of another JSON type than the API's never reaches an Event, its
// event is a protocol failure of EventReader.Next.
type Event struct {
	Type           string          `json:"type"`
	SequenceNumber *int64          `json:"sequence_number"`
	Response       *Response       `json:"response"`    // lifecycle events: created, in_progress, completed, failed, incomplete
	ResponseID     *string         `json:"response_id"` // some servers name the response on other events too
	OutputIndex    int             `json:"output_index"`
	ContentIndex   int             `json:"content_index"`
	ItemID         string          `json:"item_id"`   // fragments and done events name their item
	Item           *Item           `json:"item"`      // output_item.added and output_item.done
	Delta          *string         `json:"delta"`     // the .delta events
	Arguments      *string         `json:"arguments"` // function_call_arguments.done
	Text           *string         `json:"text"`      // output_text.done
	Refusal        *string         `json:"refusal"`   // refusal.done
	Code           string          `json:"code"`      // an error event in the published schema's flat shape ...
	Message        string          `json:"message"`
	Error          *ErrorDetail    `json:"error"` // ... and in live traffic's, nested under error
	Raw            json.RawMessage `json:"-"`
}

// Response is a response object as an upstream event carries it: what the proxy reads of it.
type Response struct {
	ID                string       `json:"id"`
	Status            string       `json:"status"`
	Model             string       `json:"model"`
	CreatedAt         int64        `json:"created_at"`
	Output            []Item       `json:"output"` // nil when the event leaves it out
	Usage             *Usage       `json:"usage"`
	Error             *ErrorDetail `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

// Item is an output item as the upstream states it: a function call (CallID, Name, Arguments), a
// message (Content), or another type the proxy only passes by.
type Item struct {
	ID        string  `json:"id"`
	Type      string  `json:"type"`
	CallID    string  `json:"call_id"`
	Name      string  `json:"name"`
	Arguments *string `json:"arguments"` // nil when the item leaves its arguments out
	Content   []Part  `json:"content"`
}

// Part is one content part of a message: output_text (Text) or refusal (Refusal). Written out, an
// output_text part carries its annotations (none) and a refusal part only its refusal, as the API
// writes them.
type Part struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

// MarshalJSON writes the part in the API's shape for its type.
func (p Part) MarshalJSON() ([]byte, error) {
	if p.Type == "refusal" {
		return json.Marshal(struct {
			Type    string `json:"type"`
			Refusal string `json:"refusal"`
		}{p.Type, p.Refusal})
	}
	return json.Marshal(struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Annotations []any  `json:"annotations"`
	}{p.Type, p.Text, []any{}})
}

// ErrorDetail is what went wrong, in an error event or a failed response.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Usage is a response's token counts, details included (the official SDKs require them).
type Usage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens     int `json:"cached_tokens"`
		CacheWriteTokens int `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// EventReader reads an upstream body (text/event-stream) as the Responses events it carries. Reads
// may end anywhere: inside a line, inside a UTF-8 character, between the CR and LF of one line end.
type EventReader struct {
	r          io.Reader
	buf        []byte // buf[start:end] is read and not yet cut into lines
	start, end int
	scanned    int  // buf[start:scanned] holds no line end
	skipLF     bool // the last line ended in CR: a LF that comes next is part of that line end
	begun      bool // the first line is behind us (a leading BOM dropped from it)
	name       string
	data       []byte
	hasData    bool
	err        error // what ended the input: io.EOF at its end, or the error of a Read
}

// NewEventReader returns a reader of the events of body.
func NewEventReader(body io.Reader) *EventReader {
	return &EventReader{r: body, buf: make([]byte, 4096)}
}

var bom = []byte("\xef\xbb\xbf")

// Next returns the next event. At the end of a body that ended after a whole event it returns
// io.EOF; otherwise a *FailClosed: truncated when the body ended inside an event or a line, or
// reading it failed (the cause in Err; a *FailClosed of the body's own is returned as it came);
// protocol when the body is not UTF-8, an event's data is not a JSON object with a type (or has a
// field of the wrong JSON type), or its type disagrees with its event: line. A data: [DONE] line,
// which some compatible servers add, is skipped.
func (r *EventReader) Next() (Event, error) {
	for {
		line, err := r.line()
		if err != nil {
			return Event{}, err
		}
		if len(line) == 0 { // a blank line ends the event
			name, data, dispatch := r.name, r.data, r.hasData
			r.name, r.data, r.hasData = "", r.data[:0], false
			if !dispatch || string(data) == "[DONE]" {
				continue
			}
			return decode(name, data)
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if r.hasData {
				r.data = append(r.data, '\n')
			}
			r.data, r.hasData = append(r.data, value...), true
		case "event":
			r.name = string(value)
		}
	}
}

func decode(name string, data []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(data, &e); err != nil || e.Type == "" {
		return Event{}, Fail(CodeProtocol, "an event's data is not a JSON object with a type: %.80q", data)
	}
	if name != "" && name != e.Type {
		return Event{}, Fail(CodeProtocol, "event %q carries data of type %q", name, e.Type)
	}
	e.Raw = bytes.Clone(data)
	return e, nil
}

// line returns the next whole line, without its line end; valid until the next call.
func (r *EventReader) line() ([]byte, error) {
	for {
		if r.skipLF && r.start < r.end {
			if r.buf[r.start] == '\n' {
				r.start++
				r.scanned = max(r.scanned, r.start)
			}
			r.skipLF = false
		}
		if i := bytes.IndexAny(r.buf[r.scanned:r.end], "\r\n"); i >= 0 {
			at := r.scanned + i
			line := r.first(r.buf[r.start:at])
			r.skipLF = r.buf[at] == '\r'
			r.start, r.scanned, r.begun = at+1, at+1, true
			if !utf8.Valid(line) {
				return nil, Fail(CodeProtocol, "the upstream body is not UTF-8")
			}
			return line, nil
		}
		r.scanned = r.end
		if r.err != nil {
			return nil, r.ended()
		}
		r.fill()
	}
}

// first drops a BOM from the start of the body's first line.
func (r *EventReader) first(line []byte) []byte {
	if r.begun {
		return line
	}
	return bytes.TrimPrefix(line, bom)
}

// ended says what the end of the input means: a clean end, a cut, or a broken connection.
func (r *EventReader) ended() error {
	var failure *FailClosed
	switch {
	case errors.As(r.err, &failure):
		return r.err
	case r.err != io.EOF:
		return &FailClosed{Code: CodeTruncated, Message: "the upstream connection broke: " + r.err.Error(), Err: r.err}
	}
	pending := r.first(r.buf[r.start:r.end])
	if !utf8.Valid(pending) {
		return Fail(CodeProtocol, "the upstream body is not UTF-8 (it ends inside a character)")
	}
	if len(pending) > 0 || r.hasData || r.name != "" {
		return Fail(CodeTruncated, "the upstream body ended inside an event")
	}
	return io.EOF
}

// fill reads more of the body, keeping what is not consumed yet (the buffer doubles when full).
func (r *EventReader) fill() {
	if r.start > 0 {
		kept := copy(r.buf, r.buf[r.start:r.end])
		r.scanned -= r.start
		r.start, r.end = 0, kept
	}
	if r.end == len(r.buf) {
		r.buf = append(r.buf, make([]byte, len(r.buf))...)
	}
	n, err := r.r.Read(r.buf[r.end:])
	r.end += n
	r.err = err
}
