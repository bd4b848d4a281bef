package responses_test

// A loopback HTTP server that answers each connection with exact scripted bytes (chunked or not, any
// line ends, cut, reset or stalled where the case says), so that what the transport meets is what a
// real socket delivers; and a client transport that counts the response bodies it hands out and
// closes, and can hand them out through a reader of its own.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawReply is what one connection gets: head and pieces written, then end: "close" (a clean end),
// "reset" (a TCP RST, once the client began reading the body), "hang-up" (closed before any byte)
// or "stall" (nothing more until the client closes its connection).
type rawReply struct {
	head   string
	pieces []string
	end    string
}

type recordedRequest struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

type loopback struct {
	t        *testing.T
	listener net.Listener
	mu       sync.Mutex
	replies  []rawReply
	requests []recordedRequest
	gone     chan struct{} // closed when a stalled connection saw its client close
	reading  chan struct{} // closed by the client side when it first reads a body (see countingClient)
	readOnce sync.Once
	wg       sync.WaitGroup
}

func newLoopback(t *testing.T, replies ...rawReply) *loopback {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	lb := &loopback{t: t, listener: listener, replies: replies, gone: make(chan struct{}), reading: make(chan struct{})}
	lb.wg.Add(1)
	go lb.serve()
	t.Cleanup(func() {
		listener.Close()
		lb.wg.Wait()
	})
	return lb
}

func (lb *loopback) url() string { return "http://" + lb.listener.Addr().String() + "/v1" }

func (lb *loopback) serve() {
	defer lb.wg.Done()
	for {
		conn, err := lb.listener.Accept()
		if err != nil {
			return
		}
		lb.wg.Add(1)
		go func() {
			defer lb.wg.Done()
			lb.answer(conn)
		}()
	}
}

func (lb *loopback) answer(conn net.Conn) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	req, err := http.ReadRequest(bufio.NewReader(conn))
	if err != nil {
		return
	}
	body, _ := io.ReadAll(req.Body)
	lb.mu.Lock()
	lb.requests = append(lb.requests, recordedRequest{req.Method, req.URL.Path, req.Header, body})
	var reply rawReply
	if len(lb.replies) > 0 {
		reply, lb.replies = lb.replies[0], lb.replies[1:]
	} else {
		reply = rawReply{head: "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 24\r\n\r\n", pieces: []string{"no reply was scripted..."}}
	}
	lb.mu.Unlock()
	if reply.end == "hang-up" {
		return
	}
	io.WriteString(conn, reply.head)
	for _, piece := range reply.pieces {
		io.WriteString(conn, piece)
	}
	switch reply.end {
	case "reset":
		if reply.head != "" {
			select { // a reset may discard what the client has not read: let it start reading the body first
			case <-lb.reading:
			case <-time.After(5 * time.Second):
			}
		}
		conn.(*net.TCPConn).SetLinger(0)
	case "stall":
		io.Copy(io.Discard, conn) // returns when the client closes its connection
		close(lb.gone)
	}
}

func (lb *loopback) recorded() []recordedRequest {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return append([]recordedRequest(nil), lb.requests...)
}

// sse is the events as a text/event-stream body: an event: line and a data: line each, ended by
// lineEnd; comments adds keep-alive comments; multiline splits each JSON over two data lines.
func sse(events [][]byte, lineEnd string, comments, multiline bool) string {
	var b strings.Builder
	if comments {
		b.WriteString(": keep-alive" + lineEnd + lineEnd)
	}
	for _, e := range events {
		var typed struct{ Type string }
		json.Unmarshal(e, &typed)
		data := string(e)
		if multiline {
			data = strings.Replace(data, `, "`, ","+lineEnd+`data:  "`, 1) // the value keeps one of the two spaces
		}
		b.WriteString("event: " + typed.Type + lineEnd + "data: " + data + lineEnd + lineEnd)
		if comments {
			b.WriteString(": ping" + lineEnd)
		}
	}
	return b.String()
}

// streamReply frames body as a 200 event stream: "chunked" in HTTP chunks of size bytes, "length"
// with a Content-Length, "none" ended by the close.
func streamReply(body, framing string, size int) rawReply {
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"
	var pieces []string
	for start := 0; start < len(body); start += size {
		pieces = append(pieces, body[start:min(start+size, len(body))])
	}
	switch framing {
	case "chunked":
		head += "Transfer-Encoding: chunked\r\n"
		for i, p := range pieces {
			pieces[i] = fmt.Sprintf("%x\r\n%s\r\n", len(p), p)
		}
		pieces = append(pieces, "0\r\n\r\n")
	case "length":
		head += fmt.Sprintf("Content-Length: %d\r\n", len(body))
	}
	return rawReply{head: head + "\r\n", pieces: pieces, end: "close"}
}

func errorReply(status int, body string) rawReply {
	return rawReply{head: fmt.Sprintf("HTTP/1.1 %d Error\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", status, len(body)),
		pieces: []string{body}, end: "close"}
}

// countingClient hands out response bodies and counts how many were closed; keep-alive is off, so
// closing a body closes its connection. wrap, when set, hands each body out through a reader of its own.
type countingClient struct {
	base           http.RoundTripper
	lb             *loopback
	wrap           func(io.Reader) io.Reader
	mu             sync.Mutex
	opened, closed int
}

func newClient(lb *loopback) (*http.Client, *countingClient) {
	c := &countingClient{base: &http.Transport{DisableKeepAlives: true}, lb: lb}
	return &http.Client{Transport: c, Timeout: 20 * time.Second}, c
}

func (c *countingClient) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.opened++
	c.mu.Unlock()
	var reader io.Reader = resp.Body
	if c.wrap != nil {
		reader = c.wrap(resp.Body)
	}
	resp.Body = &countedBody{Reader: reader, closer: resp.Body, c: c}
	return resp, nil
}

// open is how many bodies were handed out and not closed.
func (c *countingClient) open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opened - c.closed
}

type countedBody struct {
	io.Reader
	closer io.Closer
	c      *countingClient
	once   sync.Once
}

func (b *countedBody) Read(p []byte) (int, error) {
	if lb := b.c.lb; lb != nil {
		lb.readOnce.Do(func() { close(lb.reading) })
	}
	return b.Reader.Read(p)
}

func (b *countedBody) Close() error {
	b.once.Do(func() {
		b.c.mu.Lock()
		b.c.closed++
		b.c.mu.Unlock()
	})
	return b.closer.Close()
}

// oddReader gives what an io.Reader may give and a careless reader does not expect: one byte per
// Read, an empty Read (0, nil) before each, and its last byte together with the end (io.EOF, or the
// error that ended the source).
type oddReader struct {
	r      io.Reader
	empty  bool
	primed bool
	next   []byte // the byte after the one given last, once looked at
	err    error  // what ended the source, once it ended
}

func (o *oddReader) Read(p []byte) (int, error) {
	if o.primed && len(o.next) == 0 {
		return 0, o.err
	}
	if o.empty = !o.empty; o.empty || len(p) == 0 {
		return 0, nil
	}
	if !o.primed {
		o.next, o.err = o.one()
		o.primed = true
		if len(o.next) == 0 {
			return 0, o.err
		}
	}
	p[0] = o.next[0]
	if o.next, o.err = o.one(); len(o.next) == 0 {
		return 1, o.err // the last byte, with the end
	}
	return 1, nil
}

func (o *oddReader) one() ([]byte, error) {
	buf := make([]byte, 1)
	n, err := io.ReadFull(o.r, buf)
	return buf[:n], err
}
