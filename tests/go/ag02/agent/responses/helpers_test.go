package responses_test

// Helpers of the ag02 catalog: the authored sequences of fixtures/ag02 (COURSE_FIXTURES), events
// built in the tests, and in-memory stand-ins for the transport: a scripted Opener whose streams
// replay events and record every request, every event taken and every close.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tinyllm/agent/responses"
)

const model = "gpt-4.1-mini"

// ---- the fixtures ---------------------------------------------------------------------------------

// sequence is one authored sequence of fixtures/ag02 (see its README).
type sequence struct {
	About  string            `json:"about"`
	Tools  []string          `json:"tools"`
	End    string            `json:"end"`
	Expect expectation       `json:"expect"`
	Events []json.RawMessage `json:"events"`
}

type expectation struct {
	Message any    `json:"message"` // the neutral form of messageForm, nil when a failure is expected
	Failure string `json:"failure"`
}

var (
	fixturesMu sync.Mutex
	fixtures   = map[string][]byte{}
)

// fixture is the text of fixtures/ag02/NAME.json, read once.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	if raw, ok := fixtures[name]; ok {
		return raw
	}
	dir := os.Getenv("COURSE_FIXTURES")
	if dir == "" {
		t.Fatal("COURSE_FIXTURES is not set: run the catalog with `course check`, or set it to the chapter's fixtures folder")
	}
	raw, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatalf("reading the fixture %s: %v", name, err)
	}
	fixtures[name] = raw
	return raw
}

// load is a fresh copy of one authored sequence.
func load(t testing.TB, name string) sequence {
	t.Helper()
	var seq sequence
	if err := json.Unmarshal(fixture(t, name), &seq); err != nil {
		t.Fatalf("the fixture %s: %v", name, err)
	}
	return seq
}

func events(t testing.TB, name string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, e := range load(t, name).Events {
		out = append(out, []byte(e))
	}
	return out
}

