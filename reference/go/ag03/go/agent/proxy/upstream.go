package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Upstream is the model behind the proxy. Open sends one request body (the JSON of a Responses
// request) and returns the answer's body, to be read as it arrives and closed by the caller, on
// every path. Cancelling ctx ends the request: the body's reads fail and the connection closes. A
// non-2xx answer, or no answer at all, is a *FailClosed (upstream_status, upstream_unreachable).
type Upstream interface {
	Open(ctx context.Context, body []byte) (io.ReadCloser, error)
}

// UpstreamFunc lets a function serve as an Upstream.
type UpstreamFunc func(ctx context.Context, body []byte) (io.ReadCloser, error)

// Open calls f.
func (f UpstreamFunc) Open(ctx context.Context, body []byte) (io.ReadCloser, error) {
	return f(ctx, body)
}

// HTTPUpstream is a Responses API over HTTP: one POST to {base URL}/responses per body.
type HTTPUpstream struct {
	url    string
	apiKey string
	client *http.Client
	idle   time.Duration
}

// NewHTTPUpstream returns the upstream at baseURL (http://127.0.0.1:8000/v1, say), sending apiKey as
// "Authorization: Bearer ..." when it is not empty. A body that sends nothing for idle (60 seconds
// when 0) while it is read fails as truncated: a stalled upstream must not hold a client forever.
// client is http.DefaultClient when nil.
func NewHTTPUpstream(baseURL, apiKey string, client *http.Client, idle time.Duration) (*HTTPUpstream, error) {
	parsed, err := url.Parse(baseURL)
	if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
		return nil, fmt.Errorf("proxy: not an http(s) base URL: %q", baseURL)
	}
	if client == nil {
		client = http.DefaultClient
	}
	if idle <= 0 {
		idle = 60 * time.Second
	}
	return &HTTPUpstream{url: strings.TrimRight(baseURL, "/") + "/responses", apiKey: apiKey, client: client, idle: idle}, nil
}

var errStalled = errors.New("the upstream sent nothing for too long")

// Open posts body and returns the answer's body once its status is known.
func (u *HTTPUpstream) Open(ctx context.Context, body []byte) (io.ReadCloser, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	request, _ := http.NewRequestWithContext(ctx, http.MethodPost, u.url, bytes.NewReader(body)) // the URL was checked once
	request.Header.Set("Content-Type", "application/json")
	request.Header.Set("Accept", "text/event-stream")
	if u.apiKey != "" {
		request.Header.Set("Authorization", "Bearer "+u.apiKey)
	}
	answer, err := u.client.Do(request)
	if err != nil {
		cancel(nil)
		return nil, &FailClosed{Code: CodeUpstreamUnreachable, Message: "cannot reach the upstream: " + err.Error(), Err: err}
	}
	if answer.StatusCode/100 != 2 {
		text, _ := io.ReadAll(io.LimitReader(answer.Body, 2048))
		answer.Body.Close()
		cancel(nil)
		return nil, Fail(CodeUpstreamStatus, "the upstream answered %d: %s", answer.StatusCode, text)
	}
	return &watchedBody{body: answer.Body, idle: u.idle, timer: time.AfterFunc(u.idle, func() { cancel(errStalled) }),
		ctx: ctx, cancel: cancel}, nil
}

// watchedBody is an answer's body whose reads end once idle passes without a byte.
type watchedBody struct {
	body   io.ReadCloser
	idle   time.Duration
	timer  *time.Timer
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.timer.Reset(b.idle)
	}
	if err != nil && errors.Is(context.Cause(b.ctx), errStalled) {
		return n, &FailClosed{Code: CodeTruncated, Message: fmt.Sprintf("the upstream sent nothing for %v", b.idle), Err: err}
	}
	return n, err
}

// Close closes the connection, whether the body was read to its end, in part, or not at all.
func (b *watchedBody) Close() error {
	b.timer.Stop()
	b.cancel(nil)
	return b.body.Close()
}
