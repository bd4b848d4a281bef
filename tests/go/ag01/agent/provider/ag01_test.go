// The ag01 catalog, Go track: a streaming client for OpenAI-compatible chat completions, and its
// retry wrapper. Tests run in catalog order. The recorded streams come from the chapter's fixtures
// (COURSE_FIXTURES), the conversation test talks to the course fake model (COURSE_FAKE_MODEL_URL),
// faults come from a scripted server on 127.0.0.1, and retry waits go to a recorder, never to a
// real sleep.
package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/url"
	"os"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"tinyllm/agent/provider"
	"tinyllm/agent/types"
)

const weatherSchema = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`

func TestHandExample(t *testing.T) {
	hand := loadStreams(t).HandExample
	decoder := provider.NewDecoder()
	for i, step := range hand.Events {
		deltas, finished := decoder.Event([]byte(step.Data))
		if got := neutralAll(deltas); !equalJSON(got, step.Deltas) {
			t.Errorf("event %d (%.70s...): got deltas %s, want %s", i+1, step.Data, show(got), show(step.Deltas))
		}
		if want := step.Data == "[DONE]"; finished != want {
			t.Errorf("event %d: got finished=%v, want %v", i+1, finished, want)
		}
	}

	want := []types.Delta{types.TextDelta{Text: "Hel"}, types.TextDelta{Text: "lo"}, types.UsageDelta{In: 5, Out: 2}, types.DoneDelta{FinishReason: "stop"}}
	deltas := readBody([]byte(hand.Body), hand.ReadSize)
	if !reflect.DeepEqual(deltas, want) {
		t.Fatalf("read 7 bytes at a time: got %s, want %s", show(neutralAll(deltas)), show(neutralAll(want)))
	}
	ch := make(chan types.Delta, len(deltas))
	for _, d := range deltas {
		ch <- d
	}
	close(ch)
	msg, usage, err := types.Collect(ch)
	if err != nil || msg.Role != types.RoleAssistant || msg.Content != "Hello" || len(msg.ToolCalls) != 0 {
		t.Errorf("Collect: got message %+v, error %v; want the assistant message \"Hello\" and no error", msg, err)
	}
	if usage != (types.Usage{In: 5, Out: 2}) {
		t.Errorf("Collect: got usage %+v, want {In:5 Out:2}", usage)
	}

	// The same answer beside a second one (choice index 1: text, a tool call, its own finish
	// reason). We ask for one answer, so the decoder follows choice 0 and the four deltas stay.
	chunk := func(usage string, choices ...string) string {
		c := `{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[` + strings.Join(choices, ",") + `]`
		if usage != "" {
			c += `,"usage":` + usage
		}
		return c + "}"
	}
	choice := func(index int, delta, finish string) string {
		return fmt.Sprintf(`{"index":%d,"delta":%s,"finish_reason":%s}`, index, delta, finish)
	}
	otherCall := `{"tool_calls":[{"index":0,"id":"call_other","type":"function","function":{"name":"get_time","arguments":"{\"tz\":\"UTC\"}"}}]}`
	events := []string{
		chunk("", choice(0, `{"role":"assistant","content":""}`, "null"), choice(1, `{"role":"assistant","content":""}`, "null")),
		chunk("", choice(1, `{"content":"Bye"}`, "null")),
		chunk("", choice(0, `{"content":"Hel"}`, "null")),
		chunk("", choice(1, otherCall, "null"), choice(0, `{"content":"lo"}`, "null")),
		chunk("", choice(0, `{}`, `"stop"`), choice(1, `{}`, `"length"`)),
		chunk(`{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}`),
		"[DONE]",
	}
	var body strings.Builder
	for _, e := range events {
		body.WriteString("data: " + e + "\n\n")
	}
	if got := readBody([]byte(body.String()), hand.ReadSize); !reflect.DeepEqual(got, want) {
		t.Errorf("'Hello' as choice 0 beside a second answer (choice 1: 'Bye', a get_time call, finish 'length'): got %s, want %s (only choice 0 is ours)",
			show(neutralAll(got)), show(neutralAll(want)))
	}

	// An event the decoder cannot read ends the stream with an error, never silently.
	for _, data := range []string{"{not json", "[1, 2]", `{"choices": 5}`} {
		got, finished := provider.NewDecoder().Event([]byte(data))
		if len(got) != 1 || !finished {
			t.Errorf("Decoder.Event(%q): got %s, finished=%v; want one ErrorDelta and finished=true", data, show(neutralAll(got)), finished)
			continue
		}
		if e, ok := got[0].(types.ErrorDelta); !ok || e.Err == nil {
			t.Errorf("Decoder.Event(%q): got %#v, want an ErrorDelta with a non-nil Err", data, got[0])
		}
	}
}

func TestRecordedStreams(t *testing.T) {
	for _, stream := range loadStreams(t).Streams {
		for _, size := range append(append([]int{}, readSizes...), 0) {
			name := fmt.Sprintf("%s-%d", stream.Name, size)
			how := fmt.Sprintf("read %d byte(s) at a time", size)
			if size == 0 {
				name, how = stream.Name+"-http", "through the OpenAI provider (a server sending the recorded body 7 bytes per write)"
			}
			t.Run(name, func(t *testing.T) {
				var deltas []types.Delta
				if size == 0 {
					srv := newScripted(t, rawReply(200, "text/event-stream; charset=utf-8", stream.Body, 7))
					ch, err := openAI(srv.baseURL()).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
					if err != nil {
						t.Fatalf("%s: ChatStream: %v", how, err)
					}
					deltas = drain(t, ch, 10*time.Second)
				} else {
					deltas = readBody([]byte(stream.Body), size)
				}
				want := stream.Expected
				got := neutralAll(deltas)
				if !equalJSON(got, want.Deltas) {
					t.Fatalf("%s, %s: %s\n  got:  %s\n  want: %s", stream.Name, how, mismatch(got, want.Deltas), show(got), show(want.Deltas))
				}
				var acc types.Accumulator
				for _, d := range deltas {
					acc.Add(d)
				}
				if got := messageForm(acc.Message()); !equalJSON(got, want.Message) {
					t.Errorf("%s: Accumulator.Message(): got %s, want %s", stream.Name, show(got), show(want.Message))
				}
				u := acc.Usage()
				if got := map[string]any{"input": u.In, "output": u.Out}; !equalJSON(got, want.Usage) {
					t.Errorf("%s: Accumulator.Usage(): got %s, want %s", stream.Name, show(got), show(want.Usage))
				}
				if acc.FinishReason() != want.FinishReason {
					t.Errorf("%s: Accumulator.FinishReason(): got %q, want %q", stream.Name, acc.FinishReason(), want.FinishReason)
				}
				var wantErr any
				if want.Error != nil {
					wantErr = *want.Error
				}
				if got := errorKind(acc.Err()); got != wantErr {
					t.Errorf("%s: Accumulator.Err(): got %v (%v), want %v", stream.Name, acc.Err(), got, wantErr)
				}
			})
		}
	}
}

func TestRequestBody(t *testing.T) {
	msgs := []types.Message{
		{Role: types.RoleSystem, Content: "You are terse."},
		{Role: types.RoleUser, Content: "Weather in Paris, and the time in UTC?", Name: "alice"},
		{Role: types.RoleAssistant, ToolCalls: []types.ToolCall{
			{ID: "call_1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)},
			{ID: "call_2", Name: "get_time"},
		}},
		{Role: types.RoleTool, Content: `{"temp_c": 18}`, ToolCallID: "call_1"},
		{Role: types.RoleTool, Content: "12:00", ToolCallID: "call_2"},
		{Role: types.RoleAssistant, Content: "Paris is 18 °C. Now Lyon.", ToolCalls: []types.ToolCall{
			{ID: "call_3", Name: "get_weather", Args: json.RawMessage(`{"city":"Lyon"}`)},
		}},
		{Role: types.RoleTool, Content: `{"temp_c": 21}`, ToolCallID: "call_3"},
		{Role: types.RoleAssistant, Content: "18 °C in Paris, 21 °C in Lyon, at noon."},
	}
	tools := []types.ToolDef{
		{Name: "get_weather", Description: "Current weather in a city", Parameters: json.RawMessage(weatherSchema)},
		{Name: "get_time", Description: "Current time in a time zone", Parameters: json.RawMessage(`{"type":"object","properties":{"tz":{"type":"string"}}}`)},
	}
	opts := []types.CallOption{types.WithTemperature(0.2), types.WithMaxTokens(64)}
	var want map[string]any
	mustUnmarshal(t, `{
		"model": "test-model",
		"messages": [
			{"role": "system", "content": "You are terse."},
			{"role": "user", "content": "Weather in Paris, and the time in UTC?", "name": "alice"},
			{"role": "assistant", "content": null, "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
				{"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
			{"role": "tool", "content": "{\"temp_c\": 18}", "tool_call_id": "call_1"},
			{"role": "tool", "content": "12:00", "tool_call_id": "call_2"},
			{"role": "assistant", "content": "Paris is 18 °C. Now Lyon.", "tool_calls": [
				{"id": "call_3", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Lyon\"}"}}]},
			{"role": "tool", "content": "{\"temp_c\": 21}", "tool_call_id": "call_3"},
			{"role": "assistant", "content": "18 °C in Paris, 21 °C in Lyon, at noon."}
		],
		"stream": true,
		"stream_options": {"include_usage": true},
		"tools": [
			{"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city", "parameters": `+weatherSchema+`}},
			{"type": "function", "function": {"name": "get_time", "description": "Current time in a time zone", "parameters": {"type":"object","properties":{"tz":{"type":"string"}}}}}
		],
		"temperature": 0.2,
		"max_tokens": 64
	}`, &want)

	checkBody := func(got map[string]any, where string) {
		t.Helper()
		if got == nil {
			t.Errorf("%s: not a JSON object", where)
			return
		}
		for _, key := range []string{"model", "stream", "stream_options", "tools", "temperature", "max_tokens"} {
			if !reflect.DeepEqual(got[key], want[key]) {
				t.Errorf("%s: %q: got %s, want %s", where, key, show(got[key]), show(want[key]))
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: got keys %s, want the keys of %s", where, show(keys(got)), show(keys(want)))
		}
		gotMsgs, _ := got["messages"].([]any)
		wantMsgs := want["messages"].([]any)
		if len(gotMsgs) != len(wantMsgs) {
			t.Errorf("%s: got %d messages, want %d", where, len(gotMsgs), len(wantMsgs))
			return
		}
		for i := range wantMsgs {
			if !reflect.DeepEqual(gotMsgs[i], wantMsgs[i]) {
				t.Errorf("%s: message %d: got %s, want %s", where, i, show(gotMsgs[i]), show(wantMsgs[i]))
			}
		}
	}

	raw, err := provider.RequestBody("test-model", msgs, tools, types.NewCallOptions(opts...))
	if err != nil {
		t.Fatalf("RequestBody: %v", err)
	}
	var built map[string]any
	mustUnmarshal(t, string(raw), &built)
	checkBody(built, "RequestBody()")

	raw, err = provider.RequestBody("m", []types.Message{user("hi")}, nil, types.CallOptions{})
	var minimal, wantMinimal any
	mustUnmarshal(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`, &wantMinimal)
	if err != nil || json.Unmarshal(raw, &minimal) != nil || !reflect.DeepEqual(minimal, wantMinimal) {
		t.Errorf("RequestBody with no tools and no options: got %s (error %v), want %s", raw, err, show(wantMinimal))
	}

	srv := newScripted(t, textReply("ok"), textReply("ok"))
	p := openAI(srv.baseURL(), func(c *provider.Config) { c.Headers = map[string]string{"X-Course-Trace": "t-1"} })
	ch, err := p.ChatStream(testContext(t), msgs, tools, opts...)
	if err != nil {
		t.Fatalf("ChatStream: %v", err)
	}
	drain(t, ch, 10*time.Second)
	req := srv.lastRequest()
	if req.Method != "POST" || req.Path != chatPath {
		t.Errorf("request line: got %s %s, want POST %s (BaseURL + /chat/completions)", req.Method, req.Path, chatPath)
	}
	for name, value := range map[string]string{"Authorization": "Bearer sk-test", "Accept": "text/event-stream", "X-Course-Trace": "t-1"} {
		if got := req.Header.Get(name); got != value {
			t.Errorf("header %s: got %q, want %q", name, got, value)
		}
	}
	if ct := req.Header.Get("Content-Type"); strings.TrimSpace(strings.Split(ct, ";")[0]) != "application/json" {
		t.Errorf("header Content-Type: got %q, want application/json", ct)
	}
	checkBody(req.Body, "the body on the wire")

	empty := []types.Message{user("hi"), {Role: types.RoleAssistant}, user("")}
	ch, err = openAI(srv.baseURL(), func(c *provider.Config) { c.APIKey, c.Client = "", nil }).ChatStream(testContext(t), empty, nil)
	if err != nil {
		t.Fatalf("ChatStream without an API key and with no Client (http.DefaultClient): %v", err)
	}
	drain(t, ch, 10*time.Second)
	if got, ok := srv.lastRequest().Header["Authorization"]; ok {
		t.Errorf("with no APIKey: got an Authorization header %q, want none", got)
	}
	var wantEmpty any
	mustUnmarshal(t, `[{"role":"user","content":"hi"},{"role":"assistant","content":""},{"role":"user","content":""}]`, &wantEmpty)
	if got := srv.lastRequest().Body["messages"]; !reflect.DeepEqual(got, wantEmpty) {
		t.Errorf("messages without tool calls keep their text, even empty: got %s, want %s (null is only for an assistant's empty text beside tool calls)", show(got), show(wantEmpty))
	}
}

