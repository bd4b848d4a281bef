package proxy_test

// Helpers of the ag03 catalog: the authored streams of fixtures/ag03 (COURSE_FIXTURES), readers
// that cut a body into reads, a scripted upstream that records what it was sent and whether each
// body was closed, recording tools, the proxy served on 127.0.0.1 with its log watched, clients
// (one that retries as the official SDKs do), a count of goroutines before and after each test, and
// the checks the official SDKs apply to what they read.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tinyllm/agent/proxy"
)

// readSizes are the read sizes every stream is read at.
var readSizes = []int{1, 7, 65536}

// patience bounds every wait of the catalog for something a correct proxy does at once (an event
// to arrive, an upstream to be released): it is reached only by code that never does it.
const patience = 5 * time.Second

// grace bounds the wait for what a correct proxy does right after something the test saw happen
// (an upstream body closed once its read failed, a goroutine ended once its request did).
const grace = 2 * time.Second

// ---- the fixtures ------------------------------------------------------------------------------

type stream struct {
	Description string            `json:"description"`
	Events      []json.RawMessage `json:"events"`
	Tail        string            `json:"tail"`
}

var (
	fixturesOnce sync.Once
	streams      map[string]stream
	streamNames  []string
	expected     struct {
		FinalText struct {
			Turn json.RawMessage  `json:"turn"`
			JSON map[string]any   `json:"json"`
			SSE  []map[string]any `json:"sse"`
		} `json:"final_text"`
	}
	fixturesErr error
)

// loadFixtures reads streams.json and expected.json from COURSE_FIXTURES (course check sets it).
func loadFixtures(t *testing.T) {
	t.Helper()
	fixturesOnce.Do(func() {
		dir := os.Getenv("COURSE_FIXTURES")
		if dir == "" {
			fixturesErr = errors.New("COURSE_FIXTURES is not set: run the catalog with `course check`, or set it to fixtures/ag03")
			return
		}
		var file struct {
			Streams json.RawMessage `json:"streams"`
		}
		raw, err := os.ReadFile(filepath.Join(dir, "streams.json"))
		if err == nil {
			err = json.Unmarshal(raw, &file)
		}
		if err == nil {
			err = json.Unmarshal(file.Streams, &streams)
			streamNames = orderedKeys(file.Streams)
		}
		if err == nil {
			raw, err = os.ReadFile(filepath.Join(dir, "expected.json"))
		}
		if err == nil {
			err = json.Unmarshal(raw, &expected)
		}
		fixturesErr = err
	})
	if fixturesErr != nil {
		t.Fatalf("reading the fixtures: %v", fixturesErr)
	}
}

// orderedKeys is the keys of a JSON object in the order they are written.
func orderedKeys(object json.RawMessage) []string {
	decoder := json.NewDecoder(bytes.NewReader(object))
	var keys []string
	decoder.Token() // {
	for decoder.More() {
		key, _ := decoder.Token()
		keys = append(keys, key.(string))
		var skip json.RawMessage
		decoder.Decode(&skip)
	}
	return keys
}

// decoded is JSON as maps, lists, strings, json.Number, bool and nil.
func decoded(t *testing.T, raw []byte) any {
	t.Helper()
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.UseNumber()
	var v any
	if err := decoder.Decode(&v); err != nil {
		t.Fatalf("the test's own JSON does not decode: %v: %.200s", err, raw)
	}
	return v
}

// eventsOf is a fixture stream's events, each a fresh map. With a tag, every response id, call id
// and function call item id is made its own (a model asked again answers with new ids).
func eventsOf(t *testing.T, name, tag string) []map[string]any {
	t.Helper()
	loadFixtures(t)
	s, ok := streams[name]
	if !ok {
		t.Fatalf("no stream %q in streams.json", name)
	}
	var events []map[string]any
	for _, raw := range s.Events {
		text := string(raw)
		if tag != "" {
			text = retag(s, text, tag)
		}
		events = append(events, decoded(t, []byte(text)).(map[string]any))
	}
	return events
}

var quotedID = regexp.MustCompile(`"((?:resp|call|fc)_[A-Za-z0-9_]+)"`)

func retag(s stream, text, tag string) string {
	ids := map[string]bool{}
	var first struct {
		Response struct {
			ID string `json:"id"`
		} `json:"response"`
	}
	json.Unmarshal(s.Events[0], &first)
	ids[first.Response.ID] = true
	for _, raw := range s.Events {
		var e struct {
			Item *struct {
				ID     string `json:"id"`
				Type   string `json:"type"`
				CallID string `json:"call_id"`
			} `json:"item"`
		}
		json.Unmarshal(raw, &e)
		if e.Item != nil && e.Item.Type == "function_call" {
			ids[e.Item.CallID], ids[e.Item.ID] = true, true
		}
	}
	return quotedID.ReplaceAllStringFunc(text, func(quoted string) string {
		if ids[strings.Trim(quoted, `"`)] {
			return strings.TrimSuffix(quoted, `"`) + "_" + tag + `"`
		}
		return quoted
	})
}

