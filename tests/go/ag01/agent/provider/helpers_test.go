package provider_test

// Helpers of the ag01 catalog: the language-neutral delta form of streams.json, readers that cut a
// body into reads, a recorder that stands in for the retry sleep.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tinyllm/agent/provider"
	"tinyllm/agent/types"
)

// readSizes are the read sizes every recorded stream is read at.
var readSizes = []int{1, 7, 65536}

// streamsFile is fixtures/ag01/streams.json, the recorded streams both tracks read.
type streamsFile struct {
	HandExample struct {
		ReadSize int `json:"read_size"`
		Events   []struct {
			Data   string `json:"data"`
			Deltas []any  `json:"deltas"`
		} `json:"events"`
		Body string `json:"body"`
	} `json:"hand_example"`
	Streams []recordedStream `json:"streams"`
}

type recordedStream struct {
	Name     string `json:"name"`
	Body     string `json:"body"`
	Expected struct {
		Deltas       []any          `json:"deltas"`
		Message      map[string]any `json:"message"`
		Usage        map[string]any `json:"usage"`
		FinishReason string         `json:"finish_reason"`
		Error        *string        `json:"error"`
	} `json:"expected"`
}

var (
	streamsOnce sync.Once
	streams     streamsFile
	streamsErr  error
)

// loadStreams reads streams.json from the folder named by COURSE_FIXTURES (course check sets it).
func loadStreams(t *testing.T) streamsFile {
	t.Helper()
	streamsOnce.Do(func() {
		dir := os.Getenv("COURSE_FIXTURES")
		if dir == "" {
			streamsErr = errors.New("COURSE_FIXTURES is not set: run the catalog with `course check`, or set it to the chapter's fixtures folder")
			return
		}
		raw, err := os.ReadFile(filepath.Join(dir, "streams.json"))
		if err != nil {
			streamsErr = err
			return
		}
		streamsErr = json.Unmarshal(raw, &streams)
	})
	if streamsErr != nil {
		t.Fatalf("reading the recorded streams: %v", streamsErr)
	}
	return streams
}

// neutral is a delta in the language-neutral form of streams.json, as JSON-decoded values.
func neutral(d types.Delta) any {
	var m map[string]any
	switch d := d.(type) {
	case types.TextDelta:
		m = map[string]any{"type": "text", "text": d.Text}
	case types.ToolCallStartDelta:
		m = map[string]any{"type": "tool_start", "index": d.Index, "id": d.ID, "name": d.Name}
	case types.ToolCallArgsDelta:
		m = map[string]any{"type": "tool_args", "index": d.Index, "fragment": d.Fragment}
	case types.ToolCallEndDelta:
		m = map[string]any{"type": "tool_end", "index": d.Index, "id": d.Call.ID, "name": d.Call.Name, "arguments": string(d.Call.Args)}
	case types.UsageDelta:
		m = map[string]any{"type": "usage", "input": d.In, "output": d.Out}
	case types.DoneDelta:
		m = map[string]any{"type": "done", "finish_reason": d.FinishReason}
	case types.ErrorDelta:
		m = errorForm(d.Err)
		m["type"] = "error"
	default:
		m = map[string]any{"type": fmt.Sprintf("not a delta: %#v", d)}
	}
	return jsonValue(m)
}

func neutralAll(ds []types.Delta) []any {
	out := make([]any, len(ds))
	for i, d := range ds {
		out[i] = neutral(d)
	}
	return out
}

func errorForm(err error) map[string]any {
	var se *provider.StreamError
	switch {
	case errors.Is(err, provider.ErrNoDone):
		return map[string]any{"error": "stream_cut"}
	case errors.As(err, &se):
		return map[string]any{"error": "stream_error", "error_type": se.Type, "message": se.Message}
	case err == nil:
		return map[string]any{"error": nil}
	}
	return map[string]any{"error": fmt.Sprintf("%T", err), "message": err.Error()}
}

// errorKind is the error field of streams.json's collected form: null, stream_cut or stream_error.
func errorKind(err error) any {
	if err == nil {
		return nil
	}
	return errorForm(err)["error"]
}

// jsonValue turns v into what json.Unmarshal gives for its JSON, so it compares with the fixtures.
func jsonValue(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unmarshalable %#v: %v", v, err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Sprintf("unreadable %s: %v", raw, err)
	}
	return out
}

// show is v as compact JSON, for messages.
func show(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(raw)
}

func equalJSON(a, b any) bool { return show(jsonValue(a)) == show(jsonValue(b)) }

