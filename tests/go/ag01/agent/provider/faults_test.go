package provider_test

// Helpers for the catalog's fault and lifetime tests: the course fake model scripted over HTTP, byte-
// exact endings of a streamed answer, a transport that counts the response bodies it hands out and
// the ones closed, and a provider without a network whose stream the test writes itself.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"tinyllm/agent/types"
)

// ---- the course fake model ------------------------------------------------------------------------

// fakeModel is the course fake model that `course check` starts (COURSE_FAKE_MODEL_URL), scripted over
// HTTP: POST /_fake/script queues replies, GET /_fake/state shows the requests it received.
type fakeModel struct {
	t    *testing.T
	base string // the URL the fake printed, ending in /v1
}

// newFakeModel forgets what earlier tests scripted and recorded.
func newFakeModel(t *testing.T) *fakeModel {
	t.Helper()
	f := &fakeModel{t: t, base: strings.TrimRight(fakeModelURL(t), "/")}
	f.control("POST", "reset", nil, nil)
	return f
}

func (f *fakeModel) baseURL() string { return f.base }

func (f *fakeModel) control(method, what string, body, into any) {
	f.t.Helper()
	root := strings.TrimSuffix(f.base, "/v1")
	var payload io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			f.t.Fatalf("the test's own script does not marshal: %v", err)
		}
		payload = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, root+"/_fake/"+what, payload)
	if err != nil {
		f.t.Fatalf("the fake model's %s: %v", what, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		f.t.Fatalf("the fake model's /_fake/%s: %v", what, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("the fake model's /_fake/%s: HTTP %d: %s", what, resp.StatusCode, raw)
	}
	if into != nil {
		if err := json.Unmarshal(raw, into); err != nil {
			f.t.Fatalf("the fake model's /_fake/%s answered %s: %v", what, raw, err)
		}
	}
}

// script queues replies in their JSON form (CONTRIBUTING.md, "The fake model": its control surface).
func (f *fakeModel) script(replies ...map[string]any) {
	f.t.Helper()
	f.control("POST", "script", map[string]any{"replies": replies}, nil)
}

// fakeRequest is one request the fake model received; header names are lower case.
type fakeRequest struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Body    any               `json:"body"`
}

func (f *fakeModel) requests() []fakeRequest {
	f.t.Helper()
	var state struct {
		Requests []fakeRequest `json:"requests"`
	}
	f.control("GET", "state", nil, &state)
	return state.Requests
}

func (f *fakeModel) lastRequest() fakeRequest {
	f.t.Helper()
	all := f.requests()
	if len(all) == 0 {
		f.t.Fatalf("the fake model received no request")
	}
	return all[len(all)-1]
}

func fakeText(pieces ...string) map[string]any { return map[string]any{"kind": "turn", "text": pieces} }

// fakeError is an HTTP error with the real API's error body; retryAfter "" sends no Retry-After.
func fakeError(status int, typ, message, code, retryAfter string) map[string]any {
	r := map[string]any{"kind": "http_error", "status": status, "type": typ, "message": message}
	if code != "" {
		r["code"] = code
	}
	if retryAfter != "" {
		r["retry_after"] = retryAfter
	}
	return r
}

func fakeRaw(status int, contentType, body string) map[string]any {
	return map[string]any{"kind": "raw", "status": status, "content_type": contentType, "body": body}
}

// ---- byte-exact endings -----------------------------------------------------------------------------

// hijacked streams the role chunk and the given events as HTTP chunks, then takes the raw connection
// and lets end finish the exchange, byte for byte.
func hijacked(events func(body map[string]any) []string, end func(conn net.Conn)) reply {
	return func(w http.ResponseWriter, r *http.Request, body map[string]any, s *scriptedServer) {
		roleThen(w, body, events)
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		buf.Flush()
		end(conn)
	}
}

// textChunks is one content chunk per piece.
func textChunks(pieces ...string) func(body map[string]any) []string {
	return func(body map[string]any) []string {
		var out []string
		for _, p := range pieces {
			out = append(out, chunkEvent(body, map[string]any{"content": p}, nil))
		}
		return out
	}
}

// reset aborts the connection with a TCP RST.
func reset(conn net.Conn) {
	if tcp, ok := conn.(*net.TCPConn); ok {
		tcp.SetLinger(0)
	}
	conn.Close()
}

// writeThen writes raw bytes on the connection, then ends it with end.
func writeThen(raw string, end func(net.Conn)) func(net.Conn) {
	return func(conn net.Conn) {
		io.WriteString(conn, raw)
		end(conn)
	}
}

func closeConn(conn net.Conn) { conn.Close() }

