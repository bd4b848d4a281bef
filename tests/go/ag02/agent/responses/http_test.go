package responses_test

// Over HTTP: the adapter behind its HTTPTransport, against a loopback server that sends exact bytes
// and against the course fake model (sections 2.5 and 4).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"tinyllm/agent/responses"
)

// overHTTP runs Complete through an HTTPTransport at url with a counting client.
func overHTTP(t *testing.T, url string, client *http.Client, rec *recorder) (responses.Message, error) {
	t.Helper()
	transport := &responses.HTTPTransport{BaseURL: url, APIKey: "sk-test", Client: client}
	p := &responses.Provider{Opener: transport, Model: model, Report: rec.report, Sleep: rec.sleep, Random: &fixedRandom{at: 0.5}}
	return p.Complete(context.Background(), append([]responses.Message(nil), history...), toolSpecs(t))
}

// checkRequests checks what went on the wire: POST {base}/responses, our headers once each, and
// BuildRequest's body, the same on every attempt.
func checkRequests(t *testing.T, what string, got []recordedRequest, key string) {
	t.Helper()
	want, err := responses.BuildRequest(history, toolSpecs(t), model, responses.MaxOutputTokens)
	if err != nil {
		t.Fatalf("BuildRequest: %v", err)
	}
	wantBody := asJSON(t, want)
	for n, r := range got {
		if r.Method != http.MethodPost || r.Path != "/v1/responses" {
			t.Errorf("%s, request %d: %s %s, want POST /v1/responses", what, n+1, r.Method, r.Path)
		}
		headers := map[string]string{"Content-Type": "application/json", "Accept": "text/event-stream", "Authorization": "Bearer " + key}
		if key == "" {
			headers["Authorization"] = ""
		}
		for name, value := range headers {
			if values := r.Header.Values(name); (value == "" && len(values) != 0) || (value != "" && !reflect.DeepEqual(values, []string{value})) {
				t.Errorf("%s, request %d: the header %s is %q, want %q once", what, n+1, name, values, value)
			}
		}
		var body any
		if err := json.Unmarshal(r.Body, &body); err != nil || !sameJSON(body, wantBody) {
			t.Errorf("%s, request %d: the body is BuildRequest's request as JSON:\n got  %.300s\n want %.300s", what, n+1, r.Body, show(wantBody))
		}
	}
}