// mismatch says, in words, where two delta sequences first differ.
func mismatch(got, want []any) string {
	for i := 0; i < len(got) && i < len(want); i++ {
		if !equalJSON(got[i], want[i]) {
			return fmt.Sprintf("delta #%d differs: got %s, want %s", i, show(got[i]), show(want[i]))
		}
	}
	if len(got) > len(want) {
		return fmt.Sprintf("%d extra delta(s) at the end: %s", len(got)-len(want), show(got[len(want):]))
	}
	if len(got) < len(want) {
		return fmt.Sprintf("%d delta(s) missing at the end: %s", len(want)-len(got), show(want[len(got):]))
	}
	return "equal"
}

// chunkedReader returns at most size bytes per Read, the way a socket delivers small packets.
type chunkedReader struct {
	data  []byte
	size  int
	reads int
}

func (r *chunkedReader) Read(p []byte) (int, error) {
	r.reads++
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(r.size, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

func chunked(data []byte, size int) *chunkedReader { return &chunkedReader{data: data, size: size} }

// cutReader returns data in the pieces that the cut offsets make, one piece per Read. Two ways of
// its own, both allowed to any io.Reader: an empty Read (0, nil) before each piece, and the last
// piece returned together with io.EOF.
type cutReader struct {
	data              []byte
	cuts              []int // increasing offsets inside data
	pos               int
	empty, eofWithEnd bool
	emptied           bool // the empty Read before the next piece was returned
}

func (r *cutReader) Read(p []byte) (int, error) {
	if r.pos >= len(r.data) {
		return 0, io.EOF
	}
	if r.empty && !r.emptied {
		r.emptied = true
		return 0, nil
	}
	r.emptied = false
	end := len(r.data)
	for len(r.cuts) > 0 && r.cuts[0] <= r.pos {
		r.cuts = r.cuts[1:]
	}
	if len(r.cuts) > 0 {
		end = r.cuts[0]
	}
	n := copy(p, r.data[r.pos:end])
	r.pos += n
	if r.eofWithEnd && r.pos == len(r.data) {
		return n, io.EOF
	}
	return n, nil
}

// readStep is what one Read of a scriptedReader gives: bytes, and err with the last of them (no
// bytes and no error is an empty Read).
type readStep struct {
	data []byte
	err  error
}

// scriptedReader gives its steps in turn, one per Read (what does not fit in p comes with the next
// Read); the last step's error, which ends the script, comes again on every later Read. It counts
// what an EventReader must not do: Read with an empty buffer (it can only return nothing) and Read on
// and on after the end; past a limit it answers errMisused, so that such a reader stops.
type scriptedReader struct {
	steps          []readStep
	emptyBuffers   int
	readsAfterLast int
}

var errMisused = errors.New("the test's reader was misused (see the test's message)")

func (r *scriptedReader) Read(p []byte) (int, error) {
	step := &r.steps[0]
	if len(step.data) == 0 && len(r.steps) == 1 {
		if r.readsAfterLast++; r.readsAfterLast > 100 {
			return 0, errMisused
		}
		return 0, step.err
	}
	if len(p) == 0 {
		if r.emptyBuffers++; r.emptyBuffers > 100 {
			return 0, errMisused
		}
		return 0, nil
	}
	n := copy(p, step.data)
	step.data = step.data[n:]
	if len(step.data) > 0 {
		return n, nil
	}
	err := step.err
	if len(r.steps) > 1 {
		r.steps = r.steps[1:]
	}
	return n, err
}

// pieces is data cut into pieces of size bytes.
func pieces(data []byte, size int) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		n := min(size, len(data))
		out = append(out, data[:n])
		data = data[n:]
	}
	return out
}

// readBody runs a whole body through EventReader (reads of size bytes) and Decoder; a body that
// ends before the decoder says finished is a cut stream, as the provider reports it.
func readBody(body []byte, size int) []types.Delta {
	events := provider.NewEventReader(chunked(body, size))
	decoder := provider.NewDecoder()
	var out []types.Delta
	for {
		data, err := events.Next()
		if err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				err = provider.ErrNoDone
			}
			return append(out, types.ErrorDelta{Err: err})
		}
		deltas, finished := decoder.Event(data)
		out = append(out, deltas...)
		if finished {
			return out
		}
	}
}

func messageForm(m types.Message) any {
	calls := []any{}
	for _, c := range m.ToolCalls {
		calls = append(calls, map[string]any{"id": c.ID, "name": c.Name, "arguments": string(c.Args)})
	}
	return jsonValue(map[string]any{"role": string(m.Role), "content": m.Content, "tool_calls": calls})
}