func TestAPIErrorNotRetried(t *testing.T) {
	srv := newScripted(t, httpError(400, "invalid_request_error", "bad model", ""), textReply("this answer must never be asked for"))
	sleeps := &sleepRecorder{}
	p := provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{MaxAttempts: 5, Initial: 100 * time.Millisecond, Sleep: sleeps.Sleep})
	ch, err := p.ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	var apiErr *provider.APIError
	if ch != nil || !errors.As(err, &apiErr) {
		t.Fatalf("a 400: got channel %v and error %v, want a nil channel and an *APIError", ch, err)
	}
	if apiErr.Status != 400 || apiErr.Type != "invalid_request_error" || apiErr.Code != "code_400" || apiErr.Message != "bad model" || apiErr.RetryAfter != 0 {
		t.Errorf("APIError: got %+v, want Status 400, Type invalid_request_error, Code code_400, Message \"bad model\", RetryAfter 0", *apiErr)
	}
	if msg := apiErr.Error(); msg != "HTTP 400 invalid_request_error: bad model" {
		t.Errorf("APIError.Error(): got %q, want %q (status, type, message)", msg, "HTTP 400 invalid_request_error: bad model")
	}
	if n := srv.requestCount(); n != 1 {
		t.Errorf("requests: got %d, want 1 (a 400 fails the same way every time)", n)
	}
	if w := sleeps.Waits(); len(w) != 0 {
		t.Errorf("sleeps: got %s, want none", durations(w...))
	}

	page := "<html>\n<head><title>400 Bad Request</title></head>\n<body>nginx</body>\n</html>"
	srv = newScripted(t, rawReply(400, "text/html", "\n"+page+"\n\n", 0), textReply("this answer must never be asked for"))
	_, err = provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{MaxAttempts: 5, Sleep: sleeps.Sleep}).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Type != "" || apiErr.Code != "" || apiErr.Message != page {
		t.Errorf("a 400 with a proxy's HTML page as its body: got %#v, want an *APIError with status 400, no type or code, and the body's text, trimmed, as Message", err)
	}
	if n := srv.requestCount(); n != 1 {
		t.Errorf("a 400 with an HTML body: got %d requests, want 1", n)
	}

	// Retry-After is delta-seconds, a finite number >= 0; anything else (an HTTP date included) is no hint
	for _, header := range []string{"-1", "inf", "nan", "1e400", "Wed, 21 Oct 2015 07:28:00 GMT"} {
		srv := newScripted(t, httpError(503, "", "", header))
		_, err := openAI(srv.baseURL()).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
		if !errors.As(err, &apiErr) {
			t.Errorf("a 503 with Retry-After: %s: got error %v, want an *APIError", header, err)
		} else if apiErr.RetryAfter != 0 {
			t.Errorf("APIError.RetryAfter for 'Retry-After: %s': got %v, want 0 (no usable hint)", header, apiErr.RetryAfter)
		}
	}
}

