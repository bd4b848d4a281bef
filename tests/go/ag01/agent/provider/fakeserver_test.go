package provider_test

// A scripted chat-completions server on 127.0.0.1 for the faults a test must control to the byte:
// each request takes the next scripted reply and is recorded. Conversations that need no
// scripting go to the course fake model (COURSE_FAKE_MODEL_URL) instead.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"tinyllm/agent/provider"
)

const chatPath = "/v1/chat/completions"

type recordedRequest struct {
	Method, Path string
	Header       http.Header
	Body         map[string]any // nil when the body is not a JSON object
}

// reply answers one request; body is the request's JSON.
type reply func(w http.ResponseWriter, r *http.Request, body map[string]any, s *scriptedServer)

type scriptedServer struct {
	srv        *httptest.Server
	mu         sync.Mutex
	replies    []reply
	requests   []recordedRequest
	clientGone chan struct{}
	goneOnce   sync.Once
}

// newScripted starts a server that is closed when the test ends.
func newScripted(t *testing.T, replies ...reply) *scriptedServer {
	s := &scriptedServer{replies: replies, clientGone: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

func (s *scriptedServer) baseURL() string { return s.srv.URL + "/v1" }

func (s *scriptedServer) script(replies ...reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// requestCount is how many chat-completions requests arrived.
func (s *scriptedServer) requestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func (s *scriptedServer) lastRequest() recordedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return recordedRequest{}
	}
	return s.requests[len(s.requests)-1]
}

func (s *scriptedServer) allRequests() []recordedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recordedRequest(nil), s.requests...)
}

