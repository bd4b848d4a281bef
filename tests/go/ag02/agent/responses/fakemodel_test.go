package responses_test

// The course fake model (`course check` starts it and names it in COURSE_FAKE_MODEL_URL), scripted
// over HTTP: POST /_fake/script queues replies in their JSON form, GET /_fake/state shows the
// requests it received. It checks every request against the real API's rules, and answers a
// request it would refuse with the real API's status and words.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

type fakeModel struct {
	t    *testing.T
	base string // ends in /v1
}

// newFakeModel forgets what earlier tests scripted and recorded.
func newFakeModel(t *testing.T) *fakeModel {
	t.Helper()
	base := os.Getenv("COURSE_FAKE_MODEL_URL")
	if base == "" {
		t.Fatal("COURSE_FAKE_MODEL_URL is not set: run the catalog with `course check`, or start `course fake-model` and set it to the URL it prints")
	}
	f := &fakeModel{t: t, base: strings.TrimRight(base, "/")}
	f.control("POST", "reset", nil, nil)
	return f
}

func (f *fakeModel) control(method, what string, body, into any) {
	f.t.Helper()
	var payload io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			f.t.Fatalf("the test's own script does not marshal: %v", err)
		}
		payload = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(f.base, "/v1")+"/_fake/"+what, payload)
	if err != nil {
		f.t.Fatalf("the fake model's /_fake/%s: %v", what, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		f.t.Fatalf("the fake model's /_fake/%s: %v", what, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("the fake model's /_fake/%s: HTTP %d: %s", what, resp.StatusCode, raw)
	}
	if into != nil {
		if err := json.Unmarshal(raw, into); err != nil {
			f.t.Fatalf("the fake model's /_fake/%s answered %s: %v", what, raw, err)
		}
	}
}

// script queues replies in their JSON form (CONTRIBUTING.md, "The fake model": its control surface).
func (f *fakeModel) script(replies ...map[string]any) {
	f.t.Helper()
	f.control("POST", "script", map[string]any{"replies": replies}, nil)
}

type fakeRequest struct {
	Method       string              `json:"method"`
	Path         string              `json:"path"`
	HeaderValues map[string][]string `json:"header_values"` // names lower case, every value in arrival order
	Body         map[string]any      `json:"body"`
}

func (f *fakeModel) requests() []fakeRequest {
	f.t.Helper()
	var state struct {
		Requests []fakeRequest `json:"requests"`
	}
	f.control("GET", "state", nil, &state)
	return state.Requests
}

// fakeEvents plays authored events as they are, then ending (eof or reset).
func fakeEvents(evs [][]byte, ending string) map[string]any {
	var list []json.RawMessage
	for _, e := range evs {
		list = append(list, e)
	}
	return map[string]any{"kind": "events", "events": list, "ending": ending}
}
