// Package responses is a Responses API adapter that releases a decision only when the whole
// response has completed and validated.
//
// BuildRequest turns the portable history and tools into one request; an Assembly folds a
// response's stream events into one Message, released only at response.completed; a Provider opens
// the stream (retrying only the opening), feeds the assembly and closes the stream; HTTPTransport
// opens streams over HTTP. This file is given: the words the others speak.
package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Role says who speaks a Message.
type Role string

const (
	RoleDeveloper Role = "developer"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is a tool the model asked for: its call id, the tool's name and the argument object.
type ToolCall struct {
	ID        string
	Name      string
	Arguments map[string]string
}

// Message is one turn of the portable history. An assistant turn may carry ToolCalls (beside or
// instead of Content) and a Refusal; a tool turn answers the call named by ToolCallID.
type Message struct {
	Role       Role
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
	Refusal    string
}

// ToolSpec is a tool the model may call: every parameter is a named string, and every one is required.
type ToolSpec struct {
	Name        string
	Description string
	Parameters  []string
}

// ErrBadHistory is what BuildRequest's errors wrap: a history the API would refuse.
var ErrBadHistory = errors.New("responses: invalid history")

// ResponseError says why a response cannot become a decision. Code is stable (tests and logs match
// on it), Detail says what was seen, Err is the cause when there is one (a broken connection).
type ResponseError struct {
	Code   string
	Detail string
	Err    error
}

func (e *ResponseError) Error() string {
	if e.Detail == "" {
		return e.Code
	}
	return e.Code + ": " + e.Detail
}

func (e *ResponseError) Unwrap() error { return e.Err }

// OpenError says why no stream was acquired: the HTTP status and what the server said, or Status 0
// when no answer came at all (a refused, reset or timed-out connection, an answer that is not HTTP);
// Err is the cause then.
type OpenError struct {
	Status  int
	Message string
	Err     error
}

func (e *OpenError) Error() string {
	if e.Status == 0 {
		return "no answer: " + e.Message
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message)
}

func (e *OpenError) Unwrap() error { return e.Err }

// Stream is an acquired stream of events. Next returns the JSON data of the next event, valid until
// the next call; io.EOF once the stream has ended without a fault (the last event complete or not);
// any other error when it broke. Next returns promptly once the context the stream was opened
// with is done. Whoever acquires a Stream closes it, once, whatever happened.
type Stream interface {
	Next() ([]byte, error)
	Close() error
}

// Opener sends a request and acquires its stream, or says why not: an *OpenError, or the context's
// error when it is done.
type Opener interface {
	Open(ctx context.Context, req *Request) (Stream, error)
}

// OpenerFunc lets an ordinary function be an Opener.
type OpenerFunc func(ctx context.Context, req *Request) (Stream, error)

// Open calls f(ctx, req).
func (f OpenerFunc) Open(ctx context.Context, req *Request) (Stream, error) { return f(ctx, req) }

// Report observes progress: Report(kind, detail) shows it, and never decides anything. The kinds
// are "text", "refusal" (a preview delta), "arguments" (a fragment buffered) and "retry".
type Report func(kind, detail string)

// Request is one Responses API request, as JSON.
type Request struct {
	Model           string      `json:"model"`
	Input           []InputItem `json:"input"`
	Tools           []Tool      `json:"tools"`
	Store           bool        `json:"store"`
	Stream          bool        `json:"stream"`
	MaxOutputTokens int         `json:"max_output_tokens"`
}

// InputItem is one item of a request's input: a MessageItem, a FunctionCallItem or a
// FunctionCallOutputItem.
type InputItem interface{ inputItem() }

// MessageItem is a turn of text: {"role": ..., "content": ...}.
type MessageItem struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
}

// FunctionCallItem replays a call the model made: {"type": "function_call", "call_id", "name",
// "arguments"}, the arguments being the JSON text of the argument object.
type FunctionCallItem struct {
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// FunctionCallOutputItem is a tool's result: {"type": "function_call_output", "call_id", "output"}.
type FunctionCallOutputItem struct {
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

func (MessageItem) inputItem()            {}
func (FunctionCallItem) inputItem()       {}
func (FunctionCallOutputItem) inputItem() {}

// MarshalJSON writes the item with its "type".
func (i FunctionCallItem) MarshalJSON() ([]byte, error) {
	type fields FunctionCallItem
	return json.Marshal(struct {
		Type string `json:"type"`
		fields
	}{"function_call", fields(i)})
}

// MarshalJSON writes the item with its "type".
func (i FunctionCallOutputItem) MarshalJSON() ([]byte, error) {
	type fields FunctionCallOutputItem
	return json.Marshal(struct {
		Type string `json:"type"`
		fields
	}{"function_call_output", fields(i)})
}

// Tool is a function the model may call, as the request declares it.
type Tool struct {
	Type        string     `json:"type"` // "function"
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Parameters  JSONSchema `json:"parameters"`
	Strict      bool       `json:"strict"`
}

// JSONSchema is the schema of a tool's argument object.
type JSONSchema struct {
	Type                 string              `json:"type"` // "object"
	Properties           map[string]Property `json:"properties"`
	Required             []string            `json:"required"`
	AdditionalProperties bool                `json:"additionalProperties"`
}

// Property is the schema of one parameter.
type Property struct {
	Type string `json:"type"` // "string"
}
