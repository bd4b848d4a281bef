// Package provider streams chat completions from any server that speaks the OpenAI API, and
// retries them while retrying cannot duplicate what the caller already has.
package provider

// course: begin imports
import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"tinyllm/agent/types"
)

// course: end imports

// Config says where and how to reach the server.
type Config struct {
	BaseURL string // ends before /chat/completions, e.g. http://127.0.0.1:8080/v1
	APIKey  string // sent as "Authorization: Bearer ..."; none when empty
	Model   string
	Client  *http.Client      // http.DefaultClient when nil
	Headers map[string]string // sent with every request; one of these replaces ours of the same name, in any case
}

// OpenAI is a types.Provider for the OpenAI chat-completions API with streaming.
type OpenAI struct{ cfg Config }

// NewOpenAI returns a provider for cfg.
func NewOpenAI(cfg Config) *OpenAI { return &OpenAI{cfg: cfg} }

var _ types.Provider = (*OpenAI)(nil)

// ErrNoDone is the error of a stream whose body ended before data: [DONE]: a reset, a crashed
// server or a proxy timeout cut it short, however cleanly the connection closed.
var ErrNoDone = errors.New("provider: the stream ended before data: [DONE]")

// APIError is a non-2xx answer. Type, Code and Message come from the body's {"error": {...}}
// when it has one (else Message is the body's text); RetryAfter is the Retry-After header, zero
// when it is absent or not a number of seconds.
type APIError struct {
	Status              int
	Type, Code, Message string
	RetryAfter          time.Duration
}

func (e *APIError) Error() string {
	text := "HTTP " + strconv.Itoa(e.Status)
	if e.Type != "" {
		text += " " + e.Type
	}
	if e.Message != "" {
		text += ": " + e.Message
	}
	return text
}

// StreamError is a failure the server reported inside the stream, as data: {"error": {...}}.
type StreamError struct{ Type, Code, Message string }

func (e *StreamError) Error() string {
	typ := e.Type
	if typ == "" {
		typ = "unknown"
	}
	return "stream error " + typ + ": " + e.Message
}

// ChatStream sends the conversation and streams the answer: POST {BaseURL}/chat/completions with
// the body RequestBody builds, Content-Type application/json, Accept text/event-stream, the key as
// "Authorization: Bearer ..." (none when APIKey is empty) and cfg.Headers, each set, never added: a
// header of the caller's replaces ours of the same name, however it is spelt, and every header goes
// out once. A non-2xx answer is an *APIError (the body's error type, code and message, or its text;
// Retry-After in seconds); a request that got no answer returns the client's error. After that
// every failure is an ErrorDelta: a body that ends before data: [DONE] is ErrNoDone. Build the
// request with ctx, so that cancelling it closes the connection and the server stops generating.
func (o *OpenAI) ChatStream(ctx context.Context, msgs []types.Message, tools []types.ToolDef, opts ...types.CallOption) (<-chan types.Delta, error) {
	// course: begin OpenAI_ChatStream
	body, err := RequestBody(o.cfg.Model, msgs, tools, types.NewCallOptions(opts...))
	if err != nil {
		return nil, err
	}
	url := strings.TrimRight(o.cfg.BaseURL, "/") + "/chat/completions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if o.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.cfg.APIKey)
	}
	for name, value := range o.cfg.Headers {
		req.Header.Set(name, value) // Set canonicalizes the name: "authorization" replaces our Authorization
	}
	client := o.cfg.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, apiError(resp)
	}
	ch := make(chan types.Delta)
	go stream(ctx, resp.Body, ch)
	return ch, nil
	// course: end OpenAI_ChatStream
}