// frame is one event as the real API frames it: its name, its JSON data, a blank line.
func frame(e map[string]any) []byte {
	data, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	return fmt.Appendf(nil, "event: %s\ndata: %s\n\n", e["type"], data)
}

func framed(events []map[string]any) []byte {
	var out []byte
	for _, e := range events {
		out = append(out, frame(e)...)
	}
	return out
}

// body is a fixture stream's whole body, with its cut tail when it has one.
func body(t *testing.T, name string) []byte { return taggedBody(t, name, "") }

func taggedBody(t *testing.T, name, tag string) []byte {
	t.Helper()
	return append(framed(eventsOf(t, name, tag)), streams[name].Tail...)
}

// numbered is events with their sequence numbers 0, 1, 2 ... (after a head: response.created).
func numbered(events ...map[string]any) []map[string]any {
	out := make([]map[string]any, len(events))
	for i, e := range events {
		out[i] = with(e, "sequence_number", i)
	}
	return out
}

// with is a copy of m with the fields set (pairs of key and value; a value of nil removes the key).
func with(m map[string]any, pairs ...any) map[string]any {
	out := make(map[string]any, len(m)+len(pairs)/2)
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == nil {
			delete(out, pairs[i].(string))
		} else {
			out[pairs[i].(string)] = pairs[i+1]
		}
	}
	return out
}

func object(t *testing.T, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("not a JSON object: %s", show(v))
	}
	return m
}

// asMap is v as a JSON object, or an empty one.
func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func show(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(raw)
}

// same is whether two JSON values are equal as data.
func same(a, b any) bool {
	var x, y any
	ra, _ := json.Marshal(a)
	rb, _ := json.Marshal(b)
	json.Unmarshal(ra, &x)
	json.Unmarshal(rb, &y)
	return show(x) == show(y)
}

// ---- reading bodies -------------------------------------------------------------------------------

// sizedReader returns at most size bytes per Read, the way a socket delivers small packets.
type sizedReader struct {
	data []byte
	size int
}

func (r *sizedReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(r.size, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// pieces is data cut into chunks of size.
func pieces(data []byte, size int) [][]byte {
	var out [][]byte
	for len(data) > size {
		out = append(out, data[:size])
		data = data[size:]
	}
	return append(out, data)
}

// fed is a new state fed the events of data read size bytes at a time, and the first error that
// reading or feeding gave (io.EOF never: the end of a whole body is no error).
func fed(data []byte, size int) (*proxy.StreamState, error) {
	state := proxy.NewStreamState()
	reader := proxy.NewEventReader(&sizedReader{data, size})
	for {
		e, err := reader.Next()
		if err == io.EOF {
			return state, nil
		}
		if err == nil {
			err = state.Feed(e)
		}
		if err != nil {
			return state, err
		}
	}
}

// outcome is what a body amounts to: its Turn, or the code of the failure on the way.
func outcome(data []byte, size int) (proxy.Turn, string) {
	state, err := fed(data, size)
	if err == nil {
		var turn proxy.Turn
		turn, err = state.Finish()
		if err == nil {
			return turn, ""
		}
	}
	return proxy.Turn{}, codeOf(err)
}

// codeOf is the code of a *FailClosed error, "" for nil, and the error's text for any other error.
func codeOf(err error) string {
	var failure *proxy.FailClosed
	switch {
	case err == nil:
		return ""
	case errors.As(err, &failure):
		return failure.Code
	}
	return fmt.Sprintf("not a *FailClosed: %T %v", err, err)
}

// eventOf is one event as the given reader reads it.
func eventOf(t *testing.T, e map[string]any) proxy.Event {
	t.Helper()
	got, err := proxy.NewEventReader(bytes.NewReader(frame(e))).Next()
	if err != nil {
		t.Fatalf("the test's own event %s does not read: %v", show(e), err)
	}
	return got
}

// sseEvents is every event of a downstream stream, as JSON objects.
func sseEvents(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	reader := proxy.NewEventReader(&sizedReader{data, 5})
	var events []map[string]any
	for {
		e, err := reader.Next()
		if err == io.EOF {
			return events
		}
		if err != nil {
			t.Fatalf("the downstream stream does not read as events after %d of them: %v\n%s", len(events), err, tail(data))
		}
		events = append(events, decoded(t, e.Raw).(map[string]any))
	}
}

func kinds(events []map[string]any) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i], _ = e["type"].(string)
	}
	return out
}

func tail(data []byte) string {
	if len(data) > 400 {
		return "..." + string(data[len(data)-400:])
	}
	return string(data)
}

// ---- a scripted upstream --------------------------------------------------------------------------