// sequenceNames are the authored sequences: every fixture but tools and scenarios.
func sequenceNames(t testing.TB) []string {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(os.Getenv("COURSE_FIXTURES"), "*.json"))
	if err != nil || len(found) == 0 {
		t.Fatalf("no fixtures in COURSE_FIXTURES=%q (%v)", os.Getenv("COURSE_FIXTURES"), err)
	}
	var names []string
	for _, path := range found {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		if name != "tools" && name != "scenarios" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// toolSpecs is the fixture tool catalog, or the named part of it.
func toolSpecs(t testing.TB, names ...string) []responses.ToolSpec {
	t.Helper()
	var catalog struct {
		Tools []struct {
			Name, Description string
			Parameters        []string
		} `json:"tools"`
	}
	if err := json.Unmarshal(fixture(t, "tools"), &catalog); err != nil {
		t.Fatalf("tools.json: %v", err)
	}
	var specs []responses.ToolSpec
	for _, tool := range catalog.Tools {
		if len(names) == 0 || contains(names, tool.Name) {
			specs = append(specs, responses.ToolSpec{Name: tool.Name, Description: tool.Description, Parameters: tool.Parameters})
		}
	}
	return specs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// messageForm is a Message in the neutral form of the fixtures' "expect", as JSON values.
func messageForm(m responses.Message) any {
	calls := []any{}
	for _, c := range m.ToolCalls {
		arguments := map[string]any{}
		for k, v := range c.Arguments {
			arguments[k] = v
		}
		calls = append(calls, map[string]any{"id": c.ID, "name": c.Name, "arguments": arguments})
	}
	return jsonValue(map[string]any{"role": string(m.Role), "content": m.Content, "refusal": m.Refusal, "tool_calls": calls})
}

// jsonValue is v as json.Unmarshal gives it back, to compare with what the fixtures hold.
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

// show is v as compact JSON, for messages: its first 600 bytes.
func show(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	if len(raw) > 600 {
		return string(raw[:600]) + "..."
	}
	return string(raw)
}

func sameJSON(a, b any) bool { return reflect.DeepEqual(jsonValue(a), jsonValue(b)) }

// ---- events built in the tests ----------------------------------------------------------------------

type obj = map[string]any

func created(rid string) obj {
	return obj{"type": "response.created", "sequence_number": 0, "response": obj{"id": rid, "status": "in_progress", "output": []any{}}}
}

func callItem(itemID, callID, name, arguments, status string) obj {
	return obj{"id": itemID, "type": "function_call", "status": status, "call_id": callID, "name": name, "arguments": arguments}
}

func added(item obj) obj {
	return obj{"type": "response.output_item.added", "output_index": 0, "item": item}
}

func delta(itemID, text string) obj {
	return obj{"type": "response.function_call_arguments.delta", "item_id": itemID, "output_index": 0, "delta": text}
}

func done(itemID, arguments string) obj {
	return obj{"type": "response.function_call_arguments.done", "item_id": itemID, "output_index": 0, "arguments": arguments}
}

func itemDone(item obj) obj {
	return obj{"type": "response.output_item.done", "output_index": 0, "item": item}
}

func completed(output []any, rid, status string) obj {
	return obj{"type": "response.completed", "response": obj{"id": rid, "status": status, "output": output}}
}

func textDelta(text, kind string) obj {
	return obj{"type": "response." + kind + ".delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text}
}

func messageItem(parts ...any) obj {
	if parts == nil {
		parts = []any{} // an empty list, not null
	}
	return obj{"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": parts}
}

// with is a copy of o with the given keys set (a value of `absent` removes the key).
func with(o obj, kv ...any) obj {
	out := obj{}
	for k, v := range o {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == absent {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

type absentKey struct{}

var absent = absentKey{}

// oneCall is a whole response with one call streamed in one delta and listed as it was streamed.
func oneCall(arguments, name string) []any {
	return []any{created("resp_1"), added(callItem("fc_1", "call_1", name, "", "in_progress")), delta("fc_1", arguments),
		completed([]any{callItem("fc_1", "call_1", name, arguments, "completed")}, "resp_1", "completed")}
}

// encode is an event's data: built events as JSON, raw JSON ([]byte, json.RawMessage) as it is.
func encode(event any) []byte {
	switch e := event.(type) {
	case []byte:
		return e
	case json.RawMessage:
		return e
	}
	raw, err := json.Marshal(event)
	if err != nil {
		panic(fmt.Sprintf("the test's own event does not marshal: %v", err))
	}
	return raw
}

func describe(event any) string {
	var e struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(encode(event), &e) == nil && e.Type != nil {
		return fmt.Sprint(e.Type)
	}
	return fmt.Sprintf("%.60s", encode(event))
}

// ---- feeding an assembly -----------------------------------------------------------------------------

// recorder is a Report observer that keeps what it was shown, and a Sleep that keeps its waits.
type recorder struct {
	mu      sync.Mutex
	reports [][2]string
	sleeps  []time.Duration
}

func (r *recorder) report(kind, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, [2]string{kind, detail})
}

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sleeps = append(r.sleeps, d)
	return nil
}

func (r *recorder) kinds(kind string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rep := range r.reports {
		if rep[0] == kind {
			out = append(out, rep[1])
		}
	}
	return out
}

func newAssembly(t testing.TB, rec *recorder) *responses.Assembly {
	if rec == nil {
		rec = &recorder{}
	}
	return responses.NewAssembly(toolSpecs(t), rec.report)
}

// outcome is what feeding events in order gives: the decision, the failure code, and the index of
// the event that decided (len(events) when none did).
type outcome struct {
	decision *responses.Message
	code     string
	err      error
	at       int
}

func (o outcome) String() string {
	switch {
	case o.err != nil && o.code == "":
		return fmt.Sprintf("an error that is no *ResponseError at event %d: %v", o.at, o.err)
	case o.err != nil:
		return fmt.Sprintf("failure %s at event %d", o.code, o.at)
	case o.decision != nil:
		return fmt.Sprintf("a decision at event %d", o.at)
	}
	return "no decision"
}

func feed(asm *responses.Assembly, events []any) outcome {
	for i, event := range events {
		decision, err := asm.Accept(encode(event))
		if err != nil {
			return outcome{code: code(err), err: err, at: i}
		}
		if decision != nil {
			return outcome{decision: decision, at: i}
		}
	}
	return outcome{at: len(events)}
}

// code is a failure's stable code: a *ResponseError's own, "" for any other error.
func code(err error) string {
	var failure *responses.ResponseError
	if errors.As(err, &failure) {
		return failure.Code
	}
	return ""
}

// failureCode is code, with "transport" for a broken connection (a reset).
func failureCode(err error) string {
	if c := code(err); c != "" {
		return c
	}
	if errors.Is(err, syscall.ECONNRESET) {
		return "transport"
	}
	return fmt.Sprintf("%T", err)
}

// expectFailure feeds events to a new assembly and checks that they fail with want, with a detail.
func expectFailure(t *testing.T, events []any, want, what string) {
	t.Helper()
	asm := newAssembly(t, nil)
	for at, event := range events {
		decision, err := asm.Accept(encode(event))
		if err != nil {
			var failure *responses.ResponseError
			switch {
			case !errors.As(err, &failure):
				t.Errorf("%s: event %d (%s) gave an error that is no *ResponseError: %v; want failure %q", what, at, describe(event), err, want)
			case failure.Code != want:
				t.Errorf("%s: failure %q at event %d (%s), want failure %q (%v)", what, failure.Code, at, describe(event), want, err)
			case failure.Detail == "":
				t.Errorf("%s: failure %q must say what was seen, in its Detail (empty)", what, want)
			}
			return
		}
		if decision != nil {
			t.Errorf("%s: a decision was released at event %d (%s), want failure %q", what, at, describe(event), want)
			return
		}
	}
	t.Errorf("%s: no failure after %d events, want failure %q", what, len(events), want)
}

// ---- a transport without a network -------------------------------------------------------------------

// errReset is the scripted transport failure: the connection was reset in the middle of the stream.
var errReset = fmt.Errorf("read tcp 127.0.0.1:8080: %w (scripted)", syscall.ECONNRESET)

// replayStream is an acquired Stream that gives authored events, then ends ("eof") or breaks
// ("reset"); with stallAfter >= 0 it waits, after that many events, until its context is done, as a
// model still thinking does. The data Next returns lives in one buffer that the next call first
// scribbles over: it is valid until the next call, as the Stream contract says, and not a moment
// longer. It records the events taken, its closes, and calls made after it was closed.
type replayStream struct {
	events     [][]byte
	end        string
	closeErr   error
	stallAfter int
	stalling   chan struct{} // closed when the stream starts waiting (stallAfter)

	mu       sync.Mutex
	ctx      context.Context
	buf      []byte
	taken    int
	closed   int
	afterEnd int // calls of Next after it closed
	log      *[]string
	logMu    *sync.Mutex
}

func newStream(events [][]byte, end string) *replayStream {
	return &replayStream{events: events, end: end, stallAfter: -1, stalling: make(chan struct{})}
}

func replay(t testing.TB, name string) *replayStream {
	t.Helper()
	seq := load(t, name)
	return newStream(events(t, name), seq.End)
}

func (s *replayStream) note(entry string) {
	if s.log != nil {
		s.logMu.Lock()
		*s.log = append(*s.log, entry)
		s.logMu.Unlock()
	}
}

func (s *replayStream) Next() ([]byte, error) {
	s.mu.Lock()
	if s.closed > 0 {
		s.afterEnd++
		s.mu.Unlock()
		return nil, errors.New("replayStream: Next after Close")
	}
	for i := range s.buf {
		s.buf[i] = '#' // what the last call returned is no longer valid
	}
	if s.taken == s.stallAfter {
		ctx := s.ctx
		s.mu.Unlock()
		close(s.stalling)
		<-ctx.Done()
		return nil, fmt.Errorf("waiting for the model: %w", ctx.Err())
	}
	defer s.mu.Unlock()
	if s.taken == len(s.events) {
		if s.end == "reset" {
			s.note("reset")
			return nil, errReset
		}
		return nil, io.EOF
	}
	event := s.events[s.taken]
	s.taken++
	s.note("event " + describe(event))
	s.buf = append(s.buf[:0], event...)
	return s.buf, nil
}

func (s *replayStream) Close() error {
	s.mu.Lock()
	s.closed++
	s.mu.Unlock()
	s.note("close")
	return s.closeErr
}

func (s *replayStream) counts() (taken, closed, afterEnd int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.taken, s.closed, s.afterEnd
}

// script stands in for the transport: each opening attempt meets the next entry, an error
// (returned) or a *replayStream (acquired). It records every request, as JSON, and a log of
// openings, events and closes.
type script struct {
	mu       sync.Mutex
	entries  []any
	requests [][]byte
	logMu    sync.Mutex // taken last, after any other lock
	log      []string
}

var errScriptExhausted = errors.New("script: an opening attempt was made beyond the scripted ones")

func newScript(entries ...any) *script { return &script{entries: entries} }

func (s *script) Open(ctx context.Context, req *responses.Request) (responses.Stream, error) {
	raw, err := json.Marshal(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		raw = []byte(fmt.Sprintf("%q", "the request does not marshal: "+err.Error()))
	}
	s.requests = append(s.requests, raw)
	attempt := len(s.requests)
	if attempt > len(s.entries) {
		return nil, errScriptExhausted
	}
	s.logMu.Lock()
	s.log = append(s.log, fmt.Sprintf("open %d", attempt))
	s.logMu.Unlock()
	switch entry := s.entries[attempt-1].(type) {
	case *replayStream:
		entry.mu.Lock()
		entry.ctx, entry.log, entry.logMu = ctx, &s.log, &s.logMu
		entry.mu.Unlock()
		return entry, nil
	case error:
		return nil, entry
	}
	panic("script: an entry is an error or a *replayStream")
}

func (s *script) requestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// request is the attempt's request as JSON values (attempts count from 1).
func (s *script) request(attempt int) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out map[string]any
	if attempt <= len(s.requests) {
		_ = json.Unmarshal(s.requests[attempt-1], &out)
	}
	return out
}

func (s *script) logged() []string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return append([]string(nil), s.log...)
}

// fixedRandom always draws the same point of [0, 1), and counts its draws.
type fixedRandom struct {
	at    float64
	draws int
}

func (f *fixedRandom) Float64() float64 {
	f.draws++
	return f.at
}

var history = []responses.Message{{Role: responses.RoleUser, Content: "The test for add() fails. Find the bug and fix it."}}

func newProvider(opener responses.Opener, rec *recorder, random interface{ Float64() float64 }) *responses.Provider {
	if random == nil {
		random = &fixedRandom{at: 0.5}
	}
	return &responses.Provider{Opener: opener, Model: model, Report: rec.report, Sleep: rec.sleep, Random: random}
}

func complete(t testing.TB, p *responses.Provider) (responses.Message, error) {
	t.Helper()
	return p.Complete(context.Background(), append([]responses.Message(nil), history...), toolSpecs(t))
}

// ---- the agent loop, reduced to its contract -------------------------------------------------------------

// workspace is in-memory project files behind the read and edit tools; it counts every execution.
type workspace struct {
	files    map[string]string
	executed []responses.ToolCall
}

func newWorkspace(files map[string]string) *workspace {
	copied := map[string]string{}
	for k, v := range files {
		copied[k] = v
	}
	return &workspace{files: copied}
}

func (w *workspace) execute(call responses.ToolCall) string {
	w.executed = append(w.executed, call)
	path := call.Arguments["path"]
	text, ok := w.files[path]
	if call.Name == "read" {
		if !ok {
			return "error: no file " + path
		}
		return text
	}
	old := call.Arguments["old"]
	if !ok || strings.Count(text, old) != 1 {
		return fmt.Sprintf("error: %q does not occur exactly once in %s", old, path)
	}
	w.files[path] = strings.Replace(text, old, call.Arguments["new"], 1)
	return "edited " + path
}

// runLoop is the agent loop of the earlier chapters: a decision is executed whole, or not at all.
func runLoop(ctx context.Context, p *responses.Provider, history []responses.Message, tools []responses.ToolSpec,
	execute func(responses.ToolCall) string) (responses.Message, error) {
	for turn := 0; turn < 10; turn++ {
		decision, err := p.Complete(ctx, history, tools)
		if err != nil {
			return responses.Message{}, err
		}
		history = append(history, decision)
		if len(decision.ToolCalls) == 0 {
			return decision, nil
		}
		for _, call := range decision.ToolCalls {
			history = append(history, responses.Message{Role: responses.RoleTool, Content: execute(call), ToolCallID: call.ID})
		}
	}
	return responses.Message{}, errors.New("no final answer after 10 turns")
}

// noGoroutineLeft fails the test when a goroutine running code of package responses (not of its
// tests) is still there, a moment after Complete returned: nothing of the adapter may outlive it.
func noGoroutineLeft(t *testing.T, what string) {
	t.Helper()
	for end := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var left []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "\ntinyllm/agent/responses.") {
				left = append(left, g)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Errorf("%s: %d goroutine(s) of the adapter still running after Complete returned, the first:\n%s", what, len(left), left[0])
			return
		}
	}
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