func TestRetryBackoffSchedule(t *testing.T) {
	policy := provider.RetryPolicy{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 2}
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, policy.Delay(n, nil))
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RetryPolicy{Initial: 100ms, Max: 1s, Multiplier: 2}.Delay(1..6): got %s, want %s", durations(got...), durations(want...))
	}
	var zero provider.RetryPolicy
	got = []time.Duration{zero.Delay(1, nil), zero.Delay(2, nil), zero.Delay(3, nil), zero.Delay(8, nil)}
	want = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 30 * time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RetryPolicy{} (the defaults: Initial 500ms, Multiplier 2, Max 30s).Delay(1, 2, 3, 8): got %s, want %s", durations(got...), durations(want...))
	}
	triple := provider.RetryPolicy{Initial: 10 * time.Millisecond, Max: time.Minute, Multiplier: 3}
	if got := triple.Delay(3, nil); got != 90*time.Millisecond {
		t.Errorf("RetryPolicy{Initial: 10ms, Multiplier: 3}.Delay(3): got %v, want 90ms", got)
	}

	srv := newScripted(t, httpError(503, "", "", ""), httpError(503, "", "", ""), textReply("Hel", "lo"))
	sleeps := &sleepRecorder{}
	p := provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{MaxAttempts: 3, Initial: 100 * time.Millisecond, Sleep: sleeps.Sleep})
	tools := []types.ToolDef{{Name: "get_weather", Description: "Current weather in a city", Parameters: json.RawMessage(weatherSchema)}}
	ch, err := p.ChatStream(testContext(t), []types.Message{user("hi")}, tools, types.WithTemperature(0.2), types.WithMaxTokens(64))
	if err != nil {
		t.Fatalf("503, 503, 200: ChatStream returned %v, want the third attempt's stream", err)
	}
	msg, _, err := types.Collect(ch)
	if w := sleeps.Waits(); !reflect.DeepEqual(w, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}) {
		t.Errorf("sleeps after 503, 503, 200: got %s, want [100ms 200ms]", durations(w...))
	}
	if n := srv.requestCount(); n != 3 {
		t.Errorf("requests: got %d, want 3", n)
	}
	if err != nil || msg.Content != "Hello" {
		t.Errorf("text: got %q (error %v), want \"Hello\"", msg.Content, err)
	}
	// every attempt is the caller's request: the wrapper passes the tools and options on, each time
	for i, req := range srv.allRequests() {
		tools, _ := req.Body["tools"].([]any)
		var names []string
		for _, tool := range tools {
			fn, _ := tool.(map[string]any)["function"].(map[string]any)
			name, _ := fn["name"].(string)
			names = append(names, name)
		}
		if !reflect.DeepEqual(names, []string{"get_weather"}) || req.Body["temperature"] != 0.2 || req.Body["max_tokens"] != 64.0 {
			t.Errorf("request %d of 3: got tools %v, temperature %v, max_tokens %v; want [get_weather], 0.2, 64 (the wrapper must pass the caller's tools and options on)",
				i+1, names, req.Body["temperature"], req.Body["max_tokens"])
		}
	}
}

func TestRetryAfterHonored(t *testing.T) {
	policy := provider.RetryPolicy{Initial: 100 * time.Millisecond}
	if got := policy.Delay(1, &provider.APIError{Status: 429, RetryAfter: 3 * time.Second}); got != 3*time.Second {
		t.Errorf("Delay(1, APIError{429, RetryAfter: 3s}): got %v, want 3s", got)
	}
	if got := policy.Delay(2, fmt.Errorf("attempt 2: %w", &provider.APIError{Status: 429, RetryAfter: 7 * time.Second})); got != 7*time.Second {
		t.Errorf("Delay(2, a wrapped APIError{429, RetryAfter: 7s}): got %v, want 7s (find it with errors.As)", got)
	}
	if got := policy.Delay(1, &provider.APIError{Status: 503}); got != 100*time.Millisecond {
		t.Errorf("Delay(1, APIError{503}) without Retry-After: got %v, want 100ms (the backoff)", got)
	}

	for _, c := range []struct {
		header string
		want   time.Duration
	}{{"3", 3 * time.Second}, {"0", 0}, {"1.5", 1500 * time.Millisecond}, {"soon", 0}} {
		srv := newScripted(t, httpError(429, "", "", c.header))
		_, err := openAI(srv.baseURL()).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
		var apiErr *provider.APIError
		if !errors.As(err, &apiErr) || apiErr.RetryAfter != c.want {
			t.Errorf("APIError.RetryAfter for 'Retry-After: %s': got %#v, want %v", c.header, err, c.want)
		}
	}

	srv := newScripted(t, httpError(429, "", "", "3"), textReply("ok"))
	sleeps := &sleepRecorder{}
	p := provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{Initial: 100 * time.Millisecond, Sleep: sleeps.Sleep})
	ch, err := p.ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	if err != nil {
		t.Fatalf("429 then 200: ChatStream returned %v, want the retry's stream", err)
	}
	msg, _, err := types.Collect(ch)
	if w := sleeps.Waits(); !reflect.DeepEqual(w, []time.Duration{3 * time.Second}) {
		t.Errorf("sleeps after a 429 with Retry-After: 3: got %s, want [3s]", durations(w...))
	}
	if n := srv.requestCount(); n != 2 {
		t.Errorf("requests: got %d, want 2", n)
	}
	if err != nil || msg.Content != "ok" {
		t.Errorf("text: got %q (error %v), want \"ok\"", msg.Content, err)
	}
}