// upstreamBody is one scripted answer's body: chunks, one per Read (a chunk larger than the Read
// comes in several). It counts what was read and whether it was closed. With breakAfter >= 0,
// reading past that many chunks fails with err (a connection that broke). With joined, the last
// chunk comes in the same Read as what follows it, io.EOF or the break, as io.Reader allows. With a gate, the Read of
// chunk gateAt waits until the gate opens, the request's ctx ends, or patience runs out; then it
// goes on. Like a real response body, a Read after the request's ctx ended fails with ctx's error.
type upstreamBody struct {
	mu         sync.Mutex
	chunks     [][]byte
	pending    []byte
	read       int
	closed     bool
	closedAt   int    // chunks read when it was closed
	closedBy   string // what had ended the wait at the gate when it was closed ("" when none had)
	breakAfter int
	err        error
	joined     bool
	gate       chan struct{}
	gateAt     int
	releasedBy string        // what ended the wait at the gate: "gate", "ctx" or "patience"
	atGate     chan struct{} // closed when a Read arrives at the gate
	released   chan struct{} // closed when that Read goes on
	ctx        context.Context
	closedNow  chan struct{}
}

func newBody(chunks ...[]byte) *upstreamBody {
	return &upstreamBody{chunks: chunks, breakAfter: -1, ctx: context.Background(), closedNow: make(chan struct{}),
		released: make(chan struct{})}
}

// breaking is a body that fails with err once it gave n chunks.
func breaking(n int, err error, chunks ...[]byte) *upstreamBody {
	b := newBody(chunks...)
	b.breakAfter, b.err = n, err
	return b
}

// gated is a body whose chunk n waits for the gate (see upstreamBody).
func gated(n int, chunks ...[]byte) *upstreamBody {
	b := newBody(chunks...)
	b.gate, b.gateAt, b.atGate = make(chan struct{}), n, make(chan struct{})
	return b
}

var errReadAfterClose = errors.New("read on a closed upstream body")

func (b *upstreamBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return 0, errReadAfterClose
	case b.ctx.Err() != nil:
		return 0, fmt.Errorf("upstream request: %w", b.ctx.Err())
	case len(b.pending) > 0:
		n := copy(p, b.pending)
		b.pending = b.pending[n:]
		return n, nil
	case b.read == b.breakAfter:
		return 0, b.err
	case b.read == len(b.chunks):
		return 0, io.EOF
	}
	if b.gate != nil && b.read == b.gateAt && b.releasedBy == "" {
		close(b.atGate)
		b.mu.Unlock()
		by := "gate"
		select {
		case <-b.gate:
		case <-b.ctx.Done():
			by = "ctx"
		case <-time.After(patience):
			by = "patience"
		}
		b.mu.Lock()
		b.releasedBy = by
		close(b.released)
		if b.closed || b.ctx.Err() != nil {
			return 0, fmt.Errorf("upstream request: %w", context.Canceled)
		}
	}
	chunk := b.chunks[b.read]
	b.read++
	n := copy(p, chunk)
	b.pending = chunk[n:]
	switch {
	case !b.joined || len(b.pending) > 0:
		return n, nil
	case b.read == b.breakAfter:
		return n, b.err
	case b.read == len(b.chunks):
		return n, io.EOF
	}
	return n, nil
}

func (b *upstreamBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed, b.closedAt, b.closedBy = true, b.read, b.releasedBy
		close(b.closedNow)
	}
	return nil
}

func (b *upstreamBody) state() (read int, closed, exhausted bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.read, b.closed, b.read == len(b.chunks) && len(b.pending) == 0
}

// waitGate waits until a Read arrived at the gate (or patience ran out); whether one did.
func (b *upstreamBody) waitGate() bool {
	select {
	case <-b.atGate:
		return true
	case <-time.After(patience):
		return false
	}
}

