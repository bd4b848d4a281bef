// The demonstration of chapter ag01 (`course run ag01`): one streamed answer through your client.
//
// The course fake model (started by `course run`, its URL in COURSE_FAKE_MODEL_URL) is scripted to
// refuse the first request with a 503 and a Retry-After, then to stream a short answer. Your
// OpenAI provider, wrapped by WithRetry, asks twice; each delta is printed as it arrives, then what
// types.Collect makes of them. No network beyond 127.0.0.1, no API key, no cost.
//
// `course run` builds this file into your module (as cmd/ag01-demo, through go's -overlay, nothing
// written), so it uses your packages exactly as a program of yours would.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"tinyllm/agent/provider"
	"tinyllm/agent/types"
)

var pieces = []string{"Streams ", "arrive ", "in ", "pieces; ", "the ", "client ", "puts ", "them ", "together."}

const retryAfter = "0.2" // seconds the fake asks the client to wait after its 503

func main() {
	os.Exit(run())
}

func run() int {
	base := os.Getenv("COURSE_FAKE_MODEL_URL")
	if base == "" {
		fmt.Println("COURSE_FAKE_MODEL_URL is not set: run this with `course run ag01`, which starts the course fake model.")
		return 2
	}
	fmt.Printf("ag01 demonstration: the course fake model at %s, through your client with retry.\n", base)
	if here, err := os.Getwd(); err == nil {
		fmt.Println("code under test:", here) // course run starts the program in the code's folder
	}
	if !written() {
		return 1
	}
	script := []map[string]any{
		{"kind": "http_error", "status": 503, "type": "server_error", "message": "The server is overloaded.", "retry_after": retryAfter},
		{"kind": "turn", "text": pieces, "usage": []int{14, 9}},
	}
	if err := control(base, "/_fake/script", script, nil); err != nil {
		fmt.Println("cannot script the course fake model:", err)
		return 1
	}
	fmt.Printf("scripted: the first request gets HTTP 503 with Retry-After: %s; the next one a streamed answer.\n\n", retryAfter)

	policy := provider.RetryPolicy{MaxAttempts: 3, Sleep: func(ctx context.Context, d time.Duration) error {
		fmt.Printf("  retry: waiting %v, as the server asked, then asking again\n", d)
		select {
		case <-time.After(min(d, 2*time.Second)):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	client := provider.NewOpenAI(provider.Config{BaseURL: base, Model: "course-demo", Client: &http.Client{Timeout: 10 * time.Second}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	question := []types.Message{{Role: types.RoleUser, Content: "How do streamed answers arrive?"}}

	var deltas []types.Delta
	refused := false
	failed := guard("streaming", func() {
		ch, err := provider.WithRetry(client, policy).ChatStream(ctx, question, nil)
		if err != nil {
			fmt.Printf("\nyour client returned an error instead of a stream: %v\n", err)
			refused = true
			return
		}
		for d := range ch {
			fmt.Printf("  delta: %s\n", describe(d))
			deltas = append(deltas, d)
		}
	})
	if failed || refused {
		return 1
	}
	if deltas == nil {
		fmt.Println("\nno delta came: a stream ends with exactly one DoneDelta or ErrorDelta")
		return 1
	}
	replay := make(chan types.Delta, len(deltas))
	for _, d := range deltas {
		replay <- d
	}
	close(replay)
	var (
		message types.Message
		usage   types.Usage
		err     error
	)
	if guard("types.Collect", func() { message, usage, err = types.Collect(replay) }) {
		return 1
	}
	var state struct{ Requests []json.RawMessage }
	if err := control(base, "/_fake/state", nil, &state); err != nil {
		fmt.Println("cannot read the course fake model's state:", err)
		return 1
	}
	fmt.Printf("\ncollected: %q (error: %v)\n", message.Content, err)
	fmt.Printf("usage: %d in, %d out; the fake model received %d requests\n", usage.In, usage.Out, len(state.Requests))
	if want := strings.Join(pieces, ""); message.Content != want || err != nil || len(state.Requests) != 2 {
		fmt.Printf("not what was scripted: the text %q, no error, after exactly 2 requests (one refused, one answered)\n", want)
		return 1
	}
	return 0
}

// written tries, once each, the functions the demonstration goes through (some of them run in
// your stream's goroutine later, where a panic cannot be caught), and names the first one still a stub.
func written() bool {
	checks := []struct {
		name string
		call func()
	}{
		{"types.IsContent", func() { types.IsContent(types.TextDelta{Text: "x"}) }},
		{"EventReader.Next", func() { _, _ = provider.NewEventReader(strings.NewReader("data: x\n\n")).Next() }},
		{"Decoder.Event", func() { provider.NewDecoder().Event([]byte("[DONE]")) }},
		{"RequestBody", func() { _, _ = provider.RequestBody("m", nil, nil, types.NewCallOptions()) }},
		{"Accumulator", func() {
			var acc types.Accumulator
			acc.Add(types.DoneDelta{FinishReason: "stop"})
			_, _ = acc.Message(), acc.Err()
		}},
		{"WithRetry", func() { provider.WithRetry(provider.NewOpenAI(provider.Config{}), provider.RetryPolicy{}) }},
	}
	for _, check := range checks {
		if guard(check.name, check.call) {
			return false
		}
	}
	return true
}

// guard runs f and reports whether it panicked, saying so in one line: a stub's TODO as not
// written yet, any other panic as a failure of your code.
func guard(name string, f func()) (panicked bool) {
	defer func() {
		if value := recover(); value != nil {
			panicked = true
			if text := fmt.Sprint(value); strings.HasPrefix(text, "TODO") {
				fmt.Printf("\nNot written yet: %s panics with %q.\n", name, text)
				fmt.Println("Write it (its doc comment and `course show ag01` say what to do), then run `course run ag01` again.")
				return
			}
			fmt.Printf("\nyour code panicked in %s: %v; `course check ag01` says which rule it breaks\n", name, value)
		}
	}()
	f()
	return false
}

func describe(d types.Delta) string {
	if e, ok := d.(types.ErrorDelta); ok {
		return fmt.Sprintf("types.ErrorDelta{Err: %v}", e.Err)
	}
	return fmt.Sprintf("%#v", d)
}

// control talks to the fake model's scripting routes (/_fake/...), beside its API at base (.../v1).
func control(base, path string, body, into any) error {
	url := strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/v1") + path
	var answer *http.Response
	var err error
	if body == nil {
		answer, err = http.Get(url)
	} else {
		data, _ := json.Marshal(body)
		answer, err = http.Post(url, "application/json", bytes.NewReader(data))
	}
	if err != nil {
		return err
	}
	defer answer.Body.Close()
	if answer.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", path, answer.Status)
	}
	if into == nil {
		return nil
	}
	return json.NewDecoder(answer.Body).Decode(into)
}
