package proxy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// MaxBody bounds a client's request body.
const MaxBody = 1 << 20

// ServeHTTP answers POST /v1/responses with Handle, after checking that the request is one: another
// path is a 404, another method a 405, a body that is not a JSON object a 400. When Handle returns an
// error, or panics, before anything was written, the client gets a 500 in the API's error shape, not
// to be retried (never a dropped connection); once the answer began, the connection is cut instead
// of ended, so that the client sees the answer cut (a streamed answer goes out in chunks, and its
// last chunk never comes). Handle's ctx is the request's: it ends when the client goes away.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.TrimRight(r.URL.Path, "/") != "/v1/responses" {
		refuse(w, http.StatusNotFound, "not found", "not_found")
		return
	}
	if r.Method != http.MethodPost {
		refuse(w, http.StatusMethodNotAllowed, "use POST", "method_not_allowed")
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var request Request
	if err != nil || json.Unmarshal(raw, &request) != nil || request == nil {
		refuse(w, http.StatusBadRequest, "the body is not a JSON object", "invalid_body")
		return
	}
	answer := &answerWriter{ResponseWriter: w}
	defer func() {
		if v := recover(); v != nil {
			answer.abort(fmt.Errorf("panic: %v", v))
		}
	}()
	if err := p.Handle(r.Context(), answer, request); err != nil || !answer.began {
		answer.abort(cmp.Or(err, errNoAnswer))
	}
}

var errNoAnswer = errors.New("Handle returned without an answer")

// refuse writes an error in the API's shape; a 5xx says not to retry it.
func refuse(w http.ResponseWriter, status int, message, code string) {
	kind := "invalid_request_error"
	if status >= 500 {
		kind = "server_error"
		w.Header().Set(ShouldRetry, "false")
	}
	WriteWhole(w, status, ContentJSON, apiError(message, kind, code))
}

// apiError is an error answer's body in the API's shape.
func apiError(message, kind, code string) []byte {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": kind, "param": nil, "code": code}})
	return body
}

// WriteWhole writes an answer held whole: its status, Content-Type and Content-Length, then the body.
// Headers set on w before it go out with it.
func WriteWhole(w http.ResponseWriter, status int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body) // a client gone by now misses its answer: there is nobody left to tell
}

// answerWriter remembers whether the answer began.
type answerWriter struct {
	http.ResponseWriter
	began bool
}

func (a *answerWriter) WriteHeader(status int) {
	a.began = true
	a.ResponseWriter.WriteHeader(status)
}

func (a *answerWriter) Write(data []byte) (int, error) {
	a.began = true
	return a.ResponseWriter.Write(data)
}

// Unwrap lets http.ResponseController reach the connection's writer (to flush it).
func (a *answerWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

func (a *answerWriter) abort(err error) {
	if a.began {
		panic(http.ErrAbortHandler) // net/http closes the connection without the last chunk
	}
	refuse(a, http.StatusInternalServerError, "the proxy failed: "+err.Error(), "proxy_error")
}

// DemoTools are the tools the demonstration proxy runs: get_weather, deterministic, no network.
func DemoTools() Tools {
	forecasts := map[string]string{"Paris": "light rain, 14 C", "Lisbon": "sunny, 21 C"}
	return Tools{"get_weather": func(_ context.Context, arguments map[string]any) (string, error) {
		city, _ := arguments["city"].(string)
		forecast := cmp.Or(forecasts[city], "unknown")
		out, err := json.Marshal(map[string]any{"city": arguments["city"], "forecast": forecast})
		return string(out), err
	}}
}
