// Package sse reads server-sent events (text/event-stream, WHATWG HTML) from an io.Reader.
//
// It is given code: the Responses adapter reads its stream through it. Any reader of events with
// the same Next contract fits in its place; the one you wrote for ag01 is such a reader.
package sse

import (
	"bytes"
	"errors"
	"io"
)

// ErrTruncated is returned by Next when the input ends inside an event: a line, or lines without
// the blank line that would dispatch them. That event is discarded.
var ErrTruncated = errors.New("sse: the input ended inside an event")

const bom = "\xef\xbb\xbf"

// Reader reads the data of one event after another. It takes whatever an io.Reader may return:
// fewer bytes than asked, no bytes and no error, bytes together with io.EOF or another error.
type Reader struct {
	src        io.Reader
	buf        []byte // buf[start:end] was read and not consumed yet
	start, end int
	scanned    int   // buf[start:scanned] holds no CR and no LF
	err        error // what src returned last, once it returned an error
	skipLF     bool  // the last line ended with a CR: a LF right after it belongs to that line end
	bomChecked bool

	data    []byte // the pending event's data lines, joined by LF
	hasData bool
	pending bool // a line of an undispatched event was read
}

// NewReader returns a Reader of the events in src.
func NewReader(src io.Reader) *Reader {
	return &Reader{src: src, buf: make([]byte, 4096)}
}

// Next returns the data of the next event: its data lines joined by "\n". The slice is valid until
// the next call to Next, which reuses its memory.
//
// Lines end at CRLF, LF or a lone CR; one leading BOM is dropped; a line starting with ":" is a
// comment; a field is split at its first colon and one space after the colon is dropped; a blank
// line dispatches the event if it has a data line. Fields other than data are not needed here (the
// JSON of a Responses event carries its own type) and are skipped. At a clean end of input Next
// returns io.EOF, inside an event ErrTruncated; any other error is src's, as it came, once the
// events completed before it have been returned.
func (r *Reader) Next() ([]byte, error) {
	r.data, r.hasData, r.pending = r.data[:0], false, false
	for {
		line, err := r.line()
		if err != nil {
			if err == io.EOF && r.pending {
				return nil, ErrTruncated
			}
			return nil, err
		}
		if len(line) > 0 {
			r.pending = true
			r.field(line)
			continue
		}
		if r.hasData {
			return r.data, nil
		}
		r.pending = false // a block without data is no event
	}
}

// field applies one line of the pending event.
func (r *Reader) field(line []byte) {
	name, value, _ := bytes.Cut(line, []byte(":"))
	if string(name) != "data" { // a comment (no name), or a field this reader has no use for
		return
	}
	if r.hasData {
		r.data = append(r.data, '\n')
	}
	r.data = append(r.data, bytes.TrimPrefix(value, []byte(" "))...)
	r.hasData = true
}

// line returns the next line without its line end, valid until the next call; at the end of the
// input, src's error (a last line without its line end makes the pending event incomplete).
func (r *Reader) line() ([]byte, error) {
	for {
		if !r.bomChecked {
			have := r.buf[r.start:r.end]
			if len(have) < len(bom) && r.err == nil && bytes.HasPrefix([]byte(bom), have) {
				r.fill()
				continue
			}
			r.bomChecked = true
			if bytes.HasPrefix(have, []byte(bom)) {
				r.start += len(bom)
				r.scanned = r.start
			}
		}
		if r.skipLF && r.start < r.end {
			r.skipLF = false
			if r.buf[r.start] == '\n' {
				r.start++
				r.scanned = max(r.scanned, r.start)
			}
		}
		if i := bytes.IndexAny(r.buf[r.scanned:r.end], "\r\n"); i >= 0 {
			at := r.scanned + i
			line := r.buf[r.start:at]
			r.skipLF = r.buf[at] == '\r'
			r.start, r.scanned = at+1, at+1
			return line, nil
		}
		r.scanned = r.end
		if r.err != nil {
			if r.start < r.end {
				r.pending = true
			}
			return nil, r.err
		}
		r.fill()
	}
}

// fill reads once more into the buffer, first making room: the unread bytes move to the front,
// and a full buffer doubles, so that a long line costs linear time however small the reads.
func (r *Reader) fill() {
	if r.start > 0 {
		n := copy(r.buf, r.buf[r.start:r.end])
		r.scanned -= r.start
		r.start, r.end = 0, n
	}
	if r.end == len(r.buf) {
		r.buf = append(r.buf, make([]byte, len(r.buf))...)
	}
	n, err := r.src.Read(r.buf[r.end:])
	r.end += n
	if err != nil {
		r.err = err
	}
}
