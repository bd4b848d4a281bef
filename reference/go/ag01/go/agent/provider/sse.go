package provider

// course: begin imports
import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"tinyllm/agent/types"
)

// course: end imports

// EventReader reads the events of a text/event-stream body (WHATWG HTML, "server-sent events").
//
// An event is the lines between two blank lines. A read may end anywhere: inside a line, between
// the CR and LF of one line end, between the two line ends of a blank line. The reader carries
// that state from one read to the next, and its cost stays linear in the size of the input
// whatever the read size: each byte is searched once for a LF and once for a CR, and a long line
// grows the buffer by doubling instead of being copied on every read. A line kept while its event
// is pending is copied out of the buffer before the buffer moves its bytes or reads over them.
type EventReader struct {
	// course: begin EventReader_fields
	r          io.Reader
	buf        []byte // buf[start:end] is read but not yet consumed
	start, end int
	scanned    int   // buf[start:scanned] holds no line end
	cr         int   // where the next CR at or after scanned is, or -1: none in buf[scanned:crSeen]
	crSeen     int   // how far the buffer has been searched for a CR
	skipLF     bool  // the last line ended in CR: a LF right after it belongs to that line end
	bomChecked bool  // the start of the input has been looked at for a BOM
	eof        error // the reader's final error, once it has returned one

	// The pending event. Its data usually is one line, still in buf: first points there, and the
	// lines are joined in data only when a second one comes or buf is about to move.
	first     []byte
	inBuf     bool   // the data so far is first; else it is data
	data      []byte // the data lines joined by LF
	hasData   bool
	pending   bool   // a line of an undispatched event was read
	eventType string // the event's "event" field
	lastID    string // kept from one event to the next, as the spec says

	typ string // the type of the event Next returned last
	// course: end EventReader_fields
}

// NewEventReader reads events from r.
func NewEventReader(r io.Reader) *EventReader {
	// course: begin NewEventReader
	return &EventReader{r: r, buf: make([]byte, 4*minRead), cr: -1}
	// course: end NewEventReader
}