func TestRetryGivesUpAtMaxAttempts(t *testing.T) {
	srv := newScripted(t, httpError(503, "", "first", ""), httpError(503, "", "second", ""), httpError(503, "", "third", ""), textReply("a fourth attempt must not happen"))
	sleeps := &sleepRecorder{}
	p := provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{MaxAttempts: 3, Initial: 100 * time.Millisecond, Sleep: sleeps.Sleep})
	_, err := p.ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	var apiErr *provider.APIError
	if !errors.As(err, &apiErr) || apiErr.Message != "third" {
		t.Errorf("after three 503s: got error %v, want the third *APIError (message \"third\")", err)
	}
	if n := srv.requestCount(); n != 3 {
		t.Errorf("requests: got %d, want 3 (MaxAttempts counts the first)", n)
	}
	if w := sleeps.Waits(); !reflect.DeepEqual(w, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}) {
		t.Errorf("sleeps: got %s, want [100ms 200ms] (none after the last attempt)", durations(w...))
	}

	srv = newScripted(t, resetAfterRole(), resetAfterRole(), resetAfterRole(), textReply("too late"))
	sleeps = &sleepRecorder{}
	p = provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{MaxAttempts: 3, Initial: 100 * time.Millisecond, Sleep: sleeps.Sleep})
	ch, err := p.ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	var deltas []types.Delta
	if err == nil {
		deltas = drain(t, ch, 10*time.Second)
	}
	if n := srv.requestCount(); n != 3 {
		t.Errorf("three resets before content: got %d requests, want 3", n)
	}
	if err == nil {
		if len(deltas) != 1 || !isError(deltas[0]) {
			t.Errorf("after the third reset: got %s, want one ErrorDelta (or an error from ChatStream)", show(neutralAll(deltas)))
		}
	}
	if w := sleeps.Waits(); len(w) != 2 {
		t.Errorf("sleeps: got %s, want two waits", durations(w...))
	}

	srv = newScripted(t, httpError(503, "", "", ""), textReply("too late"))
	sleeps = &sleepRecorder{}
	_, err = provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{MaxAttempts: 1, Sleep: sleeps.Sleep}).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	if !errors.As(err, &apiErr) || srv.requestCount() != 1 || len(sleeps.Waits()) != 0 {
		t.Errorf("MaxAttempts 1: got error %v after %d request(s) and sleeps %s, want the 503 after 1 request and no sleep", err, srv.requestCount(), durations(sleeps.Waits()...))
	}

	// the zero policy makes three attempts
	srv = newScripted(t, httpError(503, "", "", ""), httpError(503, "", "", ""), httpError(503, "", "", ""), textReply("too late"))
	sleeps = &sleepRecorder{}
	_, err = provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{Sleep: sleeps.Sleep}).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	if err == nil || srv.requestCount() != 3 {
		t.Errorf("RetryPolicy{} (MaxAttempts 0 means the default, 3) against four scripted 503s: got error %v after %d requests, want the third 503", err, srv.requestCount())
	}
}

func isError(d types.Delta) bool { _, ok := d.(types.ErrorDelta); return ok }

func TestRetryBeforeFirstContent(t *testing.T) {
	failures := map[string]reply{
		"reset-after-role-chunk":         resetAfterRole(),
		"server_error-event":             errorEvent("server_error"),
		"cut-before-content":             cutAfterText(),
		"clean-end-without-done-no-text": endAfter(func(map[string]any) []string { return nil }),
	}
	for _, name := range []string{"reset-after-role-chunk", "server_error-event", "cut-before-content", "clean-end-without-done-no-text"} {
		t.Run(name, func(t *testing.T) {
			srv := newScripted(t, failures[name], textReply("Hel", "lo"))
			sleeps := &sleepRecorder{}
			p := provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{Initial: 100 * time.Millisecond, Sleep: sleeps.Sleep})
			ch, err := p.ChatStream(testContext(t), []types.Message{user("hi")}, nil)
			if err != nil {
				t.Fatalf("ChatStream: got %v, want the retry's stream", err)
			}
			deltas := drain(t, ch, 10*time.Second)
			got := neutralAll(deltas)
			if texts := textsOf(deltas); !reflect.DeepEqual(texts, []string{"Hel", "lo"}) {
				t.Errorf("text deltas: got %q, want [\"Hel\" \"lo\"] once (all deltas: %s)", texts, show(got))
			}
			if len(deltas) == 0 || !reflect.DeepEqual(deltas[len(deltas)-1], types.DoneDelta{FinishReason: "stop"}) {
				t.Errorf("last delta: want DoneDelta{stop} (all deltas: %s)", show(got))
			}
			for _, d := range deltas {
				if isError(d) {
					t.Errorf("an error reached the caller although the retry succeeded: %s", show(got))
					break
				}
			}
			if n := srv.requestCount(); n != 2 {
				t.Errorf("requests: got %d, want 2 (the failed one and the retry)", n)
			}
			if w := sleeps.Waits(); !reflect.DeepEqual(w, []time.Duration{100 * time.Millisecond}) {
				t.Errorf("sleeps: got %s, want [100ms]", durations(w...))
			}
		})
	}
}

func TestNoRetryAfterContent(t *testing.T) {
	toolCallThenCut := cutAfter(func(body map[string]any) []string {
		head := map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": ""}}}}
		part := map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `{"city":`}}}}
		return []string{chunkEvent(body, head, nil), chunkEvent(body, part, nil)}
	})
	cases := []struct {
		name    string
		failure reply
		texts   []string
	}{
		{"cut-after-three-tokens", cutAfterText("a", " b", " c"), []string{"a", " b", " c"}},
		{"server_error-after-three-tokens", errorEvent("server_error", "a", " b", " c"), []string{"a", " b", " c"}},
		{"cut-after-a-tool-call-began", toolCallThenCut, []string{}},
		{"clean-end-without-done-after-text", endAfter(func(body map[string]any) []string {
			return []string{chunkEvent(body, map[string]any{"content": "a"}, nil), chunkEvent(body, map[string]any{}, "stop")}
		}), []string{"a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newScripted(t, c.failure, textReply("a", " b", " c", " d"))
			sleeps := &sleepRecorder{}
			p := provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{MaxAttempts: 3, Initial: 100 * time.Millisecond, Sleep: sleeps.Sleep})
			ch, err := p.ChatStream(testContext(t), []types.Message{user("hi")}, nil)
			if err != nil {
				t.Fatalf("ChatStream: got %v, want the stream (its failure comes after content, as an ErrorDelta)", err)
			}
			deltas := drain(t, ch, 10*time.Second)
			got := neutralAll(deltas)
			if texts := textsOf(deltas); !reflect.DeepEqual(texts, c.texts) {
				t.Errorf("text deltas: got %q, want %q (all deltas: %s)", texts, c.texts, show(got))
			}
			if len(deltas) == 0 || !isError(deltas[len(deltas)-1]) {
				t.Errorf("last delta: want an ErrorDelta (all deltas: %s)", show(got))
			} else if err := deltas[len(deltas)-1].(types.ErrorDelta).Err; strings.HasPrefix(c.name, "clean-end") && !errors.Is(err, provider.ErrNoDone) {
				t.Errorf("a body that ends cleanly before [DONE]: got ErrorDelta{%v}, want ErrNoDone (only [DONE] ends a stream well)", err)
			}
			for _, d := range deltas {
				if _, done := d.(types.DoneDelta); done {
					t.Errorf("a broken stream must not end in a DoneDelta: %s", show(got))
				}
			}
			if n := srv.requestCount(); n != 1 {
				t.Errorf("requests: got %d, want 1 (no retry once content was passed on)", n)
			}
			if w := sleeps.Waits(); len(w) != 0 {
				t.Errorf("sleeps: got %s, want none", durations(w...))
			}
		})
	}
}

