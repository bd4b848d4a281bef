// Package provider streams chat completions from any server that speaks the OpenAI API, and
// retries them while retrying cannot duplicate what the caller already has.
package provider

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"tinyllm/agent/types"
)

// Config says where and how to reach the server.
type Config struct {
	BaseURL string // ends before /chat/completions, e.g. http://127.0.0.1:8080/v1
	APIKey  string // sent as "Authorization: Bearer ..."; none when empty
	Model   string
	Client  *http.Client      // http.DefaultClient when nil
	Headers map[string]string // sent with every request
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
// "Authorization: Bearer ..." (none when APIKey is empty) and cfg.Headers. A non-2xx answer is an
// *APIError (the body's error type, code and message, or its text; Retry-After in seconds); a
// request that got no answer returns the client's error. After that every failure is an
// ErrorDelta: a body that ends before data: [DONE] is ErrNoDone. Build the request with ctx, so
// that cancelling it closes the connection and the server stops generating.
func (o *OpenAI) ChatStream(ctx context.Context, msgs []types.Message, tools []types.ToolDef, opts ...types.CallOption) (<-chan types.Delta, error) {
	panic(`TODO ag01 §2.2 and §4: send the request, stream its deltas on a channel you close`)
}

// RequestBody is the JSON body of a streamed chat-completions request: model, messages, stream true,
// stream_options.include_usage true, tools (when any: type "function" with name, description and
// parameters), temperature and max_tokens when set. An assistant message with tool calls and no
// text has content null; each call is sent as {id, type: "function", function: {name, arguments}},
// its arguments as the text of a JSON object ("{}" when empty); a tool message carries its
// tool_call_id; a message's name is sent when set.
func RequestBody(model string, msgs []types.Message, tools []types.ToolDef, o types.CallOptions) ([]byte, error) {
	panic(`TODO ag01 §4: the request body`)
}