func TestHTTPStreams(t *testing.T) {
	for _, c := range []struct {
		what, name string
		reply      func() rawReply
		wrap       func(io.Reader) io.Reader
	}{
		{"chunked, LF, 7-byte chunks", "single_call", func() rawReply { return streamReply(sse(events(t, "single_call"), "\n", false, false), "chunked", 7) }, nil},
		{"CRLF, comments, two-line data, 5-byte chunks", "interleaved_calls",
			func() rawReply {
				return streamReply(sse(events(t, "interleaved_calls"), "\r\n", true, true), "chunked", 5)
			}, nil},
		{"lone CR, 3-byte chunks", "text_only", func() rawReply { return streamReply(sse(events(t, "text_only"), "\r", false, false), "chunked", 3) }, nil},
		{"Content-Length", "refusal", func() rawReply { return streamReply(sse(events(t, "refusal"), "\n", false, false), "length", 4096) }, nil},
		{"a body that ends at the close", "valid_then_valid", func() rawReply {
			return streamReply(sse(events(t, "valid_then_valid"), "\n", false, false), "none", 100)
		}, nil},
		{"16,000-character arguments", "arguments_at_limit", func() rawReply {
			return streamReply(sse(events(t, "arguments_at_limit"), "\n", false, false), "chunked", 65536)
		}, nil},
		{"a leading BOM", "single_call", func() rawReply {
			return streamReply("\ufeff"+sse(events(t, "single_call"), "\n", false, false), "chunked", 2)
		}, nil},
		{"a body read one byte at a time, (0, nil) reads between, the last byte with io.EOF", "interleaved_calls",
			func() rawReply {
				return streamReply(sse(events(t, "interleaved_calls"), "\r\n", true, true), "length", 1<<20)
			},
			func(r io.Reader) io.Reader { return &oddReader{r: r} }},
	} {
		lb := newLoopback(t, c.reply())
		client, counter := newClient(lb)
		counter.wrap = c.wrap
		got, err := overHTTP(t, lb.url(), client, &recorder{})
		if want := load(t, c.name).Expect.Message; err != nil || !sameJSON(messageForm(got), want) {
			t.Errorf("%s: got (%s, %v), want the decision of %s", c.what, show(messageForm(got)), err, c.name)
		}
		if requests := lb.recorded(); len(requests) != 1 {
			t.Errorf("%s: one request, got %d", c.what, len(requests))
		} else {
			checkRequests(t, c.what, requests, "sk-test")
		}
		if counter.open() != 0 {
			t.Errorf("%s: %d response bodies left open; the stream closes its body", c.what, counter.open())
		}
	}

	// No key, no Authorization header.
	lb := newLoopback(t, streamReply(sse(events(t, "text_only"), "\n", false, false), "chunked", 64))
	transport := &responses.HTTPTransport{BaseURL: lb.url() + "/"}
	if _, err := (&responses.Provider{Opener: transport, Model: model}).Complete(context.Background(), history, toolSpecs(t)); err != nil {
		t.Errorf("without a key (BaseURL ending in /): %v", err)
	}
	checkRequests(t, "without a key, BaseURL ending in /", lb.recorded(), "")

	// The course fake model: its own stream of a turn, and a second turn carrying the call's result,
	// both requests checked against the real API's rules.
	fake := newFakeModel(t)
	fake.script(
		map[string]any{"kind": "turn", "text": []string{"Let me ", "read it."},
			"calls": []any{map[string]any{"id": "call_fake_r", "name": "read", "arguments": []string{`{"pa`, `th": "calcu`, `lator.py"}`}}}},
		map[string]any{"kind": "turn", "text": []string{"add() ", "subtracts."}},
	)
	transport = &responses.HTTPTransport{BaseURL: fake.base, APIKey: "sk-test", Client: &http.Client{Timeout: 20 * time.Second}}
	p := &responses.Provider{Opener: transport, Model: model}
	turn := append([]responses.Message(nil), history...)
	first, err := p.Complete(context.Background(), turn, toolSpecs(t))
	wantCall := []responses.ToolCall{{ID: "call_fake_r", Name: "read", Arguments: map[string]string{"path": "calculator.py"}}}
	if err != nil || first.Content != "Let me read it." || !reflect.DeepEqual(first.ToolCalls, wantCall) {
		t.Fatalf("the fake model's stream of a text and a call in three pieces: got (%+v, %v)", first, err)
	}
	turn = append(turn, first, responses.Message{Role: responses.RoleTool, Content: "def add(a, b):\n    return a - b\n", ToolCallID: "call_fake_r"})
	second, err := p.Complete(context.Background(), turn, toolSpecs(t))
	if err != nil || second.Content != "add() subtracts." {
		t.Errorf("the second turn, with the call and its result: got (%+v, %v)", second, err)
	}
	requests := fake.requests()
	if len(requests) != 2 {
		t.Fatalf("the fake model received %d requests, want 2", len(requests))
	}
	for n, r := range requests {
		if r.Path != "/v1/responses" || !reflect.DeepEqual(r.HeaderValues["authorization"], []string{"Bearer sk-test"}) {
			t.Errorf("request %d: %s with Authorization %q; want /v1/responses and the bearer key once", n+1, r.Path, r.HeaderValues["authorization"])
		}
	}
	var kinds []any
	for _, item := range requests[1].Body["input"].([]any) {
		m := item.(map[string]any)
		kinds = append(kinds, m["type"])
		if m["type"] == "function_call" && (m["call_id"] != "call_fake_r" || m["id"] != nil) {
			t.Errorf("the replayed call keeps its call_id and has no item id: %s", show(m))
		}
	}
	if !sameJSON(kinds, []any{nil, nil, "function_call", "function_call_output"}) {
		t.Errorf("the second request's input: the question, the assistant's text, its call, the result; got the types %v", kinds)
	}
	// and an authored sequence, played by the fake model as it is
	fake.script(fakeEvents(events(t, "interleaved_calls"), "eof"))
	if got, err := p.Complete(context.Background(), history, toolSpecs(t)); err != nil || !sameJSON(messageForm(got), load(t, "interleaved_calls").Expect.Message) {
		t.Errorf("interleaved_calls played by the fake model: got (%s, %v)", show(messageForm(got)), err)
	}
}