// release opens the gate and waits until the Read waiting there (if any) went on; what released it.
func (b *upstreamBody) release() string {
	close(b.gate)
	select {
	case <-b.released:
	case <-time.After(patience):
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.releasedBy
}

// closedPromptly waits until the body is closed (or twice patience ran out) and says whether it
// was closed before patience released the Read at its gate: once the client left, the proxy must
// close an upstream that is silent, and the request's ctx is how it learns that it must.
func (b *upstreamBody) closedPromptly() (bool, string) {
	select {
	case <-b.closedNow:
	case <-b.released: // a Read at the gate went on: the body must be closed right after
		select {
		case <-b.closedNow:
		case <-time.After(grace):
		}
	case <-time.After(2 * patience):
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed && b.closedBy != "patience", b.closedBy
}

func (b *upstreamBody) isClosed() bool    { _, closed, _ := b.state(); return closed }
func (b *upstreamBody) isExhausted() bool { _, _, done := b.state(); return done }

// waitClosed waits until the body is closed, or grace runs out; whether it was closed.
func (b *upstreamBody) waitClosed() bool {
	select {
	case <-b.closedNow:
		return true
	case <-time.After(grace):
		return false
	}
}

// scriptedUpstream answers each request with the next step of its script: a fixture name (its
// body, read readSize bytes at a time), raw bytes (cut the same way), a list of chunks exactly as
// given, an *upstreamBody, or an error (an upstream that answered an error status, or could not be
// reached). It records every request it was sent, as JSON.
type scriptedUpstream struct {
	t        *testing.T
	mu       sync.Mutex
	script   []any
	readSize int
	requests []map[string]any
	bodies   []*upstreamBody
}

func scripted(t *testing.T, steps ...any) *scriptedUpstream {
	return &scriptedUpstream{t: t, script: steps, readSize: 65536}
}

func (s *scriptedUpstream) Open(ctx context.Context, request []byte) (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sent map[string]any
	if err := json.Unmarshal(request, &sent); err != nil {
		sent = map[string]any{"not JSON": string(request)}
	}
	s.requests = append(s.requests, sent)
	if len(s.script) == 0 {
		return nil, errors.New("the proxy made more upstream requests than the test scripted")
	}
	step := s.script[0]
	s.script = s.script[1:]
	var b *upstreamBody
	switch step := step.(type) {
	case error:
		return nil, step
	case *upstreamBody:
		b = step
	case [][]byte:
		b = newBody(step...)
	case string:
		b = newBody(pieces(body(s.t, step), s.readSize)...)
	case []byte:
		b = newBody(pieces(step, s.readSize)...)
	default:
		panic(fmt.Sprintf("a script step of type %T", step))
	}
	b.mu.Lock()
	b.ctx = ctx
	b.mu.Unlock()
	s.bodies = append(s.bodies, b)
	return b, nil
}

func (s *scriptedUpstream) sent() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

func (s *scriptedUpstream) answered() []*upstreamBody {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bodies)
}

// allClosed is whether every body handed out was closed (and at least one was).
func (s *scriptedUpstream) allClosed() bool {
	bodies := s.answered()
	for _, b := range bodies {
		if !b.isClosed() {
			return false
		}
	}
	return len(bodies) > 0
}

// ---- tools ----------------------------------------------------------------------------------------

var forecasts = map[string]string{"Paris": "light rain, 14 C", "Lisbon": "sunny, 21 C"}

// weather is the proxy's get_weather tool, recording each run and whether the upstream answer
// before it had been read to its end and closed when it ran.
type weather struct {
	mu       sync.Mutex
	upstream *scriptedUpstream
	runs     []map[string]any
	afterEnd []bool
}

func newWeather(upstream *scriptedUpstream) *weather { return &weather{upstream: upstream} }

func (w *weather) tools() proxy.Tools {
	return proxy.Tools{"get_weather": func(_ context.Context, arguments map[string]any) (string, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.runs = append(w.runs, arguments)
		if w.upstream != nil {
			bodies := w.upstream.answered()
			_, closed, exhausted := bodies[len(bodies)-1].state()
			w.afterEnd = append(w.afterEnd, closed && exhausted)
		}
		city, _ := arguments["city"].(string)
		out, _ := json.Marshal(map[string]any{"city": arguments["city"], "forecast": forecasts[city]})
		return string(out), nil
	}}
}

func (w *weather) ran() []map[string]any {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.runs)
}

func (w *weather) ranAfterEnd() []bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.afterEnd)
}

// ctx is a context that ends with the test.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return c
}

// requestOf is payload as the server hands it to Handle.
func requestOf(payload map[string]any) proxy.Request {
	data, _ := json.Marshal(payload)
	var r proxy.Request
	json.Unmarshal(data, &r)
	return r
}

// ---- the proxy on 127.0.0.1 -----------------------------------------------------------------------

const toolsJSON = `[{"type":"function","name":"get_weather","strict":true,"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}]`

// request is the chapter's question with its tool, and the fields given (pairs of key and value).
func request(pairs ...any) map[string]any {
	base := map[string]any{"model": "gpt-4.1-mini", "input": "What is the weather in Paris?", "stream": false,
		"tools": json.RawMessage(toolsJSON)}
	return with(base, pairs...)
}