func TestCancelStopsStream(t *testing.T) {
	cases := []struct {
		name               string
		wrapped, readFirst bool
	}{{"direct", false, true}, {"with_retry", true, true}, {"cancelled_before_reading", false, false}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newScripted(t, slowStream(5*time.Second))
			var p types.Provider = openAI(srv.baseURL())
			if c.wrapped {
				p = provider.WithRetry(p, provider.RetryPolicy{Sleep: (&sleepRecorder{}).Sleep})
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch, err := p.ChatStream(ctx, []types.Message{user("count slowly")}, nil)
			if err != nil {
				t.Fatalf("ChatStream: %v", err)
			}
			if c.readFirst {
				if _, ok := <-ch; !ok {
					t.Fatal("the slow stream closed before its first delta")
				}
			}
			select {
			case <-srv.clientGone:
				t.Fatal("the server saw the client leave before the test cancelled the context")
			default:
			}
			cancel()
			closed := make(chan struct{})
			go func() {
				for range ch {
				}
				close(closed)
			}()
			select {
			case <-closed:
			case <-time.After(2 * time.Second):
				t.Fatal("2 s after cancel the delta channel was still open: the producer must stop and close it when ctx is done")
			}
			select {
			case <-srv.clientGone:
			case <-time.After(2 * time.Second):
				t.Fatal("2 s after cancel the server still had its request: build the HTTP request with the caller's ctx so cancelling closes the connection")
			}
		})
	}
}

// fakeModelURL is the base URL of the course fake model that `course check` starts.
func fakeModelURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("COURSE_FAKE_MODEL_URL")
	if u == "" {
		t.Fatal("COURSE_FAKE_MODEL_URL is not set: run the catalog with `course check`, or start `course fake-model` and set it to the URL it prints")
	}
	return u
}

func TestFaketoolToolCall(t *testing.T) {
	p := openAI(fakeModelURL(t))
	tools := []types.ToolDef{{Name: "get_weather", Description: "Current weather in a city", Parameters: json.RawMessage(weatherSchema)}}
	convo := []types.Message{user("What is the weather in Paris?")}
	ch, err := p.ChatStream(testContext(t), convo, tools)
	if err != nil {
		t.Fatalf("first turn: ChatStream: %v", err)
	}
	deltas := drain(t, ch, 10*time.Second)
	var fragments []string
	var acc types.Accumulator
	for _, d := range deltas {
		if a, ok := d.(types.ToolCallArgsDelta); ok {
			fragments = append(fragments, a.Fragment)
		}
		acc.Add(d)
	}
	if len(fragments) != 2 {
		t.Errorf("argument fragments: got %q, want the two halves the fake model sends (all: %s)", fragments, show(neutralAll(deltas)))
	}
	msg, usage := acc.Message(), acc.Usage()
	if err := acc.Err(); err != nil || len(msg.ToolCalls) != 1 {
		t.Fatalf("first turn: got %d tool calls (error %v), want one get_weather call (deltas: %s)", len(msg.ToolCalls), err, show(neutralAll(deltas)))
	}
	call := msg.ToolCalls[0]
	var args map[string]any
	if call.Name != "get_weather" || string(call.Args) != strings.Join(fragments, "") || json.Unmarshal(call.Args, &args) != nil || args["city"] != "Paris" {
		t.Errorf("tool call: got %s(%s), want get_weather with the fragments joined, {\"city\":\"Paris\"}", call.Name, call.Args)
	}
	if call.ID == "" {
		t.Errorf("tool call: got an empty ID, want the id the fake model sent")
	}
	if usage.In <= 0 || usage.Out <= 0 {
		t.Errorf("usage: got %+v; the fake model (like OpenAI) sends usage only when stream_options.include_usage is true", usage)
	}

	convo = append(convo, msg, types.Message{Role: types.RoleTool, Content: `{"temp_c": 18}`, ToolCallID: call.ID})
	ch, err = p.ChatStream(testContext(t), convo, tools)
	if err != nil {
		t.Fatalf("second turn (with the tool result): ChatStream: %v (was the tool message sent with its tool_call_id?)", err)
	}
	answer, _, err := types.Collect(ch)
	if err != nil || len(answer.ToolCalls) != 0 || !strings.Contains(answer.Content, `{"temp_c": 18}`) {
		t.Errorf("second turn: got text %q, calls %d, error %v; want a text answer quoting the tool result (was the tool_call_id sent?)", answer.Content, len(answer.ToolCalls), err)
	}
}