func user(text string) types.Message { return types.Message{Role: types.RoleUser, Content: text} }

func textsOf(ds []types.Delta) []string {
	out := []string{}
	for _, d := range ds {
		if td, ok := d.(types.TextDelta); ok {
			out = append(out, td.Text)
		}
	}
	return out
}

// drain reads ch to its end, failing the test if that takes longer than limit.
func drain(t *testing.T, ch <-chan types.Delta, limit time.Duration) []types.Delta {
	t.Helper()
	var out []types.Delta
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		select {
		case d, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, d)
		case <-deadline.C:
			t.Fatalf("the delta channel was still open after %v (deltas so far: %s); the producer must close it after the last delta", limit, show(neutralAll(out)))
			return out
		}
	}
}

// sleepRecorder stands in for RetryPolicy.Sleep: it records every wait asked for and never waits.
type sleepRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleepRecorder) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	return ctx.Err()
}

func (s *sleepRecorder) Waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

func durations(ds ...time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// testContext is a context that ends with the test, so no stream outlives it.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

// apiChunk is the data of one chunk shaped like the real API's (id, created, model,
// system_fingerprint, logprobs, and "usage" on every chunk); delta, finish and usage are JSON text.
func apiChunk(delta, finish, usage string) string {
	return `{"id":"chatcmpl-9xYz","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18",` +
		`"system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + finish + `}],"usage":` + usage + `}`
}

// usageChunk is the last chunk of a request with include_usage: no choices, the usage.
func usageChunk(usage string) string {
	return `{"id":"chatcmpl-9xYz","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":` + usage + `}`
}

// callEntry is a delta with one tool-call fragment; id and name only when given (a call's first
// fragment carries them, and some providers repeat them in every one).
func callEntry(index int, id, name, arguments string) string {
	entry := map[string]any{"index": index, "function": map[string]any{"arguments": arguments}}
	if id != "" {
		entry["id"], entry["type"] = id, "function"
	}
	if name != "" {
		entry["function"].(map[string]any)["name"] = name
	}
	raw, _ := json.Marshal(map[string]any{"tool_calls": []any{entry}})
	return string(raw)
}

// checkDecoded runs event data through one Decoder, until it says finished, and compares the deltas
// (reported as a test error); it says whether they were right.
func checkDecoded(t *testing.T, what string, events []string, want []any) bool {
	t.Helper()
	decoder := provider.NewDecoder()
	var deltas []types.Delta
	for _, data := range events {
		ds, finished := decoder.Event([]byte(data))
		deltas = append(deltas, ds...)
		if finished {
			break
		}
	}
	if got := neutralAll(deltas); !equalJSON(got, want) {
		t.Errorf("%s: %s\n  got:  %s\n  want: %s", what, mismatch(got, jsonValue(want).([]any)), show(got), show(want))
		return false
	}
	return true
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// pipeBody is a response body the test writes: write returns once the client has read it all, and
// closed is closed when the client closes the body.
type pipeBody struct {
	r      *io.PipeReader
	w      *io.PipeWriter
	closed chan struct{}
	once   sync.Once
}

func newPipeBody() *pipeBody {
	r, w := io.Pipe()
	return &pipeBody{r: r, w: w, closed: make(chan struct{})}
}

func (b *pipeBody) Read(p []byte) (int, error) { return b.r.Read(p) }

func (b *pipeBody) Close() error {
	b.once.Do(func() {
		close(b.closed)
		b.r.Close()
	})
	return nil
}

func (b *pipeBody) write(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(b.w, s); err != nil {
		t.Fatalf("writing the response body: %v", err)
	}
}

// longEvent is head, then left bytes of 'x', then tail, read bytes per Read: a long event without
// building it first.
type longEvent struct {
	head, tail []byte
	left, read int
}

var xs = bytes.Repeat([]byte("x"), 4096)

func (r *longEvent) Read(p []byte) (int, error) {
	p = p[:min(len(p), r.read)]
	n := copy(p, r.head)
	r.head = r.head[n:]
	if len(r.head) == 0 && r.left > 0 {
		m := copy(p[n:], xs[:min(r.left, len(xs))])
		r.left -= m
		n += m
	}
	if r.left == 0 {
		m := copy(p[n:], r.tail)
		r.tail = r.tail[m:]
		n += m
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// cpuTime is the CPU time this process has used so far. Unlike the time on the clock, it does not
// count the time other processes held the cores, so a busy machine does not change it much.
func cpuTime() time.Duration {
	var use syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &use); err != nil {
		panic(err)
	}
	return time.Duration(use.Utime.Nano() + use.Stime.Nano())
}