// RequestBody is the JSON body of a streamed chat-completions request: model, messages, stream true,
// stream_options.include_usage true, tools (when any: type "function" with name, description and
// parameters), temperature and max_tokens when set. An assistant message with tool calls and no
// text has content null; each call is sent as {id, type: "function", function: {name, arguments}},
// its arguments as the text of a JSON object ("{}" when empty); a tool message carries its
// tool_call_id; a message's name is sent when set.
func RequestBody(model string, msgs []types.Message, tools []types.ToolDef, o types.CallOptions) ([]byte, error) {
	// course: begin RequestBody
	type function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type toolCall struct {
		ID       string   `json:"id"`
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	type message struct {
		Role       types.Role `json:"role"`
		Content    *string    `json:"content"` // null beside tool calls when there is no text
		ToolCalls  []toolCall `json:"tool_calls,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"` // how the model matches a result to its call
		Name       string     `json:"name,omitempty"`
	}
	type toolDef struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters,omitempty"`
		} `json:"function"`
	}
	type streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	body := struct {
		Model         string        `json:"model"`
		Messages      []message     `json:"messages"`
		Stream        bool          `json:"stream"`
		StreamOptions streamOptions `json:"stream_options"` // without it no usage chunk comes
		Tools         []toolDef     `json:"tools,omitempty"`
		Temperature   *float64      `json:"temperature,omitempty"`
		MaxTokens     *int          `json:"max_tokens,omitempty"`
	}{
		Model:         model,
		Messages:      make([]message, 0, len(msgs)),
		Stream:        true,
		StreamOptions: streamOptions{IncludeUsage: true},
		Temperature:   o.Temperature,
		MaxTokens:     o.MaxTokens,
	}
	for _, m := range msgs {
		content := m.Content
		out := message{Role: m.Role, Content: &content, ToolCallID: m.ToolCallID, Name: m.Name}
		if len(m.ToolCalls) > 0 && content == "" {
			out.Content = nil // strict servers reject "" beside tool calls
		}
		for _, c := range m.ToolCalls {
			args := string(c.Args)
			if args == "" {
				args = "{}" // the arguments are always a JSON object, sent as its text
			}
			out.ToolCalls = append(out.ToolCalls, toolCall{ID: c.ID, Type: "function", Function: function{c.Name, args}})
		}
		body.Messages = append(body.Messages, out)
	}
	for _, t := range tools {
		var def toolDef
		def.Type = "function"
		def.Function.Name, def.Function.Description, def.Function.Parameters = t.Name, t.Description, t.Parameters
		body.Tools = append(body.Tools, def)
	}
	return json.Marshal(body)
	// course: end RequestBody
}

// course: begin helpers
// stream sends the deltas of body on ch and closes both: after the last delta, at the first
// failure, or as soon as ctx is cancelled.
func stream(ctx context.Context, body io.ReadCloser, ch chan<- types.Delta) {
	defer close(ch)
	defer body.Close()
	send := func(d types.Delta) bool {
		select {
		case ch <- d:
			return true
		case <-ctx.Done():
			return false
		}
	}
	events, decoder := NewEventReader(body), NewDecoder()
	for {
		data, err := events.Next()
		if err != nil {
			if ctx.Err() != nil {
				return // the caller cancelled: nobody is waiting for an error
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				err = ErrNoDone // only [DONE] proves the server meant to stop
			}
			send(types.ErrorDelta{Err: err})
			return
		}
		deltas, finished := decoder.Event(data)
		for _, d := range deltas {
			if !send(d) {
				return
			}
		}
		if finished {
			return
		}
	}
}

// apiError reads a non-2xx answer into an *APIError.
func apiError(resp *http.Response) *APIError {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &APIError{Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	var payload struct {
		Error *struct {
			Type    string `json:"type"`
			Code    any    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &payload) == nil && payload.Error != nil {
		e.Type, e.Code, e.Message = payload.Error.Type, codeText(payload.Error.Code), payload.Error.Message
	} else {
		e.Message = strings.TrimSpace(string(raw)) // a proxy's HTML page, say: its text is all there is
		if len(e.Message) > 500 {
			e.Message = e.Message[:500]
		}
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}

// retryAfter reads Retry-After as delta-seconds; anything else (the HTTP-date form, a negative or
// infinite number) is 0. A wait longer than a Duration holds is the longest Duration: far too long.
func retryAfter(header string) time.Duration {
	seconds, err := strconv.ParseFloat(strings.TrimSpace(header), 64)
	if err != nil || math.IsNaN(seconds) || math.IsInf(seconds, 0) || seconds < 0 {
		return 0
	}
	if seconds >= math.MaxInt64/float64(time.Second) {
		return math.MaxInt64
	}
	return time.Duration(seconds * float64(time.Second))
}

// course: end helpers