func (s *scriptedServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	if r.URL.Path != chatPath {
		http.Error(w, `{"error":{"message":"unknown path `+r.URL.Path+`","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	s.mu.Lock()
	s.requests = append(s.requests, recordedRequest{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	var next reply
	if len(s.replies) > 0 {
		next, s.replies = s.replies[0], s.replies[1:]
	}
	s.mu.Unlock()
	if next == nil {
		next = textReply("no reply was scripted for this request")
	}
	next(w, r, body, s)
}

// ---- the stream's events ------------------------------------------------------------------------

func chunkEvent(body map[string]any, delta map[string]any, finish any) string {
	model, _ := body["model"].(string)
	raw, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 1700000000, "model": model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
	})
	return string(raw)
}

func usageEvent(body map[string]any, in, out int) string {
	model, _ := body["model"].(string)
	raw, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 1700000000, "model": model,
		"choices": []any{}, "usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
	return string(raw)
}

func wantsUsage(body map[string]any) bool {
	opts, _ := body["stream_options"].(map[string]any)
	include, _ := opts["include_usage"].(bool)
	return include
}

// textEvents is a text answer's events: role chunk, one chunk per piece, finish, usage if asked.
func textEvents(body map[string]any, pieces []string) []string {
	events := []string{chunkEvent(body, map[string]any{"role": "assistant", "content": ""}, nil)}
	for _, p := range pieces {
		events = append(events, chunkEvent(body, map[string]any{"content": p}, nil))
	}
	events = append(events, chunkEvent(body, map[string]any{}, "stop"))
	if wantsUsage(body) {
		events = append(events, usageEvent(body, 5, len(pieces)))
	}
	return events
}

func startStream(w http.ResponseWriter) http.Flusher {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	f.Flush()
	return f
}

func writeEvent(w http.ResponseWriter, f http.Flusher, data string) {
	fmt.Fprintf(w, "data: %s\n\n", data)
	f.Flush()
}

// ---- replies ------------------------------------------------------------------------------------

// textReply streams pieces as text, then [DONE].
func textReply(pieces ...string) reply {
	return func(w http.ResponseWriter, r *http.Request, body map[string]any, s *scriptedServer) {
		f := startStream(w)
		for _, e := range textEvents(body, pieces) {
			writeEvent(w, f, e)
		}
		writeEvent(w, f, "[DONE]")
	}
}

// httpError answers status with an OpenAI-style error body and, when retryAfter is not "", a
// Retry-After header with exactly that text.
func httpError(status int, typ, message, retryAfter string) reply {
	return func(w http.ResponseWriter, r *http.Request, body map[string]any, s *scriptedServer) {
		if typ == "" {
			typ = "server_error"
			if status < 500 {
				typ = "invalid_request_error"
			}
		}
		if message == "" {
			message = http.StatusText(status)
		}
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		raw, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": "code_" + strconv.Itoa(status)}})
		w.Write(raw)
	}
}

// rawReply sends body as it is, in writes of piece bytes (all at once when piece is 0).
func rawReply(status int, contentType, body string, piece int) reply {
	return func(w http.ResponseWriter, r *http.Request, _ map[string]any, s *scriptedServer) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		f := w.(http.Flusher)
		if piece <= 0 {
			piece = max(1, len(body))
		}
		for start := 0; start < len(body); start += piece {
			io.WriteString(w, body[start:min(start+piece, len(body))])
			f.Flush()
		}
	}
}

// errorEvent streams the role chunk and the pieces of text, then data: {"error": {type ...}}.
func errorEvent(typ string, pieces ...string) reply {
	return func(w http.ResponseWriter, r *http.Request, body map[string]any, s *scriptedServer) {
		f := startStream(w)
		events := textEvents(body, pieces)
		for _, e := range events[:1+len(pieces)] {
			writeEvent(w, f, e)
		}
		raw, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "the server failed", "type": typ, "param": nil, "code": nil}})
		writeEvent(w, f, string(raw))
	}
}

// roleThen streams the role chunk, then the given events.
func roleThen(w http.ResponseWriter, body map[string]any, events func(body map[string]any) []string) {
	f := startStream(w)
	writeEvent(w, f, chunkEvent(body, map[string]any{"role": "assistant", "content": ""}, nil))
	for _, e := range events(body) {
		writeEvent(w, f, e)
	}
}

// cutAfter streams the role chunk and the given events, then closes the connection in the middle
// of the chunked body: every byte sent arrives, and then the body ends without its end.
func cutAfter(events func(body map[string]any) []string) reply { return hijacked(events, closeConn) }

// cutAfterText streams the role chunk and the pieces, then cuts the connection.
func cutAfterText(pieces ...string) reply { return cutAfter(textChunks(pieces...)) }

// endAfter streams the role chunk and the given events, then ends the body cleanly, without [DONE]:
// to HTTP a finished answer, to the contract a cut one.
func endAfter(events func(body map[string]any) []string) reply {
	return func(w http.ResponseWriter, r *http.Request, body map[string]any, s *scriptedServer) {
		roleThen(w, body, events)
	}
}

// endAfterRaw streams the role chunk, then raw as it is (an event cut short, say), then ends the
// body cleanly.
func endAfterRaw(raw string) reply {
	return func(w http.ResponseWriter, r *http.Request, body map[string]any, s *scriptedServer) {
		roleThen(w, body, func(map[string]any) []string { return nil })
		io.WriteString(w, raw)
	}
}

// resetAfterRole sends the head and the role chunk, then aborts the connection with a TCP RST.
func resetAfterRole() reply { return hijacked(func(map[string]any) []string { return nil }, reset) }

// slowStream sends the role chunk and one text chunk, then nothing more until the client goes
// (noted in clientGone) or duration has passed: a model thinking. A client that only stops reading,
// without closing its connection, is never noticed.
func slowStream(duration time.Duration) reply {
	return func(w http.ResponseWriter, r *http.Request, body map[string]any, s *scriptedServer) {
		f := startStream(w)
		writeEvent(w, f, chunkEvent(body, map[string]any{"role": "assistant", "content": ""}, nil))
		writeEvent(w, f, chunkEvent(body, map[string]any{"content": "thinking"}, nil))
		select {
		case <-r.Context().Done():
			s.goneOnce.Do(func() { close(s.clientGone) })
		case <-time.After(duration):
			writeEvent(w, f, chunkEvent(body, map[string]any{}, "length"))
			writeEvent(w, f, "[DONE]")
		}
	}
}

func openAI(baseURL string, mutate ...func(*provider.Config)) *provider.OpenAI {
	cfg := provider.Config{BaseURL: baseURL, APIKey: "sk-test", Model: "test-model", Client: &http.Client{Timeout: 20 * time.Second}}
	for _, m := range mutate {
		m(&cfg)
	}
	return provider.NewOpenAI(cfg)
}
