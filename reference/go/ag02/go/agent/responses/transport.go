package responses

// course: begin imports
import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"tinyllm/agent/sse"
)

// course: end imports

// HTTPTransport opens Responses API streams over HTTP: it is an Opener. It retries nothing itself:
// the Provider owns the retries, so the attempts it counts are the real ones.
type HTTPTransport struct {
	BaseURL string       // the API's root, ".../v1": requests go to BaseURL + "/responses"
	APIKey  string       // sent as a bearer token, when set
	Client  *http.Client // nil: http.DefaultClient
}

// Open POSTs req as JSON to {BaseURL}/responses, with Content-Type application/json, Accept
// text/event-stream and the key as a bearer token, and acquires the stream of a 200 answer, read
// with package sse. Any other status is an *OpenError with that status and what the server said:
// the body's error.message, else its text, trimmed, at most 200 characters; the body is closed
// first. No answer at all is an *OpenError of Status 0 wrapping the cause, unless ctx is done: then
// the error, which wraps ctx's, is returned as it came. The stream's Next returns io.EOF when the
// body ends (also inside an unfinished event, which is discarded) and a *ResponseError "transport"
// wrapping the cause when reading it fails; Close closes the body, and with it the connection.
func (t *HTTPTransport) Open(ctx context.Context, req *Request) (Stream, error) {
	// course: begin HTTPTransport_Open
	body, _ := json.Marshal(req) // every field of a Request marshals
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(t.BaseURL, "/")+"/responses", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	httpReq.Header.Set("Content-Type", "application/json")
	httpReq.Header.Set("Accept", "text/event-stream")
	if t.APIKey != "" {
		httpReq.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	client := t.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(httpReq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err // the caller gave up: there is nothing to try again
		}
		return nil, &OpenError{Message: err.Error(), Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		said, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody)) // what came is enough to say why
		return nil, &OpenError{Status: resp.StatusCode, Message: errorMessage(said)}
	}
	return &httpStream{body: resp.Body, events: sse.NewReader(resp.Body)}, nil
	// course: end HTTPTransport_Open
}

// course: begin helpers

const maxErrorBody = 64 << 10

// errorMessage is the server's own words: error.message of a JSON error body, else the text.
func errorMessage(body []byte) string {
	var answer struct {
		Error *struct {
			Message *string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &answer) == nil && answer.Error != nil && answer.Error.Message != nil {
		return *answer.Error.Message
	}
	text := []rune(strings.TrimSpace(string(body)))
	return string(text[:min(len(text), 200)])
}

// httpStream is the body of a 200 answer, read as server-sent events.
type httpStream struct {
	body   io.ReadCloser
	events *sse.Reader
}

func (s *httpStream) Next() ([]byte, error) {
	data, err := s.events.Next()
	switch {
	case err == nil:
		return data, nil
	case err == io.EOF, errors.Is(err, sse.ErrTruncated):
		return nil, io.EOF // the body ended; an event it cut short is discarded
	}
	return nil, &ResponseError{Code: "transport", Detail: "the connection broke mid-stream: " + err.Error(), Err: err}
}

func (s *httpStream) Close() error { return s.body.Close() }

// course: end helpers
