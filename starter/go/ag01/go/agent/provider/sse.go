package provider

import (
	"io"

	"tinyllm/agent/types"
)

// EventReader reads the events of a text/event-stream body (WHATWG HTML, "server-sent events").
//
// An event is the lines between two blank lines. A read may end anywhere: inside a line, between
// the CR and LF of one line end, between the two line ends of a blank line. Keep that state from
// one read to the next, and keep the cost linear in the size of the input whatever the read size:
// never search the same bytes again on every read, never copy a long line on every read.
type EventReader struct {
	r io.Reader
	// your fields: a buffer of bytes read but not consumed, the pending event's data lines and
	// type, the last event ID, what the last line end was
}

// NewEventReader reads events from r.
func NewEventReader(r io.Reader) *EventReader {
	return &EventReader{r: r}
}

// Next returns the data of the next event: its data lines joined by "\n". Lines end at CRLF, LF or
// a lone CR; one leading BOM is dropped; a blank line dispatches the event, unless it has no data
// line; a line starting with ":" is a comment; a field is split at its first colon and one space
// after it is dropped; unknown fields are ignored. At a clean end of input Next returns io.EOF;
// when the input ends inside an event (a line, or lines without the blank line that dispatches
// them) it returns io.ErrUnexpectedEOF, and that event is discarded.
func (er *EventReader) Next() ([]byte, error) {
	panic(`TODO ag01 §2.2: the next event's data`)
}

// Type is the event type of the event Next returned last: its "event" field, "message" without one.
func (er *EventReader) Type() string {
	panic(`TODO ag01 §2.2: the last event's type`)
}

// LastID is the last event ID seen so far: the latest "id" field without NUL, "" after an empty one.
func (er *EventReader) LastID() string {
	panic(`TODO ag01 §2.2: the last event ID`)
}

// Decoder turns the data of each chat-completions stream event into deltas. Keep the tool calls
// still open, by index: a call's argument fragments may arrive interleaved with those of other
// calls, so each fragment goes to the call its index names.
type Decoder struct {
	// your fields: the open calls by index, the finish reason
}

// NewDecoder returns a decoder for one stream.
func NewDecoder() *Decoder {
	return &Decoder{}
}

// Event returns the deltas of one event's data, and whether the stream is finished. [DONE] closes
// every open call (lowest index first) and ends with a DoneDelta; an {"error": ...} event is one
// ErrorDelta with a *StreamError; data that is not a chunk is one ErrorDelta. Only choice 0 counts;
// empty content is no text; finish_reason closes the open calls; the usage chunk is a UsageDelta.
func (d *Decoder) Event(data []byte) ([]types.Delta, bool) {
	panic(`TODO ag01 §2.2 and §3: the deltas of one event`)
}