// Next returns the data of the next event: its data lines joined by "\n", valid until the next
// call. Lines end at CRLF, LF or a lone CR; one leading BOM is dropped; a blank line dispatches the
// event, unless it has no data line; a line starting with ":" is a comment; a field is split at its
// first colon and one space after it is dropped; unknown fields are ignored. At a clean end of
// input Next returns io.EOF; when the input ends inside an event (a line, or lines without the
// blank line that dispatches them) it returns io.ErrUnexpectedEOF, and that event is discarded.
// Any other error is the underlying reader's, as it came, returned once the events completed
// before it are out. The reader takes every Read io.Reader allows: fewer bytes than asked, 0 bytes
// and no error (nothing yet), bytes together with io.EOF or with an error (the bytes count).
func (er *EventReader) Next() ([]byte, error) {
	// course: begin EventReader_Next
	for {
		line, ok, err := er.line()
		if err != nil {
			return nil, err
		}
		if !ok { // end of input
			if er.pending {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, io.EOF
		}
		if len(line) > 0 {
			er.pending = true
			er.field(line)
			if !er.nextIsBlank() {
				continue
			}
		}
		// a blank line dispatches the pending event, if it has data
		er.pending = false
		typ := er.eventType
		er.eventType = ""
		if !er.hasData {
			continue
		}
		er.hasData = false
		er.typ = typ
		if typ == "" {
			er.typ = "message"
		}
		data := er.data
		if er.inBuf {
			data, er.inBuf = er.first, false
		}
		return data, nil
	}
	// course: end EventReader_Next
}

// Type is the event type of the event Next returned last: its "event" field, "message" without one.
func (er *EventReader) Type() string {
	// course: begin EventReader_Type
	return er.typ
	// course: end EventReader_Type
}

// LastID is the last event ID seen so far: the latest "id" field without NUL, "" after an empty one.
func (er *EventReader) LastID() string {
	// course: begin EventReader_LastID
	return er.lastID
	// course: end EventReader_LastID
}

// Decoder turns the data of each chat-completions stream event into deltas. It keeps the tool calls
// still open, by index: a call's argument fragments may arrive interleaved with those of other
// calls, so each fragment goes to the call its index names.
type Decoder struct {
	// course: begin Decoder_fields
	open   map[int]*openCall
	finish string
	// course: end Decoder_fields
}

// NewDecoder returns a decoder for one stream.
func NewDecoder() *Decoder {
	// course: begin NewDecoder
	return &Decoder{open: make(map[int]*openCall)}
	// course: end NewDecoder
}

// Event returns the deltas of one event's data, and whether the stream is finished. [DONE] closes
// every open call (lowest index first) and ends with a DoneDelta; an {"error": ...} event is one
// ErrorDelta with a *StreamError; data that is not a chunk is one ErrorDelta. Only choice 0 counts;
// empty content is no text; finish_reason closes the open calls; the usage chunk is a UsageDelta.
func (d *Decoder) Event(data []byte) ([]types.Delta, bool) {
	// course: begin Decoder_Event
	if string(data) == "[DONE]" {
		return append(d.closeOpenCalls(), types.DoneDelta{FinishReason: d.finish}), true
	}
	var c *chunk
	err := json.Unmarshal(data, &c)
	if err == nil && c == nil {
		err = fmt.Errorf("null is not a chunk")
	}
	if err != nil {
		return []types.Delta{types.ErrorDelta{Err: fmt.Errorf("provider: unreadable stream event %.200q: %w", data, err)}}, true
	}
	if c.Error != nil {
		return []types.Delta{types.ErrorDelta{Err: streamError(c.Error)}}, true
	}
	var out []types.Delta
	for _, choice := range c.Choices {
		if choice.Index != 0 { // we ask for one answer; another would mix its calls into ours
			continue
		}
		if content := choice.Delta.Content; content != nil && *content != "" {
			out = append(out, types.TextDelta{Text: *content}) // servers send "" with the role
		}
		for _, tc := range choice.Delta.ToolCalls {
			call := d.open[tc.Index]
			if call == nil { // the id and name come with a call's first fragment
				call = &openCall{id: tc.ID, name: tc.Function.Name}
				d.open[tc.Index] = call
				out = append(out, types.ToolCallStartDelta{Index: tc.Index, ID: call.id, Name: call.name})
			}
			if tc.Function.Arguments != "" {
				call.args = append(call.args, tc.Function.Arguments...)
				out = append(out, types.ToolCallArgsDelta{Index: tc.Index, Fragment: tc.Function.Arguments})
			}
		}
		if r := choice.FinishReason; r != nil && *r != "" {
			d.finish = *r
			out = append(out, d.closeOpenCalls()...)
		}
	}
	if u := c.Usage; u != nil { // the last chunk, with "choices": [], when include_usage was asked
		out = append(out, types.UsageDelta{In: u.PromptTokens, Out: u.CompletionTokens})
	}
	return out, false
	// course: end Decoder_Event
}

// course: begin helpers
const (
	minRead = 4096 // the reader asks for at least this much room per read
	bom     = "\xef\xbb\xbf"
)

// nextIsBlank consumes the blank line that follows a line, when it is a lone LF already read:
// the usual end of an event, found without another search.
func (er *EventReader) nextIsBlank() bool {
	if er.skipLF || er.start >= er.end || er.buf[er.start] != '\n' {
		return false
	}
	er.start++
	er.scanned = er.start
	return true
}

// field applies one non-blank line.
func (er *EventReader) field(line []byte) {
	if line[0] == ':' {
		return // a comment
	}
	name, value := line, line[len(line):]                              // a line without a colon is a name with an empty value
	if len(line) > 4 && line[4] == ':' && string(line[:4]) == "data" { // the usual line, without a search
		name, value = line[:4], line[5:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	} else if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	// string(name) == "..." compares without allocating; unknown fields are ignored
	if string(name) == "data" {
		switch {
		case !er.hasData:
			er.first, er.inBuf, er.hasData = value, true, true
		case er.inBuf:
			er.data = append(append(append(er.data[:0], er.first...), '\n'), value...)
			er.inBuf = false
		default:
			er.data = append(append(er.data, '\n'), value...)
		}
	} else if string(name) == "event" {
		er.eventType = string(value)
	} else if string(name) == "id" && bytes.IndexByte(value, 0) < 0 {
		er.lastID = string(value)
	}
}

// line returns the next line without its line end, valid until the next call; ok is false at
// the end of input (a last line without a line end is not a line: its event can never dispatch).
func (er *EventReader) line() (line []byte, ok bool, err error) {
	for {
		if er.skipLF && er.start < er.end {
			if er.buf[er.start] == '\n' {
				er.start++
				er.scanned = er.start
			}
			er.skipLF = false
		}
		if er.bomChecked {
			if at := er.lineEnd(); at >= 0 {
				line = er.buf[er.start:at]
				er.skipLF = er.buf[at] == '\r'
				if at == er.cr { // look for the CR after this one from here on
					er.cr, er.crSeen = -1, at+1
				}
				er.start, er.scanned = at+1, at+1
				return line, true, nil
			}
			er.scanned = er.end
		}
		if er.eof != nil {
			if er.eof != io.EOF {
				return nil, false, er.eof
			}
			if er.start < er.end {
				er.pending = true // a line cut short
			}
			return nil, false, nil
		}
		er.fill()
		if !er.bomChecked && (er.end-er.start >= len(bom) || er.eof != nil) {
			if bytes.HasPrefix(er.buf[er.start:er.end], []byte(bom)) {
				er.start += len(bom)
				er.scanned, er.crSeen = er.start, er.start
			}
			er.bomChecked = true
		}
	}
}

// lineEnd is the index in buf of the first CR or LF in buf[scanned:end], or -1. CRs are rare, so
// each byte is searched for one only once, not once per line: where the next CR is stays known
// until a line end reaches it.
func (er *EventReader) lineEnd() int {
	if er.cr < 0 && er.crSeen < er.end {
		if i := bytes.IndexByte(er.buf[er.crSeen:er.end], '\r'); i >= 0 {
			er.cr = er.crSeen + i
		}
		er.crSeen = er.end
	}
	limit := er.end
	if er.cr >= 0 {
		limit = er.cr // a LF after the next CR cannot end the next line
	}
	if i := bytes.IndexByte(er.buf[er.scanned:limit], '\n'); i >= 0 {
		return er.scanned + i
	}
	return er.cr
}

// fill reads once into the free end of the buffer, first making room: consumed bytes are dropped
// by moving the rest to the front, and a buffer more than a quarter full of one unfinished line
// doubles instead. Either way the bytes moved stay a fraction of the bytes read, so a long line
// costs amortised linear time however small the reads.
func (er *EventReader) fill() {
	if len(er.buf)-er.end < minRead {
		if er.inBuf { // the pending data line is about to move: keep a copy
			er.data = append(er.data[:0], er.first...)
			er.inBuf = false
		}
		unread := er.end - er.start
		if unread > len(er.buf)/4 {
			grown := make([]byte, 2*len(er.buf)+minRead)
			copy(grown, er.buf[er.start:er.end])
			er.buf = grown
		} else {
			copy(er.buf, er.buf[er.start:er.end])
		}
		er.scanned -= er.start // er.cr is -1 here: a known CR would have been a line end
		er.crSeen -= er.start
		er.start, er.end = 0, unread
	}
	n, err := er.r.Read(er.buf[er.end:])
	er.end += n
	if err != nil {
		er.eof = err
	}
}

type openCall struct {
	id, name string
	args     []byte
}

// chunk is the part of a chat.completion.chunk the decoder reads.
type chunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"` // present (even as null) means the server failed
}

// closeOpenCalls ends every open call, lowest index first, its arguments joined ("{}" when none came).
func (d *Decoder) closeOpenCalls() []types.Delta {
	indexes := make([]int, 0, len(d.open))
	for i := range d.open {
		indexes = append(indexes, i)
	}
	sort.Ints(indexes)
	ends := make([]types.Delta, 0, len(indexes)+1)
	for _, i := range indexes {
		call := d.open[i]
		args := call.args
		if len(args) == 0 {
			args = []byte("{}")
		}
		ends = append(ends, types.ToolCallEndDelta{Index: i, Call: types.ToolCall{ID: call.id, Name: call.name, Args: args}})
		delete(d.open, i)
	}
	return ends
}

func streamError(raw json.RawMessage) *StreamError {
	var body struct {
		Type    string `json:"type"`
		Code    any    `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		var text string // {"error": "upstream overloaded"}: the error is its message
		if json.Unmarshal(raw, &text) != nil {
			text = string(raw)
		}
		return &StreamError{Message: text}
	}
	return &StreamError{Type: body.Type, Code: codeText(body.Code), Message: body.Message}
}

// codeText is an error code as text: servers send it as a string, a number or null.
func codeText(code any) string {
	switch c := code.(type) {
	case nil:
		return ""
	case string:
		return c
	default:
		b, _ := json.Marshal(c)
		return string(b)
	}
}

// course: end helpers