func TestRetryableTable(t *testing.T) {
	opErr := func(err error) error {
		return &net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: err}}
	}
	urlErr := func(err error) error {
		return &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1/chat/completions", Err: err}
	}
	deadlineCtx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-deadlineCtx.Done()
	table := []struct {
		label string
		err   error
		want  bool
	}{
		{"ErrNoDone", provider.ErrNoDone, true},
		{"ErrNoDone wrapped", fmt.Errorf("attempt 1: %w", provider.ErrNoDone), true},
		{"StreamError{server_error}", &provider.StreamError{Type: "server_error"}, true},
		{"StreamError{invalid_request_error}", &provider.StreamError{Type: "invalid_request_error"}, false},
		{"StreamError{}", &provider.StreamError{}, false},
		{"connection refused", urlErr(opErr(syscall.ECONNREFUSED)), true},
		{"connection reset", opErr(syscall.ECONNRESET), true},
		{"connection aborted", opErr(syscall.ECONNABORTED), true},
		{"io.ErrUnexpectedEOF (a body cut mid-chunk)", io.ErrUnexpectedEOF, true},
		{"a timeout (net.Error)", urlErr(timeoutError{}), true},
		{"context.Canceled", urlErr(context.Canceled), false},
		{"context.DeadlineExceeded", urlErr(deadlineCtx.Err()), false},
		{"invalid JSON in an event", errors.New("provider: unreadable stream event \"{\""), false},
		{"types.ErrIncomplete", types.ErrIncomplete, false},
		{"nil", nil, false},
	}
	for _, s := range []int{408, 429, 500, 502, 503, 504} {
		table = append(table, struct {
			label string
			err   error
			want  bool
		}{fmt.Sprintf("APIError{%d}", s), &provider.APIError{Status: s}, true})
	}
	for _, s := range []int{400, 401, 403, 404, 409, 422, 501} {
		table = append(table, struct {
			label string
			err   error
			want  bool
		}{fmt.Sprintf("APIError{%d}", s), &provider.APIError{Status: s}, false})
	}
	table = append(table, struct {
		label string
		err   error
		want  bool
	}{"APIError{503} wrapped", fmt.Errorf("call: %w", &provider.APIError{Status: 503}), true})
	for _, row := range table {
		if got := provider.Retryable(row.err); got != row.want {
			t.Errorf("Retryable(%s): got %v, want %v", row.label, got, row.want)
		}
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestAccumulatorOrdersCallsByIndex(t *testing.T) {
	c0 := types.ToolCall{ID: "call_0", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}
	c1 := types.ToolCall{ID: "call_1", Name: "list_files"}
	c2 := types.ToolCall{ID: "call_2", Name: "get_time", Args: json.RawMessage(`{"tz":"UTC"}`)}
	var acc types.Accumulator
	if acc.FinishReason() != "" {
		t.Errorf("FinishReason before any delta: got %q, want \"\"", acc.FinishReason())
	}
	for _, d := range []types.Delta{
		types.ToolCallStartDelta{Index: 2, ID: c2.ID, Name: c2.Name},
		types.ToolCallStartDelta{Index: 0, ID: c0.ID, Name: c0.Name},
		types.ToolCallStartDelta{Index: 1, ID: c1.ID, Name: c1.Name},
		types.ToolCallArgsDelta{Index: 2, Fragment: string(c2.Args)},
		types.TextDelta{Text: "Let me "},
		types.ToolCallArgsDelta{Index: 0, Fragment: string(c0.Args)},
		types.TextDelta{Text: "check."},
		types.ToolCallEndDelta{Index: 2, Call: c2},
		types.ToolCallEndDelta{Index: 1, Call: c1},
		types.ToolCallEndDelta{Index: 0, Call: c0},
		types.UsageDelta{In: 3, Out: 1},
		types.UsageDelta{In: 12, Out: 7},
	} {
		acc.Add(d)
	}
	if acc.FinishReason() != "" {
		t.Errorf("FinishReason before the DoneDelta: got %q, want \"\"", acc.FinishReason())
	}
	if err := acc.Err(); !errors.Is(err, types.ErrIncomplete) {
		t.Errorf("Err with no DoneDelta yet: got %v, want types.ErrIncomplete", err)
	}
	acc.Add(types.DoneDelta{FinishReason: "tool_calls"})
	msg := acc.Message()
	var ids, args []string
	for _, c := range msg.ToolCalls {
		ids, args = append(ids, c.ID), append(args, string(c.Args))
	}
	if !reflect.DeepEqual(ids, []string{"call_0", "call_1", "call_2"}) {
		t.Errorf("tool calls: got ids %q, want [call_0 call_1 call_2] (index order)", ids)
	}
	if want := []string{`{"city":"Paris"}`, "{}", `{"tz":"UTC"}`}; !reflect.DeepEqual(args, want) {
		t.Errorf("arguments: got %q, want %q (no arguments is {})", args, want)
	}
	if msg.Role != types.RoleAssistant || msg.Content != "Let me check." {
		t.Errorf("message: got role %q, content %q; want assistant, \"Let me check.\"", msg.Role, msg.Content)
	}
	if acc.Usage() != (types.Usage{In: 12, Out: 7}) {
		t.Errorf("Usage: got %+v, want {In:12 Out:7} (the last UsageDelta)", acc.Usage())
	}
	if acc.FinishReason() != "tool_calls" || acc.Err() != nil {
		t.Errorf("after the DoneDelta: got FinishReason %q, Err %v; want tool_calls, nil", acc.FinishReason(), acc.Err())
	}

	var open types.Accumulator
	open.Add(types.ToolCallStartDelta{Index: 0, ID: "call_0", Name: "get_weather"})
	open.Add(types.ToolCallArgsDelta{Index: 0, Fragment: `{"city":`})
	if calls := open.Message().ToolCalls; len(calls) != 0 {
		t.Errorf("a call with no end delta: got %+v, want no tool call", calls)
	}
	if _, _, err := types.Collect(deltaChan(types.ToolCallStartDelta{Index: 0, ID: "call_0", Name: "get_weather"})); !errors.Is(err, types.ErrIncomplete) {
		t.Errorf("Collect of a stream without a done delta: got error %v, want types.ErrIncomplete", err)
	}

	first, second := errors.New("first failure"), errors.New("second failure")
	var failed types.Accumulator
	for _, d := range []types.Delta{types.TextDelta{Text: "Hel"}, types.ErrorDelta{Err: first}, types.ErrorDelta{Err: second}} {
		failed.Add(d)
	}
	if failed.Err() != first {
		t.Errorf("Err after ErrorDeltas: got %v, want the first one's error", failed.Err())
	}
	if _, _, err := types.Collect(deltaChan(types.TextDelta{Text: "Hel"}, types.ErrorDelta{Err: provider.ErrNoDone})); !errors.Is(err, provider.ErrNoDone) {
		t.Errorf("Collect of a cut stream: got error %v, want its ErrorDelta's error", err)
	}
	msg, usage, err := types.Collect(deltaChan(types.TextDelta{Text: "hi"}, types.DoneDelta{FinishReason: "stop"}))
	if msg.Content != "hi" || usage != (types.Usage{}) || err != nil {
		t.Errorf("Collect: got %q, %+v, %v; want \"hi\", zero usage, nil", msg.Content, usage, err)
	}
}

func deltaChan(ds ...types.Delta) <-chan types.Delta {
	ch := make(chan types.Delta, len(ds))
	for _, d := range ds {
		ch <- d
	}
	close(ch)
	return ch
}

func TestSeams(t *testing.T) {
	if cc := types.CallContextFrom(context.Background()); !cc.Tainted {
		t.Errorf("no call context attached: got %+v, want Tainted true (err on the cautious side)", cc)
	}
	outer := types.CallContext{Tainted: false, Iter: 1}
	inner := types.CallContext{Tainted: true, Iter: 2}
	ctxOuter := types.WithCallContext(context.Background(), outer)
	ctxInner := types.WithCallContext(ctxOuter, inner)
	if got := types.CallContextFrom(ctxOuter); got != outer {
		t.Errorf("WithCallContext(outer): got %+v, want %+v", got, outer)
	}
	if got := types.CallContextFrom(ctxInner); got != inner {
		t.Errorf("nested: got %+v, want %+v", got, inner)
	}
	if got := types.CallContextFrom(ctxOuter); got != outer {
		t.Errorf("the outer context after nesting: got %+v, want %+v unchanged", got, outer)
	}
	type otherKey struct{}
	if got := types.CallContextFrom(context.WithValue(ctxOuter, otherKey{}, "x")); got != outer {
		t.Errorf("through an unrelated context value: got %+v, want %+v", got, outer)
	}

	for _, c := range []struct{ got, want string }{{types.LLMStep(3), "llm/3"}, {types.ToolStep(3, 0, "get_weather"), "tool/3/0/get_weather"}} {
		if c.got != c.want {
			t.Errorf("step name: got %q, want %q", c.got, c.want)
		}
	}
	parse := []struct {
		step, want string
		ok         bool
	}{
		{"tool/3/0/get_weather", "get_weather", true},
		{"tool/12/4/fs/read_file", "fs/read_file", true},
		{types.ToolStep(7, 2, "mcp/github/open_pr"), "mcp/github/open_pr", true},
		{"llm/3", "", false},
		{"tool/3/0", "", false},
		{"tool/3/0/", "", false},
		{"tool/x/0/get_weather", "", false},
		{"tool/3/y/get_weather", "", false},
		{"tool/3.5/0/get_weather", "", false},
		{"tool/-3/0/get_weather", "", false},
		{"tool/٣/0/get_weather", "", false},
		{"tools/3/0/get_weather", "", false},
		{"", "", false},
	}
	for _, c := range parse {
		if got, ok := types.StepToolName(c.step); got != c.want || ok != c.ok {
			t.Errorf("StepToolName(%q): got (%q, %v), want (%q, %v)", c.step, got, ok, c.want, c.ok)
		}
	}

	content := []struct {
		d    types.Delta
		want bool
	}{
		{types.TextDelta{Text: "x"}, true},
		{types.ToolCallStartDelta{Index: 0, ID: "c", Name: "n"}, true},
		{types.ToolCallArgsDelta{Index: 0, Fragment: "{"}, true},
		{types.ToolCallEndDelta{Index: 0, Call: types.ToolCall{ID: "c", Name: "n"}}, true},
		{types.UsageDelta{In: 1, Out: 1}, false},
		{types.DoneDelta{FinishReason: "stop"}, false},
		{types.ErrorDelta{Err: provider.ErrNoDone}, false},
		{nil, false},
	}
	for _, c := range content {
		if got := types.IsContent(c.d); got != c.want {
			t.Errorf("IsContent(%#v): got %v, want %v", c.d, got, c.want)
		}
	}

	if got := []string{types.Allow.String(), types.Deny.String(), types.NeedApproval.String()}; !reflect.DeepEqual(got, []string{"allow", "deny", "need_approval"}) {
		t.Errorf("Decision names: got %q, want [allow deny need_approval]", got)
	}
	var zero types.Verdict
	if zero.Decision != types.Allow {
		t.Errorf("the zero Verdict: got %v, want Allow", zero.Decision)
	}

	var runner types.StepRunner = types.Direct{}
	type ctxKey struct{}
	ctx := context.WithValue(context.Background(), ctxKey{}, "seen")
	out, err := runner.RunStep(ctx, types.ToolStep(1, 0, "get_weather"), types.StepTool, func(ctx context.Context) ([]byte, error) {
		if ctx.Value(ctxKey{}) != "seen" {
			return nil, errors.New("fn did not get the caller's context")
		}
		return []byte(`{"temp_c": 18}`), nil
	})
	if string(out) != `{"temp_c": 18}` || err != nil {
		t.Errorf("Direct.RunStep: got (%q, %v), want what fn returned with the caller's ctx", out, err)
	}
	boom := errors.New("boom")
	if _, err := (types.Direct{}).RunStep(ctx, types.LLMStep(1), types.StepLLM, func(context.Context) ([]byte, error) { return nil, boom }); err != boom {
		t.Errorf("Direct.RunStep with a failing fn: got error %v, want fn's error", err)
	}
	if types.StepLLM != "llm" || types.StepTool != "tool" {
		t.Errorf("StepKind values: got %q, %q; want llm, tool", types.StepLLM, types.StepTool)
	}
}

// ---- server-sent events -------------------------------------------------------------------------

type sseEvent struct{ Data, Type, ID string }

// readEvents reads every event of r; the error is the one that ended the reading.
func readEvents(r io.Reader) ([]sseEvent, error) {
	events := provider.NewEventReader(r)
	var out []sseEvent
	for len(out) < 100000 {
		data, err := events.Next()
		if err != nil {
			return out, err
		}
		out = append(out, sseEvent{string(data), events.Type(), events.LastID()})
	}
	return out, errors.New("more than 100000 events: the reader does not advance")
}

func TestSSESpecEdges(t *testing.T) {
	ev := func(data string) sseEvent { return sseEvent{data, "message", ""} }
	cases := []struct {
		name   string
		body   string
		want   []sseEvent
		ending error // what Next returns after the last event
	}{
		{"lone_cr_line_ends", "data: a\rdata: b\r\rdata: c\r\r", []sseEvent{ev("a\nb"), ev("c")}, io.EOF},
		{"crlf_line_ends", "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n", []sseEvent{ev("a\nb"), ev("c")}, io.EOF},
		{"crlf_then_lf_blank_line", "data: a\r\n\ndata: b\r\n\r\n", []sseEvent{ev("a"), ev("b")}, io.EOF},
		{"cr_then_lf_blank_line", "data: a\r\r\ndata: b\n\r\n", []sseEvent{ev("a"), ev("b")}, io.EOF},
		{"mixed_line_ends", "data: a\ndata: b\r\ndata: c\r\r\ndata: d\n\n", []sseEvent{ev("a\nb\nc"), ev("d")}, io.EOF},
		{"leading_bom_stripped", "\xef\xbb\xbfdata: a\n\n", []sseEvent{ev("a")}, io.EOF},
		{"only_one_bom_stripped", "\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n", []sseEvent{ev("b")}, io.EOF},
		{"bom_later_is_data", "data: \xef\xbb\xbfa\n\n", []sseEvent{ev("\xef\xbb\xbfa")}, io.EOF},
		{"line_without_colon_is_field_with_empty_value", "data\ndata\ndata: x\n\n", []sseEvent{ev("\n\nx")}, io.EOF},
		{"empty_data_dispatches_empty_event", "data:\n\n", []sseEvent{ev("")}, io.EOF},
		{"blank_lines_without_data_dispatch_nothing", "\n\n\r\n\rid: 5\n\nretry: 100\n\ndata: a\n\n", []sseEvent{{"a", "message", "5"}}, io.EOF},
		{"event_only_block_not_dispatched", "event: ping\n\ndata: a\n\n", []sseEvent{ev("a")}, io.EOF},
		{"event_type_applies_to_one_event", "event: update\ndata: x\n\ndata: y\n\n", []sseEvent{{"x", "update", ""}, ev("y")}, io.EOF},
		{"one_leading_space_removed", "data:x\n\ndata:  y\n\ndata: z \n\ndata:\tw\n\n", []sseEvent{ev("x"), ev(" y"), ev("z "), ev("\tw")}, io.EOF},
		{"value_split_at_first_colon", "data: a:b: c\n\n", []sseEvent{ev("a:b: c")}, io.EOF},
		{"colon_in_short_field_values", "id:1:2\nevent:x:y\ndata:a:b\n\n", []sseEvent{{"a:b", "x:y", "1:2"}}, io.EOF},
		{"comments", ": ping\ndata: a\n: in the middle\ndata: b\n\n:\n\n", []sseEvent{ev("a\nb")}, io.EOF},
		{"unknown_fields_ignored", "foo: bar\nData: no\nretry: 10\ndata: a\nDATA: b\n\n", []sseEvent{ev("a")}, io.EOF},
		{"pending_event_at_eof_discarded", "data: a\n\ndata: [DONE]", []sseEvent{ev("a")}, io.ErrUnexpectedEOF},
		{"pending_event_after_one_line_end_discarded", "data: a\n\ndata: b\n", []sseEvent{ev("a")}, io.ErrUnexpectedEOF},
		{"pending_comment_at_eof", "data: a\n\n: ping\n", []sseEvent{ev("a")}, io.ErrUnexpectedEOF},
		{"clean_end_after_extra_blank_lines", "data: a\n\n\n\r\n", []sseEvent{ev("a")}, io.EOF},
		{"empty_input", "", nil, io.EOF},
		{"utf8_passes_through", "data: héllo — €5 𝄞👋\n\n", []sseEvent{ev("héllo — €5 𝄞👋")}, io.EOF},
		{"id_kept", "id: 7\ndata: a\n\n", []sseEvent{{"a", "message", "7"}}, io.EOF},
		// an id alone dispatches nothing but is the last event id from then on, until an empty id resets it
		{"id_from_earlier_block_kept_until_reset", "id: 7\n\ndata: x\n\ndata: y\n\nid\ndata: z\n\ndata: w\n\n",
			[]sseEvent{{"x", "message", "7"}, {"y", "message", "7"}, {"z", "message", ""}, {"w", "message", ""}}, io.EOF},
		{"id_with_nul_ignored", "id: 1\x002\ndata: a\n\nid: \x00\ndata: b\n\n", []sseEvent{ev("a"), ev("b")}, io.EOF},
		{"empty_values_after_colon", "id: 3\ndata: a\n\nid:\nevent:\ndata: b\n\n", []sseEvent{{"a", "message", "3"}, ev("b")}, io.EOF},
		{"unicode_line_separators_are_not_line_ends", "data: a\u2028b\u2029c\u0085d\x0be\x0cf\x1cg\n\n", []sseEvent{ev("a\u2028b\u2029c\u0085d\x0be\x0cf\x1cg")}, io.EOF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := []byte(c.body)
			check := func(how string, r io.Reader) bool {
				got, err := readEvents(r)
				if !reflect.DeepEqual(got, c.want) || err != c.ending {
					t.Errorf("body %q %s: got events %+v ending in %v, want %+v ending in %v", c.body, how, got, err, c.want, c.ending)
					return false
				}
				return true
			}
			for _, size := range []int{1, 2, 3, 5, 8, 65536} {
				if !check(fmt.Sprintf("read %d byte(s) at a time", size), chunked(body, size)) {
					return
				}
			}
			// every way of cutting the body into two or three reads
			for i := 1; i < len(body); i++ {
				if !check(fmt.Sprintf("cut at %d", i), &cutReader{data: body, cuts: []int{i}}) {
					return
				}
				for j := i + 1; j < len(body); j++ {
					if !check(fmt.Sprintf("cut at %d and %d", i, j), &cutReader{data: body, cuts: []int{i, j}}) {
						return
					}
				}
			}
		})
	}

	// Random bodies made of every line end and field form, cut at random points: the events must be
	// those of the spec's rules applied to the whole body at once. The seed is fixed: same verdict
	// every run.
	t.Run("random_bodies_random_cuts", func(t *testing.T) {
		pieces := []string{"data: a", "data:b", "data", "data: [DONE]", ": c", "id: 1", "id", "event: e", "x: y", "é",
			"id:1:2", "data:a:b", "dat:a", "event:x:y",
			"\r", "\n", "\r\n", "\r", "\n", "\r\n", "\n\n", "\r\r", "\r\n\r\n", "\xef\xbb\xbf"}
		rng := rand.New(rand.NewSource(2))
		for n := 0; n < 3000; n++ {
			var b strings.Builder
			for k := rng.Intn(14); k >= 0; k-- {
				b.WriteString(pieces[rng.Intn(len(pieces))])
			}
			body := []byte(b.String())
			want, wantEnd := specEvents(body)
			var cuts []int
			for k := rng.Intn(5); k > 0 && len(body) > 1; k-- {
				cuts = append(cuts, 1+rng.Intn(len(body)-1))
			}
			cuts = sortedUnique(cuts)
			readers := map[string]io.Reader{"read 1 byte at a time": chunked(body, 1), fmt.Sprintf("cut at %v", cuts): &cutReader{data: body, cuts: cuts}}
			for how, r := range readers {
				got, end := readEvents(r)
				if !reflect.DeepEqual(got, want) || end != wantEnd {
					t.Fatalf("body %q %s: got events %+v ending in %v, want %+v ending in %v", body, how, got, end, want, wantEnd)
				}
			}
		}
	})
}