// stallUntilGone sends nothing more and keeps the connection open until the client closes it (or
// limit passes): a server that went silent.
func stallUntilGone(limit time.Duration) func(net.Conn) {
	return func(conn net.Conn) {
		conn.SetReadDeadline(time.Now().Add(limit))
		io.Copy(io.Discard, conn) // returns when the client closes, or at the deadline
		conn.Close()
	}
}

// ---- counting what the client opens and closes ---------------------------------------------------------

// countingTransport hands out response bodies and counts how many were closed. Keep-alive is off, so
// closing a body closes its connection, and the server can count what is still open.
type countingTransport struct {
	base           http.RoundTripper
	mu             sync.Mutex
	opened, closed int
}

func newCountingTransport() *countingTransport {
	return &countingTransport{base: &http.Transport{DisableKeepAlives: true}}
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.opened++
	c.mu.Unlock()
	resp.Body = &countedBody{ReadCloser: resp.Body, t: c}
	return resp, nil
}

// open is how many response bodies were handed out and not closed.
func (c *countingTransport) open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opened - c.closed
}

type countedBody struct {
	io.ReadCloser
	t    *countingTransport
	once sync.Once
}

func (b *countedBody) Close() error {
	b.once.Do(func() {
		b.t.mu.Lock()
		b.t.closed++
		b.t.mu.Unlock()
	})
	return b.ReadCloser.Close()
}

// connCounter counts the connections a server holds open, as the server sees them.
type connCounter struct {
	mu   sync.Mutex
	open int
}

func (c *connCounter) track(conn net.Conn, state http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch state {
	case http.StateNew:
		c.open++
	case http.StateClosed, http.StateHijacked:
		c.open--
	}
}

// waitAllClosed reports whether the server saw every connection closed within limit.
func (c *connCounter) waitAllClosed(limit time.Duration) bool {
	for end := time.Now().Add(limit); ; time.Sleep(5 * time.Millisecond) {
		c.mu.Lock()
		open := c.open
		c.mu.Unlock()
		if open == 0 {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// newCountedScripted is newScripted with the server's connections counted.
func newCountedScripted(t *testing.T, replies ...reply) (*scriptedServer, *connCounter) {
	s := &scriptedServer{replies: replies, clientGone: make(chan struct{})}
	counter := &connCounter{}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Config.ConnState = counter.track
	s.srv.Start()
	t.Cleanup(func() {
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s, counter
}

// ---- a provider without a network -------------------------------------------------------------------------

// memProvider is a types.Provider whose streams the test writes: each ChatStream call takes the next
// scripted stream. A stream sends its deltas with plain sends, as a simple provider might, so it blocks
// whenever nobody reads; the test sees when it has sent everything (sent) and closed its channel. A
// stream may keep its channel open a while after its last delta (closeAfter), as a producer still
// closing its connection does; it closes at once when ctx is done.
type memProvider struct {
	mu         sync.Mutex
	streams    []memStream
	calls      int
	open       int   // streams whose channel is not closed yet
	openAtCall []int // for each call, how many streams of earlier calls were still open
}

type memStream struct {
	err        error         // returned by ChatStream instead of a stream
	deltas     []types.Delta // sent one by one, then the channel is closed
	sent       chan struct{} // closed once every delta was taken and the channel closed
	closeAfter time.Duration // how long the channel stays open after the last delta (-1: until ctx is done)
}

func (m *memProvider) ChatStream(ctx context.Context, msgs []types.Message, tools []types.ToolDef, opts ...types.CallOption) (<-chan types.Delta, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	m.openAtCall = append(m.openAtCall, m.open)
	if len(m.streams) == 0 {
		return nil, fmt.Errorf("memProvider: call %d was not scripted", m.calls)
	}
	s := m.streams[0]
	m.streams = m.streams[1:]
	if s.err != nil {
		return nil, s.err
	}
	ch := make(chan types.Delta)
	m.open++
	go func() {
		for _, d := range s.deltas {
			ch <- d
		}
		if s.closeAfter != 0 {
			var later <-chan time.Time
			if s.closeAfter > 0 {
				later = time.After(s.closeAfter)
			}
			select {
			case <-later:
			case <-ctx.Done():
			}
		}
		m.mu.Lock()
		m.open--
		m.mu.Unlock()
		close(ch)
		if s.sent != nil {
			close(s.sent)
		}
	}()
	return ch, nil
}

func (m *memProvider) callCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// openStreams is how many of its streams have not closed their channel yet.
func (m *memProvider) openStreams() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.open
}

// openAtCalls is, for each ChatStream call so far, how many earlier streams were still open then.
func (m *memProvider) openAtCalls() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int(nil), m.openAtCall...)
}

// waitClosed reports whether done closes within limit.
func waitClosed(done <-chan struct{}, limit time.Duration) bool {
	select {
	case <-done:
		return true
	case <-time.After(limit):
		return false
	}
}