func TestHTTPRefusalsNotRetried(t *testing.T) {
	long := "<html><body>" + strings.Repeat("Passerelle défaillante. ", 100) + "</body></html>"
	for _, c := range []struct {
		what   string
		reply  rawReply
		status int
		said   string
		wrap   func(io.Reader) io.Reader
	}{
		{"429 with a JSON error", errorReply(429, `{"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}`), 429, "Rate limit reached", nil},
		{"401 with a plain body", errorReply(401, "Unauthorized\n"), 401, "Unauthorized", nil},
		{"400 with other JSON", errorReply(400, `{"detail": "bad input"}`), 400, "bad input", nil},
		{"403 with its JSON error read one byte at a time", errorReply(403, `{"error": {"message": "You are not allowed to sample from this model", "type": "invalid_request_error"}}`),
			403, "You are not allowed to sample from this model", func(r io.Reader) io.Reader { return &oddReader{r: r} }},
		{"404 with a long page, not all ASCII", errorReply(404, long), 404, string([]rune(long)[:200]), nil},
		{"302 without a Location", errorReply(302, `{"error": {"message": "moved"}}`), 302, "moved", nil},
		{"204 No Content", rawReply{head: "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n", end: "close"}, 204, "", nil},
	} {
		lb := newLoopback(t, c.reply, streamReply(sse(events(t, "text_only"), "\n", false, false), "chunked", 64))
		client, counter := newClient(lb)
		counter.wrap = c.wrap
		rec := &recorder{}
		_, err := overHTTP(t, lb.url(), client, rec)
		var failure *responses.OpenError
		// a plain body is kept trimmed: exactly its words, no line end (the JSON error's message, exactly)
		exact := c.status == 401 || c.status == 429
		if !errors.As(err, &failure) || failure.Status != c.status || !strings.Contains(failure.Message, c.said) || len([]rune(failure.Message)) > 200 ||
			exact && failure.Message != c.said {
			t.Errorf("%s: got %v; want an *OpenError of status %d whose Message (at most 200 characters) holds %.60q", c.what, err, c.status, c.said)
		}
		if n := len(lb.recorded()); n != 1 || len(rec.sleeps) != 0 {
			t.Errorf("%s: not retried: %d requests, waits %v", c.what, n, rec.sleeps)
		}
		if counter.open() != 0 {
			t.Errorf("%s: the error answer's body was left open", c.what)
		}
	}
	// the course fake model's own 429
	fake := newFakeModel(t)
	fake.script(map[string]any{"kind": "http_error", "status": 429, "type": "rate_limit_exceeded", "message": "Rate limit reached for requests."})
	rec := &recorder{}
	_, err := (&responses.Provider{Opener: &responses.HTTPTransport{BaseURL: fake.base}, Model: model, Sleep: rec.sleep}).Complete(context.Background(), history, toolSpecs(t))
	var failure *responses.OpenError
	if !errors.As(err, &failure) || failure.Status != 429 || failure.Message != "Rate limit reached for requests." || len(fake.requests()) != 1 {
		t.Errorf("the fake model's 429: got %v after %d requests; want the *OpenError 429 with its message, once", err, len(fake.requests()))
	}
}

func TestHTTPOpeningRetried(t *testing.T) {
	for what, first := range map[string]rawReply{
		"a 503":                          errorReply(503, `{"error": {"message": "overloaded", "type": "server_error"}}`),
		"a hang-up before any answer":    {end: "hang-up"},
		"a reset before any answer":      {end: "reset"},
		"a head that is not HTTP":        {head: "hello\r\n\r\n", end: "close"},
		"a 500 with a body cut short":    {head: "HTTP/1.1 500 Oops\r\nContent-Length: 50\r\n\r\n", pieces: []string{`{"error": `}, end: "close"},
		"a 502 whose body says nothing ": errorReply(502, ""),
	} {
		lb := newLoopback(t, first, streamReply(sse(events(t, "text_only"), "\n", false, false), "chunked", 64))
		client, counter := newClient(lb)
		rec := &recorder{}
		got, err := overHTTP(t, lb.url(), client, rec)
		if err != nil || !strings.HasPrefix(got.Content, "The bug") {
			t.Errorf("%s, then a stream: got (%+v, %v), want the text_only decision", what, got, err)
		}
		requests := lb.recorded()
		if len(requests) != 2 || len(rec.sleeps) != 1 {
			t.Errorf("%s: a failed opening is retried once: %d requests, waits %v", what, len(requests), rec.sleeps)
		}
		checkRequests(t, what, requests, "sk-test")
		if counter.open() != 0 {
			t.Errorf("%s: %d response bodies left open", what, counter.open())
		}
	}
}