// served is a proxy on 127.0.0.1: its base URL, and what its server logged.
type served struct {
	url string
	log *lockedBuffer
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// serve starts p on 127.0.0.1 until the test ends. Then the server must close (its handlers
// returned) within patience, and have logged nothing: net/http logs a header written twice
// ("superfluous response.WriteHeader call") and a handler's panic.
func serve(t *testing.T, p *proxy.Proxy) served {
	t.Helper()
	logged := &lockedBuffer{}
	srv := httptest.NewUnstartedServer(p)
	srv.Config.ErrorLog = log.New(logged, "", 0)
	srv.Start()
	t.Cleanup(func() {
		closed := make(chan struct{})
		go func() {
			srv.Close()
			close(closed)
		}()
		select {
		case <-closed:
		case <-time.After(patience):
			t.Errorf("the proxy's handler had not returned %v after the test's last request (a handler blocked for good)", patience)
		}
		if text := logged.String(); text != "" {
			t.Errorf("the proxy's server logged:\n%s", text)
		}
	})
	return served{url: srv.URL, log: logged}
}

// answer is what a client received.
type answer struct {
	status   int
	header   http.Header
	body     []byte
	err      error // reading the body failed (the answer was cut)
	attempts int
}

func (a answer) String() string {
	return fmt.Sprintf("HTTP %d %s %s", a.status, a.header.Get("Content-Type"), tail(a.body))
}

// client is an HTTP client of the test's own: no connection of it outlives the test.
func client(t *testing.T) *http.Client {
	transport := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport, Timeout: 30 * time.Second}
}

// post sends payload (any JSON value, or []byte as it is) to url and reads the whole answer.
func post(t *testing.T, c *http.Client, url string, payload any) answer {
	t.Helper()
	got := tryPost(c, url, payload)
	if got.status == 0 {
		t.Fatalf("POST %s: %v (the proxy dropped the connection instead of answering)", url, got.err)
	}
	return got
}

// tryPost is post for any goroutine: a request that got no answer has status 0 and its error.
func tryPost(c *http.Client, url string, payload any) answer {
	data, ok := payload.([]byte)
	if !ok {
		data, _ = json.Marshal(payload)
	}
	resp, err := c.Post(url, "application/json", bytes.NewReader(data))
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: got, err: err, attempts: 1}
}

// ask posts payload to the proxy's /v1/responses.
func ask(t *testing.T, s served, payload any) answer {
	t.Helper()
	return post(t, client(t), s.url+"/v1/responses", payload)
}

// sdkLikeAsk posts payload the way the official SDKs do by default: an answer 408, 409, 429 or 5xx is
// sent again, up to 2 more times, unless it says X-Should-Retry: false ("true" forces a retry). No
// waiting here: the SDK's waits change nothing but time. The last answer, with its attempts.
func sdkLikeAsk(t *testing.T, s served, payload any) answer {
	t.Helper()
	c := client(t)
	for attempt := 1; ; attempt++ {
		got := post(t, c, s.url+"/v1/responses", payload)
		got.attempts = attempt
		said := strings.ToLower(got.header.Get("X-Should-Retry"))
		retry := said == "true" || (said != "false" && (got.status == 408 || got.status == 409 || got.status == 429 || got.status >= 500))
		if !retry || attempt > 2 {
			return got
		}
	}
}

// errorOf is an error answer's error object, which must have the API's shape.
func errorOf(t *testing.T, a answer) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(a.body, &doc); err != nil || len(doc) != 1 || doc["error"] == nil {
		t.Fatalf("an error answer is {\"error\": {...}} alone, got %s", a)
	}
	failure := object(t, doc["error"])
	for _, key := range []string{"message", "type", "param", "code"} {
		if _, ok := failure[key]; !ok {
			t.Fatalf("the error object has message, type, param and code: %s", show(failure))
		}
	}
	return failure
}

// failedClosed checks a 502 that fails closed with code: JSON in the API's error shape, not to be
// retried. The error object's message.
func failedClosed(t *testing.T, a answer, code string) string {
	t.Helper()
	if a.status != http.StatusBadGateway {
		t.Fatalf("a request that fails closed (%s) is answered 502, got %s", code, a)
	}
	if got := a.header.Get("Content-Type"); !strings.HasPrefix(got, "application/json") {
		t.Errorf("the 502 is JSON, got Content-Type %q", got)
	}
	if got := a.header.Get("X-Should-Retry"); got != "false" {
		t.Errorf("the 502 says X-Should-Retry: false, or an SDK sends the request again and its tools run again; got %q", got)
	}
	failure := errorOf(t, a)
	if failure["code"] != code {
		t.Errorf("the error names its code %q, got %s", code, show(failure))
	}
	message, _ := failure["message"].(string)
	return message
}

// rawClient talks HTTP on its own socket, for a client that goes away mid-answer.
type rawClient struct {
	conn   net.Conn
	reader *bufio.Reader
	seen   []byte
}