// specEvents applies the event-stream rules to a whole body, line by line, the plain way.
func specEvents(body []byte) ([]sseEvent, error) {
	s := strings.TrimPrefix(string(body), "\xef\xbb\xbf")
	var lines []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\r' || s[i] == '\n' {
			lines = append(lines, s[start:i])
			if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	var events []sseEvent
	var data []string
	typ, lastID, pending := "", "", start < len(s)
	for _, line := range lines {
		if line == "" {
			if data != nil {
				t := typ
				if t == "" {
					t = "message"
				}
				events = append(events, sseEvent{strings.Join(data, "\n"), t, lastID})
			}
			data, typ, pending = nil, "", false
			continue
		}
		pending = true
		name, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch {
		case name == "data":
			data = append(data, value)
		case name == "event":
			typ = value
		case name == "id" && !strings.Contains(value, "\x00"):
			lastID = value
		}
	}
	if pending || start < len(s) {
		return events, io.ErrUnexpectedEOF
	}
	return events, io.EOF
}

func sortedUnique(xs []int) []int {
	sort.Ints(xs)
	out := []int{}
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func TestSSELargeEvent(t *testing.T) {
	unit := strings.Repeat("0123456789abcdef", 15) + "é€👋 "
	big := strings.Repeat(unit, 1<<20/len(unit)+1)[:1<<20]
	body := []byte(": big\ndata: " + big + "\n\ndata: [DONE]\n\n")
	for _, size := range []int{4096, 65536, 1} {
		events, end := readEvents(chunked(body, size))
		if len(events) != 2 || end != io.EOF {
			t.Errorf("a 1 MiB event read %d byte(s) at a time: got %d events ending in %v, want 2 (the event and [DONE]) and io.EOF", size, len(events), end)
			continue
		}
		if events[0].Data != big {
			t.Errorf("a 1 MiB event read %d byte(s) at a time: got %d bytes, want %d, the same", size, len(events[0].Data), len(big))
		}
		if events[1].Data != "[DONE]" {
			t.Errorf("the event after the big one: got %.40q, want [DONE]", events[1].Data)
		}
	}
	// many small events, one byte per read: the reader must not rescan what it has consumed
	small := strings.Repeat("data: {\"choices\":[]}\r\n\r\n", 20000)
	events, end := readEvents(chunked([]byte(small), 1))
	if len(events) != 20000 || end != io.EOF {
		t.Errorf("20000 small events read one byte at a time: got %d events ending in %v, want 20000 and io.EOF", len(events), end)
	}
}

func TestRetryAfterCapped(t *testing.T) {
	srv := newScripted(t, httpError(429, "", "", "3600"), textReply("an hour later"))
	sleeps := &sleepRecorder{}
	p := provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{MaxAttempts: 3, MaxRetryAfter: time.Minute, Sleep: sleeps.Sleep})
	_, err := p.ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	var apiErr *provider.APIError
	if !errors.As(err, &apiErr) || apiErr.RetryAfter != time.Hour {
		t.Errorf("a 429 with Retry-After: 3600: got error %v, want the *APIError with RetryAfter 1h", err)
	}
	if w := sleeps.Waits(); len(w) != 0 {
		t.Errorf("sleeps: got %s, want none (an hour is more than MaxRetryAfter, 1m)", durations(w...))
	}
	if n := srv.requestCount(); n != 1 {
		t.Errorf("requests: got %d, want 1", n)
	}

	for _, c := range []struct {
		policy      provider.RetryPolicy
		header      string
		wantRetried bool
		what        string
	}{
		{provider.RetryPolicy{MaxRetryAfter: 5 * time.Second}, "5", true, "Retry-After: 5 with MaxRetryAfter 5s (at the cap is still honored)"},
		{provider.RetryPolicy{}, "60", true, "Retry-After: 60 with the default MaxRetryAfter (60s)"},
		{provider.RetryPolicy{}, "61", false, "Retry-After: 61 with the default MaxRetryAfter (60s)"},
		{provider.RetryPolicy{}, "1e12", false, "Retry-After: 1e12 (longer than a time.Duration holds)"},
	} {
		srv := newScripted(t, httpError(429, "", "", c.header), textReply("ok"))
		sleeps := &sleepRecorder{}
		c.policy.Sleep = sleeps.Sleep
		ch, err := provider.WithRetry(openAI(srv.baseURL()), c.policy).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
		if !c.wantRetried {
			if err == nil || srv.requestCount() != 1 || len(sleeps.Waits()) != 0 {
				t.Errorf("%s: got error %v after %d request(s) and sleeps %s, want the 429 at once, no sleep", c.what, err, srv.requestCount(), durations(sleeps.Waits()...))
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: got error %v, want a retry and its stream", c.what, err)
			continue
		}
		msg, _, _ := types.Collect(ch)
		wantWait := []time.Duration{apiRetryAfter(c.header)}
		if w := sleeps.Waits(); !reflect.DeepEqual(w, wantWait) || msg.Content != "ok" {
			t.Errorf("%s: got sleeps %s and text %q, want %s and \"ok\"", c.what, durations(w...), msg.Content, durations(wantWait...))
		}
	}
}

func apiRetryAfter(header string) time.Duration {
	var seconds int
	fmt.Sscan(header, &seconds)
	return time.Duration(seconds) * time.Second
}

func mustUnmarshal(t *testing.T, text string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(text), v); err != nil {
		t.Fatalf("the test's own JSON does not parse: %v", err)
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