func TestHTTPConnectionRefused(t *testing.T) {
	refused := refusedURL(t)
	rec := &recorder{}
	_, err := overHTTP(t, refused, nil, rec)
	var failure *responses.OpenError
	if !errors.As(err, &failure) || failure.Status != 0 || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("nothing listening: got %v; want an *OpenError of Status 0 that wraps the refusal (errors.Is ECONNREFUSED)", err)
	}
	if len(rec.sleeps) != 2 {
		t.Errorf("three attempts, two waits: %v", rec.sleeps)
	}
	// A context already done: the caller gave up, which no retry can change.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec = &recorder{}
	p := &responses.Provider{Opener: &responses.HTTPTransport{BaseURL: refused}, Model: model, Sleep: rec.sleep}
	if _, err := p.Complete(ctx, history, toolSpecs(t)); !errors.Is(err, context.Canceled) || errors.As(err, &failure) || len(rec.sleeps) != 0 {
		t.Errorf("a cancelled context: got %v and waits %v; want its error (no *OpenError), not retried", err, rec.sleeps)
	}
	// A base URL that is no URL: nothing is sent, nothing retried.
	rec = &recorder{}
	p = &responses.Provider{Opener: &responses.HTTPTransport{BaseURL: "http://[::1"}, Model: model, Sleep: rec.sleep}
	if _, err := p.Complete(context.Background(), history, toolSpecs(t)); err == nil || errors.As(err, &failure) || len(rec.sleeps) != 0 {
		t.Errorf("an unparsable base URL: got %v and waits %v; want an error that is no *OpenError, not retried", err, rec.sleeps)
	}
}

func TestHTTPStreamFailuresNotRetried(t *testing.T) {
	body := sse(events(t, "single_call"), "\n", false, false)
	cut := strings.LastIndex(body, "event: response.completed")
	for _, c := range []struct {
		what  string
		reply rawReply
		want  string
		cause error
	}{
		{"a reset mid-arguments", func() rawReply {
			r := streamReply(sse(events(t, "reset_mid_arguments"), "\n", false, false), "chunked", 64)
			r.pieces, r.end = r.pieces[:len(r.pieces)-1], "reset"
			return r
		}(), "transport", syscall.ECONNRESET},
		{"a cut in the middle of a chunk", rawReply{head: streamReply("", "chunked", 1).head, pieces: []string{fmt.Sprintf("%x\r\n", len(body)) + body[:cut+30]}, end: "close"}, "transport", io.ErrUnexpectedEOF},
		{"a Content-Length body cut short", rawReply{head: "HTTP/1.1 200 OK\r\nContent-Length: 99999\r\nConnection: close\r\n\r\n", pieces: []string{body[:cut]}, end: "close"}, "transport", io.ErrUnexpectedEOF},
		{"data that is not JSON", streamReply(body[:cut]+"data: {not json\n\n", "chunked", 64), "malformed_event", nil},
		{"a last event without its blank line", streamReply(body[:len(body)-1], "chunked", 64), "stream_ended", nil},
		{"a bad chunk size", rawReply{head: streamReply("", "chunked", 1).head, pieces: []string{"zz\r\n" + body}, end: "close"}, "transport", nil},
	} {
		lb := newLoopback(t, c.reply, streamReply(sse(events(t, "text_only"), "\n", false, false), "chunked", 64))
		client, counter := newClient(lb)
		rec := &recorder{}
		_, err := overHTTP(t, lb.url(), client, rec)
		if code(err) != c.want || (c.cause != nil && !errors.Is(err, c.cause)) {
			t.Errorf("%s: got %v, want a *ResponseError %s%s", c.what, err, c.want, map[bool]string{true: " that wraps its cause", false: ""}[c.cause != nil])
		}
		if n := len(lb.recorded()); n != 1 || len(rec.sleeps) != 0 {
			t.Errorf("%s: the stream was acquired, so nothing is retried: %d requests, waits %v", c.what, n, rec.sleeps)
		}
		if counter.open() != 0 {
			t.Errorf("%s: the broken stream's body was left open", c.what)
		}
	}

	// The model goes silent mid-stream and the caller gives up: the cancel reaches the connection.
	stalled := streamReply(sse(events(t, "single_call")[:4], "\n", false, false), "chunked", 64)
	stalled.pieces, stalled.end = stalled.pieces[:len(stalled.pieces)-1], "stall"
	lb := newLoopback(t, stalled)
	client, counter := newClient(lb)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{}
	p := &responses.Provider{Opener: &responses.HTTPTransport{BaseURL: lb.url(), Client: client}, Model: model,
		Report: func(kind, detail string) {
			rec.report(kind, detail)
			if kind == "arguments" {
				cancel() // the caller gives up after the first fragment
			}
		}}
	returned := make(chan error, 1)
	go func() {
		_, err := p.Complete(ctx, history, toolSpecs(t))
		returned <- err
	}()
	select {
	case err := <-returned:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a stalled stream, cancelled: got %v, want an error that holds context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("a stalled stream, cancelled: Complete has not returned after 10 s; the request must carry the caller's context")
	}
	select {
	case <-lb.gone:
	case <-time.After(10 * time.Second):
		t.Errorf("a stalled stream, cancelled: the server never saw its connection closed")
	}
	if counter.open() != 0 || len(lb.recorded()) != 1 {
		t.Errorf("a stalled stream, cancelled: %d bodies open, %d requests", counter.open(), len(lb.recorded()))
	}
}