func rawAsk(t *testing.T, s served, payload any) *rawClient {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatalf("dial the proxy: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	data, _ := json.Marshal(payload)
	fmt.Fprintf(conn, "POST /v1/responses HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(data), data)
	return &rawClient{conn: conn, reader: bufio.NewReader(conn)}
}

// until reads until marker arrived (or patience ran out); whether it did.
func (c *rawClient) until(marker string) bool {
	c.conn.SetReadDeadline(time.Now().Add(patience))
	chunk := make([]byte, 4096)
	for !bytes.Contains(c.seen, []byte(marker)) {
		n, err := c.reader.Read(chunk)
		c.seen = append(c.seen, chunk[:n]...)
		if err != nil {
			return false
		}
	}
	return true
}

// streaming is an answer read as it arrives.
type streaming struct {
	resp *http.Response
	seen []byte
	err  error
}

// openStream posts payload to the proxy and returns once the answer's head arrived.
func openStream(t *testing.T, s served, payload any) *streaming {
	t.Helper()
	data, _ := json.Marshal(payload)
	resp, err := client(t).Post(s.url+"/v1/responses", "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return &streaming{resp: resp}
}

// until reads until marker arrived, or the answer ended; whether it arrived.
func (r *streaming) until(marker string) bool {
	chunk := make([]byte, 4096)
	for !bytes.Contains(r.seen, []byte(marker)) {
		if r.err != nil {
			return false
		}
		var n int
		n, r.err = r.resp.Body.Read(chunk)
		r.seen = append(r.seen, chunk[:n]...)
	}
	return true
}

// rest reads the answer to its end: all of it, and the error that ended it (nil at a whole end).
func (r *streaming) rest() ([]byte, error) {
	if r.err == nil {
		more, err := io.ReadAll(r.resp.Body)
		r.seen, r.err = append(r.seen, more...), err
	}
	if r.err == io.EOF {
		return r.seen, nil
	}
	return r.seen, r.err
}

// goneClient is a ResponseWriter whose client goes away at write number failAt: that write and
// every later one fail, as writes to a closed connection do, and so does a flush.
type goneClient struct {
	header  http.Header
	status  int
	written []byte
	writes  int
	failAt  int
	failed  int // writes that failed
}

var errClientGone = errors.New("write: broken pipe (the client went away)")

func newGoneClient(failAt int) *goneClient { return &goneClient{header: http.Header{}, failAt: failAt} }

func (g *goneClient) Header() http.Header { return g.header }

func (g *goneClient) WriteHeader(status int) {
	if g.status == 0 {
		g.status = status
	}
}

func (g *goneClient) Write(p []byte) (int, error) {
	g.writes++
	if g.writes >= g.failAt {
		g.failed++
		return 0, errClientGone
	}
	g.written = append(g.written, p...)
	return len(p), nil
}

// FlushError is how http.ResponseController flushes it.
func (g *goneClient) FlushError() error {
	if g.failed > 0 {
		return errClientGone
	}
	return nil
}

// ---- goroutines -----------------------------------------------------------------------------------

// noLeaks fails the test when goroutines it started are still running after it, its servers and
// clients closed, allowing them a moment to wind down; it shows their stacks. Call it first.
func noLeaks(t *testing.T) {
	t.Helper()
	before := goroutines()
	t.Cleanup(func() {
		deadline := time.Now().Add(grace)
		for {
			left := goroutines()
			for id := range before {
				delete(left, id)
			}
			if len(left) == 0 {
				return
			}
			if time.Now().After(deadline) {
				ids := make([]int, 0, len(left))
				for id := range left {
					ids = append(ids, id)
				}
				sort.Ints(ids)
				var stacks []string
				for _, id := range ids {
					stacks = append(stacks, left[id])
				}
				t.Errorf("%d goroutine(s) started during the test are still running after it (each request's "+
					"goroutines must end with it):\n\n%s", len(left), strings.Join(stacks, "\n\n"))
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

var goroutineHead = regexp.MustCompile(`^goroutine (\d+) `)

// goroutines is every goroutine but the caller's: id -> its stack.
func goroutines() map[int]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	found := map[int]string{}
	for i, stack := range strings.Split(string(buf), "\n\n") {
		head := goroutineHead.FindStringSubmatch(stack)
		if i == 0 || head == nil {
			continue // the first is the caller's own
		}
		id, _ := strconv.Atoi(head[1])
		found[id] = stack
	}
	return found
}

// ---- what the official SDKs require of what they read --------------------------------------------
// The harness checks the reference with the openai SDK itself; learners need not install it, so the
// catalog applies the same rules: the fields the SDK's types require (lists where it wants lists,
// never null), and the checks its stream reader makes (each output index added once, content events
// for items that exist, an item finished as it was added, one response from created to its end).

var apiErrorCodes = map[string]bool{"server_error": true, "rate_limit_exceeded": true, "invalid_prompt": true,
	"vector_store_timeout": true, "invalid_image": true, "invalid_image_format": true, "invalid_base64_image": true,
	"invalid_image_url": true, "image_too_large": true, "image_too_small": true, "image_parse_error": true,
	"image_content_policy_violation": true, "invalid_image_mode": true, "image_file_too_large": true,
	"unsupported_image_media_type": true, "empty_image_file": true, "failed_to_download_image": true,
	"image_file_not_found": true}

func isInt(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	_, err := n.Int64()
	return err == nil
}

func usageProblems(usage any) []string {
	if usage == nil {
		return nil
	}
	u, ok := usage.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("usage is an object or null, got %s", show(usage))}
	}
	var problems []string
	for _, key := range []string{"input_tokens", "output_tokens", "total_tokens"} {
		if !isInt(u[key]) {
			problems = append(problems, fmt.Sprintf("usage.%s is an integer, got %s", key, show(u[key])))
		}
	}
	in, _ := u["input_tokens_details"].(map[string]any)
	if !isInt(in["cached_tokens"]) || !isInt(in["cache_write_tokens"]) {
		problems = append(problems, fmt.Sprintf("usage.input_tokens_details holds cached_tokens and cache_write_tokens: %s", show(u["input_tokens_details"])))
	}
	out, _ := u["output_tokens_details"].(map[string]any)
	if !isInt(out["reasoning_tokens"]) {
		problems = append(problems, fmt.Sprintf("usage.output_tokens_details holds reasoning_tokens: %s", show(u["output_tokens_details"])))
	}
	return problems
}

// messageProblems is what the SDK's types refuse in a message item.
func messageProblems(item map[string]any) []string {
	var problems []string
	for _, key := range []string{"id", "status", "role"} {
		if _, ok := item[key].(string); !ok {
			problems = append(problems, fmt.Sprintf("a message item has its %s, got %s", key, show(item)))
		}
	}
	content, ok := item["content"].([]any)
	if !ok {
		return append(problems, fmt.Sprintf("a message's content is a list (never null), got %s", show(item["content"])))
	}
	for _, p := range content {
		part, _ := p.(map[string]any)
		switch part["type"] {
		case "output_text":
			_, text := part["text"].(string)
			_, annotations := part["annotations"].([]any)
			if !text || !annotations {
				problems = append(problems, fmt.Sprintf("an output_text part has its text and its annotations list: %s", show(p)))
			}
		case "refusal":
			if _, refusal := part["refusal"].(string); !refusal {
				problems = append(problems, fmt.Sprintf("a refusal part has its refusal: %s", show(p)))
			}
		default:
			problems = append(problems, fmt.Sprintf("a message part is output_text or refusal: %s", show(p)))
		}
	}
	return problems
}

// responseProblems is what the SDK's Response type refuses in a response object.
func responseProblems(response any) []string {
	r, ok := response.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("a response is an object, got %s", show(response))}
	}
	var problems []string
	for _, key := range []string{"id", "model", "status"} {
		if _, ok := r[key].(string); !ok {
			problems = append(problems, fmt.Sprintf("response.%s is a string, got %s", key, show(r[key])))
		}
	}
	if r["object"] != "response" {
		problems = append(problems, fmt.Sprintf("response.object is \"response\", got %s", show(r["object"])))
	}
	if !isInt(r["created_at"]) {
		problems = append(problems, fmt.Sprintf("response.created_at is a number of seconds, got %s", show(r["created_at"])))
	}
	if _, ok := r["parallel_tool_calls"].(bool); !ok {
		problems = append(problems, fmt.Sprintf("response.parallel_tool_calls is a boolean, got %s", show(r["parallel_tool_calls"])))
	}
	if _, ok := r["tools"].([]any); !ok {
		problems = append(problems, fmt.Sprintf("response.tools is a list (never null), got %s", show(r["tools"])))
	}
	switch r["tool_choice"].(type) {
	case string, map[string]any:
	default:
		problems = append(problems, fmt.Sprintf("response.tool_choice is a string or an object, got %s", show(r["tool_choice"])))
	}
	problems = append(problems, usageProblems(r["usage"])...)
	if failure := r["error"]; failure != nil {
		e, _ := failure.(map[string]any)
		code, _ := e["code"].(string)
		if _, message := e["message"].(string); !apiErrorCodes[code] || !message {
			problems = append(problems, fmt.Sprintf("response.error has one of the API's codes and a message, got %s", show(failure)))
		}
	}
	output, ok := r["output"].([]any)
	if !ok {
		return append(problems, fmt.Sprintf("response.output is a list (never null), got %s", show(r["output"])))
	}
	for _, item := range output {
		i, _ := item.(map[string]any)
		switch i["type"] {
		case "message":
			problems = append(problems, messageProblems(i)...)
		case nil:
			problems = append(problems, fmt.Sprintf("an output item is an object with a type: %s", show(item)))
		}
	}
	return problems
}

// streamProblems is what the SDK's stream reader raises on, or its types refuse, in a downstream
// event stream.
func streamProblems(events []map[string]any) []string {
	if len(events) == 0 || events[0]["type"] != "response.created" {
		return []string{"the stream opens with response.created"}
	}
	var problems []string
	for i, e := range events {
		if n, ok := e["sequence_number"].(json.Number); !ok || n.String() != strconv.Itoa(i) {
			problems = append(problems, fmt.Sprintf("sequence numbers count from 0 without a gap: event %d (%s) carries %s", i, e["type"], show(e["sequence_number"])))
			break
		}
	}
	opened := asMap(events[0]["response"])["id"]
	added, finished := map[string]map[string]any{}, map[string]map[string]any{}
	parts, closedParts := map[string]string{}, map[string]bool{}
	for _, e := range events {
		kind, _ := e["type"].(string)
		if response, ok := e["response"].(map[string]any); ok {
			for _, p := range responseProblems(response) {
				problems = append(problems, kind+": "+p)
			}
			if response["id"] != opened {
				problems = append(problems, fmt.Sprintf("%s names response %s, the stream opened %s", kind, show(response["id"]), show(opened)))
			}
		}
		index := fmt.Sprint(e["output_index"])
		part := index + "/" + fmt.Sprint(e["content_index"])
		switch kind {
		case "response.output_item.added":
			if added[index] != nil {
				problems = append(problems, "Duplicate response output index "+index)
			}
			added[index], _ = e["item"].(map[string]any)
			if added[index]["type"] == "message" {
				problems = append(problems, messageProblems(added[index])...)
			}
		case "response.output_item.done":
			item, _ := e["item"].(map[string]any)
			before := added[index]
			if before == nil || before["type"] != item["type"] || before["id"] != item["id"] || before["call_id"] != item["call_id"] {
				problems = append(problems, fmt.Sprintf("output index %s finished as another item than it was added: %s then %s", index, show(before), show(item)))
			}
			if finished[index] != nil {
				problems = append(problems, "output index "+index+" finished twice")
			}
			finished[index] = item
			if item["type"] == "message" {
				problems = append(problems, messageProblems(item)...)
			}
		case "response.content_part.added":
			if added[index]["type"] != "message" || e["item_id"] != added[index]["id"] {
				problems = append(problems, fmt.Sprintf("a content part for output index %s, which is no message added under %s", index, show(e["item_id"])))
			}
			if _, twice := parts[part]; twice {
				problems = append(problems, "content part "+part+" added twice")
			}
			parts[part], _ = asMap(e["part"])["type"].(string)
		case "response.content_part.done":
			if parts[part] != asMap(e["part"])["type"] {
				problems = append(problems, "content part "+part+" finished as another part than it was added")
			}
			if closedParts[part] {
				problems = append(problems, "content part "+part+" finished twice")
			}
			closedParts[part] = true
		case "response.output_text.delta", "response.output_text.done", "response.refusal.delta", "response.refusal.done":
			want := "output_text"
			if strings.HasPrefix(kind, "response.refusal") {
				want = "refusal"
			}
			if parts[part] != want {
				problems = append(problems, fmt.Sprintf("%s for content %s, which is no %s part added", kind, part, want))
			}
			if _, ok := e["logprobs"].([]any); want == "output_text" && !ok {
				problems = append(problems, kind+" carries its logprobs list")
			}
		case "response.function_call_arguments.delta", "response.function_call_arguments.done":
			if added[index]["type"] != "function_call" || added[index]["id"] != e["item_id"] {
				problems = append(problems, fmt.Sprintf("%s for output index %s and item %s, which is no function call added", kind, index, show(e["item_id"])))
			}
		}
	}
	switch events[len(events)-1]["type"] {
	case "response.completed":
		for index := range added {
			if finished[index] == nil {
				problems = append(problems, "Cannot complete response with unfinished output items: "+index)
			}
		}
		for part := range parts {
			if !closedParts[part] {
				problems = append(problems, "content part "+part+" never finished")
			}
		}
	case "response.failed":
	default:
		problems = append(problems, fmt.Sprintf("the stream ends with response.completed or response.failed, not %s", show(events[len(events)-1]["type"])))
	}
	return problems
}

// messageText is the text (or refusal) of every message of a response object.
func messageText(response map[string]any, kind string) string {
	field := "text"
	if kind == "refusal" {
		field = "refusal"
	}
	var out strings.Builder
	output, _ := response["output"].([]any)
	for _, item := range output {
		i, _ := item.(map[string]any)
		if i["type"] != "message" {
			continue
		}
		content, _ := i["content"].([]any)
		for _, p := range content {
			part, _ := p.(map[string]any)
			if part["type"] == kind {
				text, _ := part[field].(string)
				out.WriteString(text)
			}
		}
	}
	return out.String()
}

// refusedURL is a base URL on 127.0.0.1 whose port is bound but not listening, so that a connection
// to it is refused. The port stays bound until the test ends: a port closed at once could be given
// to a server the test starts next (a proxy would then reach that server, or itself).
func refusedURL(t *testing.T) string {
	t.Helper()
	held, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(held) })
	if err := syscall.Bind(held, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	bound, err := syscall.Getsockname(held)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/v1", bound.(*syscall.SockaddrInet4).Port)
}
