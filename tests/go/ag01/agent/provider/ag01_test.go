// The ag01 catalog, Go track: a streaming client for OpenAI-compatible chat completions, and its
// retry wrapper. Tests run in catalog order. The recorded streams come from the chapter's fixtures
// (COURSE_FIXTURES), the conversation test talks to the course fake model (COURSE_FAKE_MODEL_URL),
// faults come from a scripted server on 127.0.0.1, and retry waits go to a recorder, never to a
// real sleep.
package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"runtime/debug"
	"sort"
	"strconv"
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

}

func TestDecoderFollowsChoiceZero(t *testing.T) {
	// The 'Hello' answer beside a second one (choice index 1: text, a tool call, its own finish
	// reason). We ask for one answer, so the decoder follows choice 0 and the four deltas stay.
	hand := loadStreams(t).HandExample
	want := []types.Delta{types.TextDelta{Text: "Hel"}, types.TextDelta{Text: "lo"}, types.UsageDelta{In: 5, Out: 2}, types.DoneDelta{FinishReason: "stop"}}
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
}

func TestDecoderBadEvents(t *testing.T) {
	// data that is not a chunk ends the stream with one ErrorDelta, never silently
	for _, data := range []string{"{not json", "", "[1, 2]", `"text"`, "null", `{"choices": 5}`, `{"choices": [{"index": 0, "delta": "hi"}]}`} {
		got, finished := provider.NewDecoder().Event([]byte(data))
		if len(got) != 1 || !finished {
			t.Errorf("Decoder.Event(%q): got %s, finished=%v; want one ErrorDelta and finished=true", data, show(neutralAll(got)), finished)
			continue
		}
		var se *provider.StreamError
		if e, ok := got[0].(types.ErrorDelta); !ok || e.Err == nil || errors.As(e.Err, &se) {
			t.Errorf("Decoder.Event(%q): got %#v, want an ErrorDelta with your own error (not a *StreamError: the server reported nothing)", data, got[0])
		}
	}

	decoder := provider.NewDecoder()
	opened, _ := decoder.Event([]byte(apiChunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{"}}]}`, "null", "null")))
	if len(opened) != 2 {
		t.Errorf("a chunk opening a call with a fragment: got %s, want a start and an args delta", show(neutralAll(opened)))
	}
	got, finished := decoder.Event([]byte(`{"error": {"message": "The server had an error", "type": "server_error", "param": null, "code": "overloaded"}}`))
	if len(got) != 1 || !finished {
		t.Fatalf("an error event (while a call is open): got %s, finished=%v; want only one ErrorDelta and finished=true", show(neutralAll(got)), finished)
	}
	var se *provider.StreamError
	if e, ok := got[0].(types.ErrorDelta); !ok || !errors.As(e.Err, &se) {
		t.Fatalf("the error event: got %#v, want an ErrorDelta holding a *provider.StreamError", got[0])
	}
	if want := (provider.StreamError{Type: "server_error", Code: "overloaded", Message: "The server had an error"}); *se != want {
		t.Errorf("the error event's StreamError: got %+v, want %+v", *se, want)
	}
	if msg := se.Error(); msg != "stream error server_error: The server had an error" {
		t.Errorf("StreamError.Error(): got %q, want %q", msg, "stream error server_error: The server had an error")
	}

	for _, c := range []struct{ data, message, code string }{
		{`{"error": "upstream overloaded"}`, "upstream overloaded", ""},
		{`{"error": 503}`, "503", ""},
		{`{"error": {"message": "slow down", "code": 429}}`, "slow down", "429"},
	} {
		got, finished := provider.NewDecoder().Event([]byte(c.data))
		var se *provider.StreamError
		if len(got) != 1 || !finished || !errors.As(got[0].(types.ErrorDelta).Err, &se) || se.Message != c.message || se.Code != c.code {
			t.Errorf("Decoder.Event(%s): got %s, finished=%v; want one ErrorDelta with a *StreamError{Message: %q, Code: %q} and finished=true",
				c.data, show(neutralAll(got)), finished, c.message, c.code)
		}
	}
	if msg := (&provider.StreamError{Message: "gone"}).Error(); msg != "stream error unknown: gone" {
		t.Errorf("StreamError{Message: \"gone\"}.Error() (no type): got %q, want %q", msg, "stream error unknown: gone")
	}
}

func TestDecoderToolCalls(t *testing.T) {
	const A, B = "call_a", "call_b"
	events := []string{
		apiChunk(`{"role":"assistant","content":null}`, "null", "null"),
		apiChunk(callEntry(10, A, "get_weather", ""), "null", "null"),
		apiChunk(callEntry(2, B, "get_time", `{"tz"`), "null", "null"),
		// this provider repeats id and name with every fragment: they open nothing new
		apiChunk(callEntry(10, A, "get_weather", `{"city":`), "null", "null"),
		apiChunk(callEntry(2, B, "get_time", `:"UTC"}`), "null", "null"),
		apiChunk(callEntry(10, A, "get_weather", `"Paris"}`), "null", "null"),
		apiChunk(`{}`, `"tool_calls"`, "null"),
		usageChunk(`{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}`),
		"[DONE]",
	}
	want := []any{
		map[string]any{"type": "tool_start", "index": 10, "id": A, "name": "get_weather"},
		map[string]any{"type": "tool_start", "index": 2, "id": B, "name": "get_time"},
		map[string]any{"type": "tool_args", "index": 2, "fragment": `{"tz"`},
		map[string]any{"type": "tool_args", "index": 10, "fragment": `{"city":`},
		map[string]any{"type": "tool_args", "index": 2, "fragment": `:"UTC"}`},
		map[string]any{"type": "tool_args", "index": 10, "fragment": `"Paris"}`},
		map[string]any{"type": "tool_end", "index": 2, "id": B, "name": "get_time", "arguments": `{"tz":"UTC"}`},
		map[string]any{"type": "tool_end", "index": 10, "id": A, "name": "get_weather", "arguments": `{"city":"Paris"}`},
		map[string]any{"type": "usage", "input": 9, "output": 4},
		map[string]any{"type": "done", "finish_reason": "tool_calls"},
	}
	// a fresh decoder each time, several times over: a decoder that walks its map of calls in the map's
	// order (which Go varies from one walk to the next) would get it right now and then
	for round := 0; round < 8; round++ {
		if !checkDecoded(t, "two calls at indexes 10 and 2, id and name repeated", events, want) {
			break
		}
	}

	// A call cut short by the token limit still ends when finish_reason comes, before the usage chunk;
	// a call whose arguments never came (null, or "") ends with "{}".
	events = []string{
		apiChunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"list_files","arguments":null}}]}`, "null", "null"),
		apiChunk(callEntry(1, "call_y", "read_file", `{"path": "/et`), "null", "null"),
		apiChunk(`{}`, `"length"`, "null"),
		usageChunk(`{"prompt_tokens":3,"completion_tokens":16,"total_tokens":19}`),
		"[DONE]",
	}
	want = []any{
		map[string]any{"type": "tool_start", "index": 0, "id": "call_x", "name": "list_files"},
		map[string]any{"type": "tool_start", "index": 1, "id": "call_y", "name": "read_file"},
		map[string]any{"type": "tool_args", "index": 1, "fragment": `{"path": "/et`},
		map[string]any{"type": "tool_end", "index": 0, "id": "call_x", "name": "list_files", "arguments": "{}"},
		map[string]any{"type": "tool_end", "index": 1, "id": "call_y", "name": "read_file", "arguments": `{"path": "/et`},
		map[string]any{"type": "usage", "input": 3, "output": 16},
		map[string]any{"type": "done", "finish_reason": "length"},
	}
	checkDecoded(t, "calls open when finish_reason 'length' comes", events, want)

	// a server that sends no finish_reason at all: [DONE] closes the call that is still open
	events = []string{apiChunk(callEntry(0, "call_z", "now", "{}"), "null", "null"), "[DONE]"}
	want = []any{
		map[string]any{"type": "tool_start", "index": 0, "id": "call_z", "name": "now"},
		map[string]any{"type": "tool_args", "index": 0, "fragment": "{}"},
		map[string]any{"type": "tool_end", "index": 0, "id": "call_z", "name": "now", "arguments": "{}"},
		map[string]any{"type": "done", "finish_reason": ""},
	}
	checkDecoded(t, "a call still open at [DONE], no finish_reason", events, want)
}

func TestDecoderNullsAndUsage(t *testing.T) {
	events := []string{
		apiChunk(`{"role":"assistant","content":"","refusal":null}`, "null", "null"),
		apiChunk(`{"content":null,"tool_calls":null,"function_call":null}`, "null", "null"),
		apiChunk(`{"content":"Bonjour"}`, "null", "null"),
		apiChunk(`{}`, `"stop"`, "null"),
		// usage without total_tokens, with the details objects real servers add
		usageChunk(`{"prompt_tokens":12,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":0}}`),
		"[DONE]",
	}
	want := []any{
		map[string]any{"type": "text", "text": "Bonjour"},
		map[string]any{"type": "usage", "input": 12, "output": 1},
		map[string]any{"type": "done", "finish_reason": "stop"},
	}
	checkDecoded(t, "chunks with null fields, a usage chunk without total_tokens", events, want)

	// a chunk that carries both the last text and the usage (some servers merge them) gives both, text first
	merged := apiChunk(`{"content":"!"}`, `"stop"`, `{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5}`)
	want = []any{
		map[string]any{"type": "text", "text": "!"},
		map[string]any{"type": "usage", "input": 2, "output": 3},
		map[string]any{"type": "done", "finish_reason": "stop"},
	}
	checkDecoded(t, "text, finish and usage in one chunk", []string{merged, "[DONE]"}, want)
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

	// One provider for every stream, one after another, then all at once: what a stream leaves behind
	// (a call still open when its body was cut, a finish reason) belongs to that stream alone.
	t.Run("one-provider", func(t *testing.T) {
		cut := recordedStream{Name: "call_cut_short", Body: "data: " + apiChunk(callEntry(0, "call_cut", "get_weather", `{"city":`), "null", "null") + "\n\n"}
		cut.Expected.Deltas = jsonValue([]any{
			map[string]any{"type": "tool_start", "index": 0, "id": "call_cut", "name": "get_weather"},
			map[string]any{"type": "tool_args", "index": 0, "fragment": `{"city":`},
			map[string]any{"type": "error", "error": "stream_cut"},
		}).([]any)
		all := append([]recordedStream{cut}, loadStreams(t).Streams...)
		bodies := map[string]string{}
		for _, stream := range all {
			bodies[stream.Name] = stream.Body
		}
		// the stream a request asks for is named by its message, so that requests may come in any order
		byName := func(w http.ResponseWriter, r *http.Request, body map[string]any, s *scriptedServer) {
			msgs, _ := body["messages"].([]any)
			first, _ := msgs[0].(map[string]any)
			name, _ := first["content"].(string)
			rawReply(200, "text/event-stream; charset=utf-8", bodies[name], 7)(w, r, body, s)
		}
		srv := newScripted(t)
		p := openAI(srv.baseURL())
		check := func(how string, stream recordedStream, ch <-chan types.Delta) {
			if got := neutralAll(drain(t, ch, 10*time.Second)); !equalJSON(got, stream.Expected.Deltas) {
				t.Errorf("%s, through one provider %s: %s\n  got:  %s\n  want: %s", stream.Name, how, mismatch(got, stream.Expected.Deltas), show(got), show(stream.Expected.Deltas))
			}
		}
		for _, stream := range all {
			srv.script(byName)
			ch, err := p.ChatStream(testContext(t), []types.Message{user(stream.Name)}, nil)
			if err != nil {
				t.Fatalf("%s: ChatStream: %v", stream.Name, err)
			}
			check("after the others", stream, ch)
		}
		channels := make([]<-chan types.Delta, len(all))
		for i, stream := range all {
			srv.script(byName)
			ch, err := p.ChatStream(testContext(t), []types.Message{user(stream.Name)}, nil)
			if err != nil {
				t.Fatalf("%s: ChatStream: %v", stream.Name, err)
			}
			channels[i] = ch
		}
		for i, stream := range all {
			check("with the others at the same time", stream, channels[i])
		}
	})
}

// requestFixture is a conversation with every kind of message, two tools and two options; the body
// they must give is requestFixtureJSON.
func requestFixture() ([]types.Message, []types.ToolDef, []types.CallOption) {
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
	return msgs, tools, []types.CallOption{types.WithTemperature(0.2), types.WithMaxTokens(64)}
}

const requestFixtureJSON = `{
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
		{"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city", "parameters": ` + weatherSchema + `}},
		{"type": "function", "function": {"name": "get_time", "description": "Current time in a time zone", "parameters": {"type":"object","properties":{"tz":{"type":"string"}}}}}
	],
	"temperature": 0.2,
	"max_tokens": 64
}`

// checkRequestBody compares a request body as data (JSON written differently is the same body), key by key.
func checkRequestBody(t *testing.T, got, want map[string]any, where string) {
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
		t.Errorf("%s: got keys %s, want the keys of %s", where, show(keys(got)), show(want))
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

func TestRequestBody(t *testing.T) {
	msgs, tools, opts := requestFixture()
	var want map[string]any
	mustUnmarshal(t, requestFixtureJSON, &want)
	raw, err := provider.RequestBody("test-model", msgs, tools, types.NewCallOptions(opts...))
	if err != nil {
		t.Fatalf("RequestBody: %v", err)
	}
	var built map[string]any
	mustUnmarshal(t, string(raw), &built)
	checkRequestBody(t, built, want, "RequestBody()")

	raw, err = provider.RequestBody("m", []types.Message{user("hi")}, nil, types.CallOptions{})
	var minimal, wantMinimal any
	mustUnmarshal(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`, &wantMinimal)
	if err != nil || json.Unmarshal(raw, &minimal) != nil || !reflect.DeepEqual(minimal, wantMinimal) {
		t.Errorf("RequestBody with no tools and no options: got %s (error %v), want %s", raw, err, show(wantMinimal))
	}

	raw, err = provider.RequestBody("m", []types.Message{user("hi"), {Role: types.RoleAssistant}, user("")}, nil, types.CallOptions{})
	var empty, wantEmpty map[string]any
	mustUnmarshal(t, `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":""},{"role":"user","content":""}]}`, &wantEmpty)
	if err != nil || json.Unmarshal(raw, &empty) != nil || !reflect.DeepEqual(empty["messages"], wantEmpty["messages"]) {
		t.Errorf("messages without tool calls keep their text, even empty: got %s (error %v), want the messages %s (null is only for an assistant's empty text beside tool calls)",
			raw, err, show(wantEmpty["messages"]))
	}
	// an option is sent whenever it is set: a temperature of 0 included
	raw, err = provider.RequestBody("m", []types.Message{user("hi")}, nil, types.NewCallOptions(types.WithTemperature(0)))
	var cold map[string]any
	if err != nil || json.Unmarshal(raw, &cold) != nil || cold["temperature"] != 0.0 || cold["max_tokens"] != nil {
		t.Errorf("a temperature of 0 is set, so it is sent (only an unset option is left out): got %s (error %v)", raw, err)
	}

	// the body is its own bytes: changing the caller's schema afterwards does not change it
	params := json.RawMessage(weatherSchema)
	raw, _ = provider.RequestBody("m", []types.Message{user("hi")}, []types.ToolDef{{Name: "get_weather", Parameters: params}}, types.CallOptions{})
	before := string(raw)
	copy(params, `{"type":"array"}`)
	if string(raw) != before {
		t.Errorf("a body built, then the caller's ToolDef.Parameters changed in place: the body changed with it (it must hold its own copy)")
	}

	// Parameters that are not JSON cannot be sent: RequestBody says so, and ChatStream sends nothing
	broken := []types.ToolDef{{Name: "get_weather", Parameters: json.RawMessage(`{"type": "object",`)}}
	if _, err := provider.RequestBody("m", []types.Message{user("hi")}, broken, types.CallOptions{}); err == nil {
		t.Errorf("RequestBody with a ToolDef whose Parameters are not JSON: got no error, want the marshalling error")
	}
	srv := newScripted(t, textReply("a request with a broken schema must never be sent"))
	if ch, err := openAI(srv.baseURL()).ChatStream(testContext(t), []types.Message{user("hi")}, broken); err == nil || ch != nil {
		t.Errorf("ChatStream with a ToolDef whose Parameters are not JSON: got channel %v, error %v; want a nil channel and the error", ch, err)
	}
	if n := srv.requestCount(); n != 0 {
		t.Errorf("ChatStream with a ToolDef whose Parameters are not JSON: %d request(s) sent, want none", n)
	}
}

func TestRequestWire(t *testing.T) {
	fake := newFakeModel(t)
	fake.script(fakeText("ok"), fakeText("ok"))
	msgs, tools, opts := requestFixture()
	p := openAI(fake.baseURL(), func(c *provider.Config) { c.Headers = map[string]string{"X-Course-Trace": "t-1"} })
	ch, err := p.ChatStream(testContext(t), msgs, tools, opts...)
	if err != nil {
		t.Fatalf("ChatStream: %v", err)
	}
	drain(t, ch, 10*time.Second)
	req := fake.lastRequest()
	if req.Method != "POST" || req.Path != chatPath {
		t.Errorf("request line: got %s %s, want POST %s (BaseURL + /chat/completions)", req.Method, req.Path, chatPath)
	}
	for name, value := range map[string]string{"authorization": "Bearer sk-test", "accept": "text/event-stream", "x-course-trace": "t-1"} {
		if got := req.Headers[name]; got != value {
			t.Errorf("header %s: got %q, want %q", name, got, value)
		}
	}
	if ct := req.Headers["content-type"]; strings.TrimSpace(strings.Split(ct, ";")[0]) != "application/json" {
		t.Errorf("header Content-Type: got %q, want application/json", ct)
	}
	var want map[string]any
	mustUnmarshal(t, requestFixtureJSON, &want)
	got, _ := req.Body.(map[string]any)
	checkRequestBody(t, got, want, "the body on the wire")

	ch, err = openAI(fake.baseURL(), func(c *provider.Config) { c.APIKey, c.Client = "", nil }).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	if err != nil {
		t.Fatalf("ChatStream without an API key and with no Client (http.DefaultClient): %v", err)
	}
	drain(t, ch, 10*time.Second)
	if got, ok := fake.lastRequest().Headers["authorization"]; ok {
		t.Errorf("with no APIKey: got an Authorization header %q, want none", got)
	}

	fake.script(fakeText("ok"))
	ch, err = openAI(fake.baseURL()+"/").ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	if err == nil {
		drain(t, ch, 10*time.Second)
	}
	if path := fake.lastRequest().Path; err != nil || path != chatPath {
		t.Errorf("a BaseURL ending in '/': got path %q (error %v), want %q", path, err, chatPath)
	}

	fake.script(fakeText("ok"))
	own := map[string]string{"Authorization": "Basic Z2F0ZXdheQ==", "Accept": "text/event-stream; q=1"}
	ch, err = openAI(fake.baseURL(), func(c *provider.Config) { c.Headers = own }).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	if err == nil {
		drain(t, ch, 10*time.Second)
	}
	last := fake.lastRequest().Headers
	if err != nil || last["authorization"] != own["Authorization"] || last["accept"] != own["Accept"] {
		t.Errorf("Config.Headers setting Authorization and Accept: got %q and %q (error %v), want %q and %q (the caller's headers win)",
			last["authorization"], last["accept"], err, own["Authorization"], own["Accept"])
	}

	// Each header goes out once, with its value: ours, the caller's, and ours replaced by the caller's
	// under any spelling of the name (header names ignore case). The scripted server sees every value
	// of every header, where the fake model keeps one per name.
	srv := newScripted(t)
	ours := map[string]string{"Authorization": "Bearer sk-test", "Accept": "text/event-stream", "Content-Type": "application/json"}
	for _, c := range []struct {
		what    string
		headers map[string]string
		want    map[string]string // the headers that must each come once, with this value, besides ours
	}{
		{"Config.Headers adding X-Course-Trace", map[string]string{"X-Course-Trace": "t-1"}, map[string]string{"X-Course-Trace": "t-1"}},
		{"Config.Headers replacing Authorization and Accept", map[string]string{"Authorization": "Basic Z2F0ZXdheQ==", "Accept": "text/event-stream; q=1"},
			map[string]string{"Authorization": "Basic Z2F0ZXdheQ==", "Accept": "text/event-stream; q=1"}},
		{"Config.Headers replacing them in lower case, and adding one of its own", map[string]string{"authorization": "Basic Z2F0ZXdheQ==", "accept": "text/event-stream; q=1", "x-course-trace": "t-2"},
			map[string]string{"Authorization": "Basic Z2F0ZXdheQ==", "Accept": "text/event-stream; q=1", "X-Course-Trace": "t-2"}},
	} {
		srv.script(textReply("ok"))
		ch, err := openAI(srv.baseURL(), func(cfg *provider.Config) { cfg.Headers = c.headers }).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
		if err != nil {
			t.Errorf("%s: ChatStream: %v", c.what, err)
			continue
		}
		drain(t, ch, 10*time.Second)
		sent := srv.lastRequest().Header
		for name, value := range ours {
			if _, replaced := c.want[name]; !replaced {
				c.want[name] = value
			}
		}
		for name, value := range c.want {
			if got := sent[name]; len(got) != 1 || got[0] != value {
				t.Errorf("%s: header %s went out as %q, want once, as %q (set each header, so that the caller's replaces ours)", c.what, name, got, value)
			}
		}
	}

	before := len(fake.requests())
	for _, bad := range []string{"127.0.0.1:8080/v1", "ftp://127.0.0.1/v1", "http:///v1", "http://[::1/v1"} {
		if ch, err := openAI(bad).ChatStream(testContext(t), []types.Message{user("hi")}, nil); err == nil || ch != nil {
			t.Errorf("BaseURL %q: got channel %v, error %v; want a nil channel and an error (not an http(s) URL with a host)", bad, ch, err)
		}
	}
	if n := len(fake.requests()) - before; n != 0 {
		t.Errorf("bad BaseURLs: %d request(s) reached the server, want none", n)
	}
}

func TestAPIErrorRaised(t *testing.T) {
	fake := newFakeModel(t)
	fake.script(fakeError(400, "invalid_request_error", "bad model", "model_not_found", ""))
	ch, err := openAI(fake.baseURL()).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	var apiErr *provider.APIError
	if ch != nil || !errors.As(err, &apiErr) {
		t.Fatalf("a 400: got channel %v and error %v, want a nil channel and an *APIError", ch, err)
	}
	want := provider.APIError{Status: 400, Type: "invalid_request_error", Code: "model_not_found", Message: "bad model"}
	if *apiErr != want {
		t.Errorf("APIError: got %+v, want %+v", *apiErr, want)
	}
	if msg := apiErr.Error(); msg != "HTTP 400 invalid_request_error: bad model" {
		t.Errorf("APIError.Error(): got %q, want %q (status, type, message)", msg, "HTTP 400 invalid_request_error: bad model")
	}

	page := "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>nginx</body>\n</html>"
	long := strings.Repeat("upstream timed out. ", 40) // 800 bytes of text
	for _, c := range []struct {
		what, body, message string
		status              int
	}{
		{"a 502 with a proxy's HTML page (the body's text, trimmed, is the message)", "\n" + page + "\n\n", page, 502},
		{"a 504 with 800 bytes of text (the message keeps the first 500)", long, long[:500], 504},
		{"a 503 with an empty body (the status text is the message)", "", "Service Unavailable", 503},
	} {
		fake.script(fakeRaw(c.status, "text/html", c.body))
		_, err := openAI(fake.baseURL()).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
		want := provider.APIError{Status: c.status, Message: c.message}
		if !errors.As(err, &apiErr) || *apiErr != want {
			t.Errorf("%s: got %#v, want an *APIError %+v", c.what, err, want)
		}
	}
	if msg := (&provider.APIError{Status: 502, Message: page}).Error(); msg != "HTTP 502: "+page {
		t.Errorf("APIError.Error() without a type: got %q, want \"HTTP 502: \" and the page", msg)
	}
	if msg := (&provider.APIError{Status: 503}).Error(); msg != "HTTP 503" {
		t.Errorf("APIError{Status: 503}.Error(): got %q, want \"HTTP 503\"", msg)
	}

	// Retry-After is delta-seconds, a finite number >= 0; anything else (an HTTP date included) is no hint
	for _, header := range []string{"-1", "inf", "nan", "1e400", "Wed, 21 Oct 2015 07:28:00 GMT"} {
		fake.script(fakeError(503, "", "", "", header))
		_, err := openAI(fake.baseURL()).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
		if !errors.As(err, &apiErr) {
			t.Errorf("a 503 with Retry-After: %s: got error %v, want an *APIError", header, err)
		} else if apiErr.RetryAfter != 0 {
			t.Errorf("APIError.RetryAfter for 'Retry-After: %s': got %v, want 0 (no usable hint)", header, apiErr.RetryAfter)
		}
	}
}

func TestStatusBoundaries(t *testing.T) {
	for _, c := range []struct {
		status int
		stream bool
	}{{200, true}, {201, true}, {299, true}, {300, false}, {302, false}, {304, false}, {404, false}, {418, false}, {599, false}} {
		t.Run(strconv.Itoa(c.status), func(t *testing.T) {
			answer := func(w http.ResponseWriter, r *http.Request, body map[string]any, s *scriptedServer) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(c.status)
				for _, e := range []string{chunkEvent(body, map[string]any{"content": "hi"}, nil), chunkEvent(body, map[string]any{}, "stop"), "[DONE]"} {
					fmt.Fprintf(w, "data: %s\n\n", e)
				}
			}
			srv := newScripted(t, answer)
			ch, err := openAI(srv.baseURL()).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
			var apiErr *provider.APIError
			switch {
			case c.stream && err != nil:
				t.Errorf("HTTP %d: got error %v, want a stream (every 2xx status is a success)", c.status, err)
			case c.stream:
				got := neutralAll(drain(t, ch, 10*time.Second))
				want := []any{map[string]any{"type": "text", "text": "hi"}, map[string]any{"type": "done", "finish_reason": "stop"}}
				if !equalJSON(got, want) {
					t.Errorf("HTTP %d: got deltas %s, want %s", c.status, show(got), show(want))
				}
			case err == nil:
				t.Errorf("HTTP %d: got a stream of %d deltas, want an *APIError with status %d (only 2xx is a success)", c.status, len(drain(t, ch, 10*time.Second)), c.status)
			case !errors.As(err, &apiErr) || apiErr.Status != c.status || ch != nil:
				t.Errorf("HTTP %d: got channel %v and error %#v, want a nil channel and an *APIError with status %d", c.status, ch, err, c.status)
			}
		})
	}
}

func TestAPIErrorNotRetried(t *testing.T) {
	for _, c := range []struct {
		status     int
		retryAfter string
	}{{400, ""}, {400, "1"}, {501, ""}} {
		srv := newScripted(t, httpError(c.status, "", "", c.retryAfter), textReply("this answer must never be asked for"))
		sleeps := &sleepRecorder{}
		p := provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{MaxAttempts: 5, Initial: 100 * time.Millisecond, Sleep: sleeps.Sleep})
		ch, err := p.ChatStream(testContext(t), []types.Message{user("hi")}, nil)
		label := fmt.Sprintf("HTTP %d", c.status)
		if c.retryAfter != "" {
			label += " with Retry-After: " + c.retryAfter
		}
		var apiErr *provider.APIError
		if ch != nil || !errors.As(err, &apiErr) || apiErr.Status != c.status {
			t.Errorf("%s: got channel %v and error %v, want a nil channel and the *APIError with status %d", label, ch, err, c.status)
		}
		if n := srv.requestCount(); n != 1 {
			t.Errorf("%s: got %d requests, want 1 (it fails the same way every time)", label, n)
		}
		if w := sleeps.Waits(); len(w) != 0 {
			t.Errorf("%s: got sleeps %s, want none", label, durations(w...))
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
	// the cap cuts in between two doublings, and any multiplier works the same way
	capped := provider.RetryPolicy{Initial: 100 * time.Millisecond, Max: 300 * time.Millisecond}
	got = []time.Duration{capped.Delay(1, nil), capped.Delay(2, nil), capped.Delay(3, nil), capped.Delay(4, nil)}
	if want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}; !reflect.DeepEqual(got, want) {
		t.Errorf("RetryPolicy{Initial: 100ms, Max: 300ms}.Delay(1..4): got %s, want %s", durations(got...), durations(want...))
	}
	triple := provider.RetryPolicy{Initial: time.Second, Max: 100 * time.Second, Multiplier: 3}
	got = []time.Duration{triple.Delay(1, nil), triple.Delay(2, nil), triple.Delay(3, nil), triple.Delay(5, nil)}
	if want := []time.Duration{time.Second, 3 * time.Second, 9 * time.Second, 81 * time.Second}; !reflect.DeepEqual(got, want) {
		t.Errorf("RetryPolicy{Initial: 1s, Max: 100s, Multiplier: 3}.Delay(1, 2, 3, 5): got %s, want %s", durations(got...), durations(want...))
	}
	// a long run of failures stays at the cap: the doubling must never overflow or wrap around
	for _, n := range []int{30, 36, 40, 64, 100, 1100, 5000} {
		if got := zero.Delay(n, nil); got != 30*time.Second {
			t.Errorf("RetryPolicy{}.Delay(%d, nil): got %s, want 30s (the cap, however many failures)", n, got)
		}
	}

	// without a Sleep of its own the policy waits with a timer (here a nanosecond), then retries
	inner := &memProvider{streams: []memStream{{err: &provider.APIError{Status: 503}}, {deltas: []types.Delta{types.TextDelta{Text: "ok"}, types.DoneDelta{FinishReason: "stop"}}}}}
	ch, err := provider.WithRetry(inner, provider.RetryPolicy{Initial: time.Nanosecond}).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	if err != nil || inner.callCount() != 2 {
		t.Errorf("RetryPolicy{Initial: 1ns} with no Sleep, after a 503: got error %v after %d call(s), want the second attempt's stream", err, inner.callCount())
	} else if msg, _, err := types.Collect(ch); msg.Content != "ok" || err != nil {
		t.Errorf("RetryPolicy{Initial: 1ns} with no Sleep, after a 503: got %q (error %v), want \"ok\"", msg.Content, err)
	}

	srv := newScripted(t, httpError(503, "", "", ""), httpError(503, "", "", ""), textReply("Hel", "lo"))
	sleeps := &sleepRecorder{}
	p := provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{MaxAttempts: 3, Initial: 100 * time.Millisecond, Sleep: sleeps.Sleep})
	tools := []types.ToolDef{{Name: "get_weather", Description: "Current weather in a city", Parameters: json.RawMessage(weatherSchema)}}
	ch, err = p.ChatStream(testContext(t), []types.Message{user("hi")}, tools, types.WithTemperature(0.2), types.WithMaxTokens(64))
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

	// between the two caps: 45 s is more than the backoff's Max (30s) but within MaxRetryAfter (60s)
	srv = newScripted(t, httpError(503, "", "", "45"), textReply("ok"))
	sleeps = &sleepRecorder{}
	ch, err = provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{Sleep: sleeps.Sleep}).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	if err == nil {
		msg, _, err = types.Collect(ch)
	}
	if w := sleeps.Waits(); !reflect.DeepEqual(w, []time.Duration{45 * time.Second}) || err != nil || msg.Content != "ok" {
		t.Errorf("RetryPolicy{} after a 503 with Retry-After: 45: got sleeps %s and text %q (error %v), want [45s] and \"ok\" (the header wins over the backoff's Max, up to MaxRetryAfter)",
			durations(w...), msg.Content, err)
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

	// raised failures and failures inside the stream count against the same limit
	srv = newScripted(t, httpError(503, "", "", ""), resetAfterRole(), resetAfterRole(), textReply("too late"))
	sleeps = &sleepRecorder{}
	ch, err = provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{MaxAttempts: 3, Sleep: sleeps.Sleep}).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	deltas = nil
	if err == nil {
		deltas = drain(t, ch, 10*time.Second)
	}
	if n := srv.requestCount(); n != 3 || err != nil || len(deltas) != 1 || !isError(deltas[0]) {
		t.Errorf("a 503, then two resets before content: got %d requests, error %v and deltas %s; want 3 requests (every failure counts) and one ErrorDelta",
			n, err, show(neutralAll(deltas)))
	}

	srv = newScripted(t, httpError(503, "", "", ""), textReply("too late"))
	sleeps = &sleepRecorder{}
	_, err = provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{MaxAttempts: 1, Sleep: sleeps.Sleep}).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	if !errors.As(err, &apiErr) || srv.requestCount() != 1 || len(sleeps.Waits()) != 0 {
		t.Errorf("MaxAttempts 1: got error %v after %d request(s) and sleeps %s, want the 503 after 1 request and no sleep", err, srv.requestCount(), durations(sleeps.Waits()...))
	}

	// every call has attempts of its own: the same wrapper, asked again after it gave up, tries three times more
	srv = newScripted(t, httpError(503, "", "", ""), httpError(503, "", "", ""), httpError(503, "", "", ""), httpError(503, "", "", ""), httpError(503, "", "", ""), textReply("third time lucky"))
	sleeps = &sleepRecorder{}
	p = provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{MaxAttempts: 3, Sleep: sleeps.Sleep})
	_, first := p.ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	ch, err = p.ChatStream(testContext(t), []types.Message{user("hi again")}, nil)
	if err == nil {
		deltas = drain(t, ch, 10*time.Second)
	}
	if n := srv.requestCount(); first == nil || err != nil || n != 6 || !reflect.DeepEqual(textsOf(deltas), []string{"third time lucky"}) {
		t.Errorf("one wrapper asked twice, against five 503s and then an answer: got errors %v and %v after %d requests, want the first call to give up "+
			"after 3 and the second to get the answer on its third attempt (each call counts its own attempts)", first, err, n)
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
		// usage is not content: a stream that sent only usage, then ended without [DONE], is retried
		"usage-then-cut":                    rawReply(200, "text/event-stream", "data: "+usageChunk(`{"prompt_tokens":7,"completion_tokens":0,"total_tokens":7}`)+"\n\n", 0),
		"closed-mid-chunk-after-role-chunk": hijacked(func(map[string]any) []string { return nil }, writeThen("40\r\ndata: {\"choices\":[", closeConn)),
		"event-cut-short-after-role-chunk":  endAfterRaw("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel"),
	}
	for _, name := range []string{"reset-after-role-chunk", "server_error-event", "cut-before-content", "clean-end-without-done-no-text",
		"usage-then-cut", "closed-mid-chunk-after-role-chunk", "event-cut-short-after-role-chunk"} {
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
			var usages []types.Delta
			for _, d := range deltas {
				if _, ok := d.(types.UsageDelta); ok {
					usages = append(usages, d)
				}
			}
			if !reflect.DeepEqual(usages, []types.Delta{types.UsageDelta{In: 5, Out: 2}}) {
				t.Errorf("usage deltas: got %s, want only the successful attempt's {5 2} (all deltas: %s)", show(neutralAll(usages)), show(got))
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
	cases := []struct {
		name    string
		failure reply
		texts   []string
	}{
		{"cut-after-three-tokens", cutAfterText("a", " b", " c"), []string{"a", " b", " c"}},
		{"server_error-after-three-tokens", errorEvent("server_error", "a", " b", " c"), []string{"a", " b", " c"}},
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

func TestNoRetryAfterToolCallBegan(t *testing.T) {
	start := map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_w", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": ""}}}}
	fragment := map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `{"ci`}}}}
	cases := []struct {
		name    string
		failure reply
	}{
		{"reset-after-call-start", hijacked(func(body map[string]any) []string { return []string{chunkEvent(body, start, nil)} }, reset)},
		{"eof-after-first-fragment", endAfter(func(body map[string]any) []string {
			return []string{chunkEvent(body, start, nil), chunkEvent(body, fragment, nil)}
		})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newScripted(t, c.failure, textReply("a second answer must never be asked for"))
			sleeps := &sleepRecorder{}
			p := provider.WithRetry(openAI(srv.baseURL()), provider.RetryPolicy{Initial: 100 * time.Millisecond, Sleep: sleeps.Sleep})
			ch, err := p.ChatStream(testContext(t), []types.Message{user("hi")}, nil)
			if err != nil {
				t.Fatalf("ChatStream: got %v, want the stream (its failure comes after the call began, as an ErrorDelta)", err)
			}
			deltas := drain(t, ch, 10*time.Second)
			got := neutralAll(deltas)
			first := map[string]any{"type": "tool_start", "index": 0, "id": "call_w", "name": "get_weather"}
			if len(got) == 0 || !equalJSON(got[0], first) {
				t.Errorf("first delta: want the tool call's start %s (all deltas: %s)", show(first), show(got))
			}
			if len(deltas) == 0 || !isError(deltas[len(deltas)-1]) {
				t.Errorf("last delta: want an ErrorDelta (all deltas: %s)", show(got))
			}
			starts := 0
			for _, d := range deltas {
				if _, ok := d.(types.ToolCallStartDelta); ok {
					starts++
				}
			}
			if starts != 1 {
				t.Errorf("the call started %d times, want once: %s", starts, show(got))
			}
			if n := srv.requestCount(); n != 1 {
				t.Errorf("requests: got %d, want 1 (a tool call is content: no retry after it)", n)
			}
			if w := sleeps.Waits(); len(w) != 0 {
				t.Errorf("sleeps: got %s, want none", durations(w...))
			}
		})
	}
}

func TestTransportFaultsInBand(t *testing.T) {
	next := "data: " + apiChunk(`{"content":" d"}`, "null", "null") + "\n\n"
	abc := textChunks("a", " b", " c")
	faults := []struct {
		name   string
		answer reply
	}{
		// the server closes the connection in the middle of a chunk's data
		{"closed-mid-chunk", hijacked(abc, writeThen(fmt.Sprintf("%x\r\n%s", len(next), next[:20]), closeConn))},
		// the last chunk's size line is cut short, then the connection closes
		{"truncated-chunk-size", hijacked(abc, writeThen("1", closeConn))},
		// a chunk whose size line is not hexadecimal
		{"malformed-chunk-size", hijacked(abc, writeThen("zz\r\n"+next+"\r\n", closeConn))},
		// a reset in the middle of a chunk
		{"reset-mid-chunk", hijacked(abc, writeThen(fmt.Sprintf("%x\r\n%s", len(next), next[:20]), reset))},
		// a body framed by Content-Length that ends short of it
		{"short-content-length", func(w http.ResponseWriter, r *http.Request, body map[string]any, s *scriptedServer) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Content-Length", "100000")
			w.WriteHeader(http.StatusOK)
			for _, e := range abc(body) {
				fmt.Fprintf(w, "data: %s\n\n", e)
			}
			w.(http.Flusher).Flush()
			if conn, buf, err := w.(http.Hijacker).Hijack(); err == nil {
				buf.Flush()
				conn.Close()
			}
		}},
	}
	for _, f := range faults {
		for _, wrapped := range []bool{false, true} {
			name := f.name + "/direct"
			if wrapped {
				name = f.name + "/with_retry"
			}
			t.Run(strings.ReplaceAll(name, "/", "-"), func(t *testing.T) {
				srv := newScripted(t, f.answer, textReply("a retry after content must not happen"))
				var p types.Provider = openAI(srv.baseURL())
				if wrapped {
					p = provider.WithRetry(p, provider.RetryPolicy{Sleep: (&sleepRecorder{}).Sleep})
				}
				ch, err := p.ChatStream(testContext(t), []types.Message{user("hi")}, nil)
				if err != nil {
					t.Fatalf("%s: ChatStream: got %v, want the stream (the fault comes after the head)", name, err)
				}
				deltas := drain(t, ch, 10*time.Second)
				got := neutralAll(deltas)
				if texts := textsOf(deltas); !reflect.DeepEqual(texts, []string{"a", " b", " c"}) {
					t.Errorf("%s: text deltas: got %q, want [\"a\" \" b\" \" c\"] (all: %s)", name, texts, show(got))
				}
				if len(deltas) == 0 || !isError(deltas[len(deltas)-1]) {
					t.Errorf("%s: last delta: want an ErrorDelta (all: %s)", name, show(got))
				}
				if n := srv.requestCount(); n != 1 {
					t.Errorf("%s: got %d requests, want 1", name, n)
				}
			})
		}
	}
}

func TestStalledStreamTimesOut(t *testing.T) {
	srv := newScripted(t)
	sleeps := &sleepRecorder{}
	for _, wrapped := range []bool{false, true} {
		label := "directly"
		if wrapped {
			label = "through WithRetry"
		}
		// Config.Client's Timeout bounds the whole exchange, the head included: on a machine too busy
		// to get the head and the first text within 50ms, the run is tried once more with 2s, so that
		// only a stream that stalls after its text is judged.
		var deltas []types.Delta
		made := 0
		for _, limit := range []time.Duration{50 * time.Millisecond, 2 * time.Second} {
			srv.script(hijacked(textChunks("a"), stallUntilGone(10*time.Second)))
			var p types.Provider = openAI(srv.baseURL(), func(c *provider.Config) { c.Client = &http.Client{Timeout: limit} })
			if wrapped {
				p = provider.WithRetry(p, provider.RetryPolicy{Sleep: sleeps.Sleep})
			}
			before := srv.requestCount()
			ch, err := p.ChatStream(testContext(t), []types.Message{user("hi")}, nil)
			deltas = nil
			if err == nil {
				deltas = drain(t, ch, 15*time.Second)
			}
			made = srv.requestCount() - before
			if len(textsOf(deltas)) > 0 {
				break
			}
		}
		if made != 1 {
			t.Errorf("%s: got %d requests, want 1 (a timeout after content is not retried)", label, made)
		}
		if texts := textsOf(deltas); !reflect.DeepEqual(texts, []string{"a"}) {
			t.Errorf("%s: text deltas: got %q, want [\"a\"] (all: %s)", label, texts, show(neutralAll(deltas)))
		}
		var last types.ErrorDelta
		var timeout net.Error
		if len(deltas) > 0 {
			last, _ = deltas[len(deltas)-1].(types.ErrorDelta)
		}
		if last.Err == nil || !errors.As(last.Err, &timeout) || !timeout.Timeout() {
			t.Errorf("%s: last delta: got %#v, want an ErrorDelta whose error is a timeout (a net.Error with Timeout() true: Config.Client's Timeout bounds the body too)",
				label, last)
		}
	}
	if w := sleeps.Waits(); len(w) != 0 {
		t.Errorf("got sleeps %s, want none (a timeout after content is not retried)", durations(w...))
	}
}

func TestConnectionsClosed(t *testing.T) {
	good := textReply("ok")
	for _, name := range []string{"read-to-end", "api-error", "retried-after-503", "retried-after-cut", "cancelled-early"} {
		t.Run(name, func(t *testing.T) {
			srv, conns := newCountedScripted(t)
			transport := newCountingTransport()
			p := openAI(srv.baseURL(), func(c *provider.Config) { c.Client = &http.Client{Transport: transport, Timeout: 20 * time.Second} })
			var openAtSleep []int // response bodies still open while the retry wrapper waited
			sleep := func(ctx context.Context, d time.Duration) error {
				openAtSleep = append(openAtSleep, transport.open())
				return ctx.Err()
			}
			switch name {
			case "read-to-end":
				srv.script(good)
				ch, err := p.ChatStream(testContext(t), []types.Message{user("hi")}, nil)
				if err != nil {
					t.Fatalf("ChatStream: %v", err)
				}
				drain(t, ch, 10*time.Second)
			case "api-error":
				srv.script(httpError(400, "invalid_request_error", "no", ""))
				if _, err := p.ChatStream(testContext(t), []types.Message{user("hi")}, nil); err == nil {
					t.Fatalf("a 400: got no error, want an *APIError")
				}
			case "cancelled-early":
				srv.script(good)
				ctx, cancel := context.WithCancel(context.Background())
				ch, err := p.ChatStream(ctx, []types.Message{user("hi")}, nil)
				if err != nil {
					cancel()
					t.Fatalf("ChatStream: %v", err)
				}
				cancel()
				drain(t, ch, 10*time.Second)
			default:
				failure := httpError(503, "", "busy", "")
				if name == "retried-after-cut" {
					failure = endAfter(func(map[string]any) []string { return nil }) // a clean end without [DONE]
				}
				srv.script(failure, good)
				ch, err := provider.WithRetry(p, provider.RetryPolicy{Sleep: sleep}).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
				if err != nil {
					t.Fatalf("ChatStream: got %v, want the retried answer", err)
				}
				deltas := drain(t, ch, 10*time.Second)
				if texts := textsOf(deltas); !reflect.DeepEqual(texts, []string{"ok"}) {
					t.Errorf("got %s, want the retried answer \"ok\"", show(neutralAll(deltas)))
				}
				if !reflect.DeepEqual(openAtSleep, []int{0}) {
					t.Errorf("response bodies still open while the wrapper waited to retry: %v, want [0] (the failed attempt is closed before the wait)", openAtSleep)
				}
			}
			if n := transport.open(); n != 0 {
				t.Errorf("%d response body(ies) never closed: close the body on every path (the end of a stream, an error answer, a cancel)", n)
			}
			if !conns.waitAllClosed(500 * time.Millisecond) {
				t.Errorf("the server still saw an open connection 500 ms later: the client must close what it opened")
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
			case <-time.After(500 * time.Millisecond):
				t.Fatal("500 ms after cancel the delta channel was still open: the producer must stop and close it when ctx is done")
			}
			select {
			case <-srv.clientGone:
			case <-time.After(500 * time.Millisecond):
				t.Fatal("500 ms after cancel the server still had its request: build the HTTP request with the caller's ctx so cancelling closes the connection")
			}
		})
	}
	// Cancelled while the caller is not reading: the producer holds a delta nobody takes. It must give
	// up the send, close the body and then the channel, and send nothing more. The body here is a pipe
	// the test writes, so the test knows when the producer has read an event and when it closed it.
	t.Run("cancelled_while_not_reading", func(t *testing.T) {
		body := newPipeBody()
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: body, Request: r}, nil
		})}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ch, err := openAI("http://127.0.0.1:1/v1", func(c *provider.Config) { c.Client = client }).ChatStream(ctx, []types.Message{user("hi")}, nil)
		if err != nil {
			t.Fatalf("ChatStream: %v", err)
		}
		body.write(t, "data: "+apiChunk(`{"content":"unread"}`, "null", "null")+"\n\n") // returns once the producer has read it
		cancel()
		if !waitClosed(body.closed, 500*time.Millisecond) {
			t.Fatal("500 ms after cancel the producer had not closed the response body")
		}
		if d, ok := <-ch; ok {
			t.Errorf("after cancel: got %s from the channel, want it closed with nothing more", show(neutral(d)))
		}
	})

	// Cancelled during the retry's wait: the default Sleep (a timer) ends with ctx, and the caller gets
	// ctx's error at once, without a second request.
	t.Run("cancelled_during_retry_wait", func(t *testing.T) {
		inner := &memProvider{streams: []memStream{{err: &provider.APIError{Status: 503}}, {deltas: []types.Delta{types.TextDelta{Text: "too late"}}}}}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		begun := time.Now()
		ch, err := provider.WithRetry(inner, provider.RetryPolicy{Initial: time.Hour, Max: time.Hour}).ChatStream(ctx, []types.Message{user("hi")}, nil)
		if ch != nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("ctx expired during an hour's wait: got channel %v and error %v, want a nil channel and context.DeadlineExceeded", ch, err)
		}
		if waited := time.Since(begun); waited > 10*time.Second {
			t.Errorf("the wait went on %v after ctx expired (at 100ms): the default Sleep must end with ctx", waited)
		}
		if n := inner.callCount(); n != 1 {
			t.Errorf("requests: got %d, want 1 (the caller gave up before the retry)", n)
		}
	})
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
	fake := newFakeModel(t)
	p := openAI(fake.baseURL())
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

	sent, _ := fake.lastRequest().Body.(map[string]any)
	wire, _ := sent["messages"].([]any)
	if len(wire) != 3 {
		t.Fatalf("second turn: the fake model received %d messages, want 3 (question, the call, its result): %s", len(wire), show(wire))
	}
	wantCall := map[string]any{"id": call.ID, "type": "function", "function": map[string]any{"name": "get_weather", "arguments": string(call.Args)}}
	if got := wire[1].(map[string]any)["tool_calls"]; !equalJSON(got, []any{wantCall}) {
		t.Errorf("the assistant message sent back: got tool_calls %s, want [%s]", show(got), show(wantCall))
	}
	wantResult := map[string]any{"role": "tool", "content": `{"temp_c": 18}`, "tool_call_id": call.ID}
	if !equalJSON(wire[2], wantResult) {
		t.Errorf("the tool message sent back: got %s, want %s", show(wire[2]), show(wantResult))
	}
}

func TestRetryWrapsAnyProvider(t *testing.T) {
	sleeps := &sleepRecorder{}
	policy := provider.RetryPolicy{Sleep: sleeps.Sleep}

	// a failure of the provider's own making, before any stream: the caller gets it as it came
	own := errors.New("provider bug")
	inner := &memProvider{streams: []memStream{{err: own}, {deltas: []types.Delta{types.TextDelta{Text: "never"}}}}}
	if ch, err := provider.WithRetry(inner, policy).ChatStream(testContext(t), []types.Message{user("hi")}, nil); ch != nil || err != own {
		t.Errorf("an inner provider failing with its own error: got channel %v and error %v, want a nil channel and that error, as it came", ch, err)
	}
	if n := inner.callCount(); n != 1 {
		t.Errorf("an inner provider's own error (not retryable): got %d calls, want 1", n)
	}

	// streams that end without a done delta are passed on as they are, and read to their end
	for _, c := range []struct {
		what   string
		deltas []types.Delta
	}{{"a usage delta, then the end", []types.Delta{types.UsageDelta{In: 2}}}, {"nothing at all", nil}} {
		sent := make(chan struct{})
		inner := &memProvider{streams: []memStream{{deltas: c.deltas, sent: sent}}}
		ch, err := provider.WithRetry(inner, policy).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
		if err != nil {
			t.Errorf("an inner stream of %s: got error %v, want the stream", c.what, err)
			continue
		}
		if got := drain(t, ch, 10*time.Second); !reflect.DeepEqual(got, c.deltas) {
			t.Errorf("an inner stream of %s: got %s, want %s as it came", c.what, show(neutralAll(got)), show(neutralAll(c.deltas)))
		}
		if !waitClosed(sent, 250*time.Millisecond) {
			t.Errorf("an inner stream of %s: never read to its end", c.what)
		}
	}

	// The caller cancels and stops reading: the wrapper's channel closes, and the inner stream (a
	// simple one, blocked on its sends) is read to its end, not left blocked forever.
	for _, readFirst := range []bool{false, true} {
		what := "before reading anything"
		if readFirst {
			what = "after reading one delta"
		}
		sent := make(chan struct{})
		inner := &memProvider{streams: []memStream{{deltas: []types.Delta{types.TextDelta{Text: "a"}, types.TextDelta{Text: "b"}, types.TextDelta{Text: "c"}, types.DoneDelta{FinishReason: "stop"}}, sent: sent}}}
		ctx, cancel := context.WithCancel(context.Background())
		ch, err := provider.WithRetry(inner, policy).ChatStream(ctx, []types.Message{user("hi")}, nil)
		if err != nil {
			cancel()
			t.Fatalf("ChatStream: %v", err)
		}
		if readFirst {
			if d := <-ch; !reflect.DeepEqual(d, types.TextDelta{Text: "a"}) {
				t.Errorf("first delta: got %s, want text \"a\"", show(neutral(d)))
			}
		}
		cancel()
		if !waitClosed(sent, 250*time.Millisecond) {
			t.Errorf("cancelled %s: 250 ms later the inner stream was still blocked on a send (read it to its end once ctx is done)", what)
			continue
		}
		if d, ok := <-ch; ok {
			t.Errorf("cancelled %s: got %s, want the channel closed with nothing more", what, show(neutral(d)))
		}
	}
	if w := sleeps.Waits(); len(w) != 0 {
		t.Errorf("sleeps: got %s, want none (nothing here is retryable)", durations(w...))
	}

	// A failed attempt's producer may still be closing its connection after its ErrorDelta: the wrapper
	// reads that channel until it closes before it waits and tries again, so that two attempts'
	// connections are never open at once.
	ok := []types.Delta{types.TextDelta{Text: "ok"}, types.DoneDelta{FinishReason: "stop"}}
	failed := []types.Delta{types.UsageDelta{In: 3}, types.ErrorDelta{Err: provider.ErrNoDone}}
	slow := &memProvider{streams: []memStream{{deltas: failed, closeAfter: 20 * time.Millisecond}, {deltas: ok}}}
	var openAtSleep []int
	waits := func(ctx context.Context, d time.Duration) error {
		openAtSleep = append(openAtSleep, slow.openStreams())
		return ctx.Err()
	}
	ch, err := provider.WithRetry(slow, provider.RetryPolicy{Sleep: waits}).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
	if err != nil {
		t.Fatalf("a failed attempt that closes its channel 20 ms after its ErrorDelta, then a good one: ChatStream: %v", err)
	}
	if got := drain(t, ch, 10*time.Second); !reflect.DeepEqual(got, ok) {
		t.Errorf("a failed attempt that closes late, then a good one: got %s, want %s", show(neutralAll(got)), show(neutralAll(ok)))
	}
	if at := slow.openAtCalls(); !reflect.DeepEqual(openAtSleep, []int{0}) || !reflect.DeepEqual(at, []int{0, 0}) {
		t.Errorf("a failed attempt that closes its channel 20 ms after its ErrorDelta: inner streams still open at the wait %v and at each "+
			"attempt %v, want [0] and [0 0] (read the failed attempt's channel until it closes, then wait, then try again)", openAtSleep, at)
	}

	// The caller's channel closes only after the inner one has: once the caller has seen the end, the
	// producer underneath has finished too, its connection closed.
	slow = &memProvider{streams: []memStream{{deltas: ok, closeAfter: 20 * time.Millisecond}}}
	if ch, err := provider.WithRetry(slow, policy).ChatStream(testContext(t), []types.Message{user("hi")}, nil); err != nil {
		t.Errorf("an inner stream that closes its channel 20 ms after its DoneDelta: ChatStream: %v", err)
	} else if got := drain(t, ch, 10*time.Second); !reflect.DeepEqual(got, ok) || slow.openStreams() != 0 {
		t.Errorf("an inner stream that closes its channel 20 ms after its DoneDelta: got %s, and the inner stream open (%d) when "+
			"the wrapper's channel closed; want %s, then the end, only once the inner channel has closed", show(neutralAll(got)), slow.openStreams(), show(neutralAll(ok)))
	}

	// A failed attempt whose channel stays open until ctx is done: the wrapper waits for it, so when
	// the caller gives up, ChatStream returns ctx's error, with no second attempt.
	stuck := &memProvider{streams: []memStream{{deltas: failed, closeAfter: -1}, {deltas: ok}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(10*time.Millisecond, cancel)
	ch, err = provider.WithRetry(stuck, provider.RetryPolicy{Sleep: (&sleepRecorder{}).Sleep}).ChatStream(ctx, []types.Message{user("hi")}, nil)
	if ch != nil || !errors.Is(err, context.Canceled) || stuck.callCount() != 1 {
		t.Errorf("a failed attempt whose channel stays open until ctx is cancelled (10 ms later): got channel %v, error %v after %d "+
			"attempt(s); want a nil channel and context.Canceled after 1 (the wrapper waits for the failed attempt to close first)", ch, err, stuck.callCount())
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
		{"broken pipe", opErr(syscall.EPIPE), true},
		{"io.EOF (a connection closed before the answer)", urlErr(io.EOF), true},
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
	for _, s := range []int{400, 401, 403, 404, 407, 409, 410, 422, 499, 501, 505, 599} {
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
	calls := map[int]types.ToolCall{}
	for _, i := range []int{10, 2, 0, 1} {
		calls[i] = types.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: fmt.Sprintf("tool_%d", i), Args: json.RawMessage(fmt.Sprintf(`{"n": %d}`, i))}
	}
	var acc types.Accumulator
	for _, i := range []int{10, 2, 0, 1} {
		acc.Add(types.ToolCallStartDelta{Index: i, ID: calls[i].ID, Name: calls[i].Name})
	}
	for _, i := range []int{2, 10, 1, 0} {
		acc.Add(types.ToolCallEndDelta{Index: i, Call: calls[i]})
	}
	acc.Add(types.DoneDelta{FinishReason: "tool_calls"})
	var ids []string
	for _, c := range acc.Message().ToolCalls {
		ids = append(ids, c.ID)
	}
	if want := []string{"call_0", "call_1", "call_2", "call_10"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("tool calls ended in index order 2, 10, 1, 0: got ids %q, want %q (index order)", ids, want)
	}
}

func TestAccumulatorMessage(t *testing.T) {
	var acc types.Accumulator // the zero Accumulator is ready to use
	if acc.FinishReason() != "" || acc.Usage() != (types.Usage{}) {
		t.Errorf("before any delta: got FinishReason %q and Usage %+v, want \"\" and zeros", acc.FinishReason(), acc.Usage())
	}
	for _, d := range []types.Delta{
		types.TextDelta{Text: "Let me "},
		types.ToolCallStartDelta{Index: 0, ID: "call_0", Name: "list_files"},
		types.ToolCallStartDelta{Index: 1, ID: "call_1", Name: "read_file"},
		types.TextDelta{Text: "check."},
		types.ToolCallArgsDelta{Index: 1, Fragment: `{"path": "a"}`},
		types.UsageDelta{In: 3, Out: 1},
		types.ToolCallEndDelta{Index: 0, Call: types.ToolCall{ID: "call_0", Name: "list_files"}},
		types.UsageDelta{In: 12, Out: 7},
	} {
		acc.Add(d)
	}
	if acc.FinishReason() != "" {
		t.Errorf("FinishReason before the DoneDelta: got %q, want \"\"", acc.FinishReason())
	}
	acc.Add(types.DoneDelta{FinishReason: "length"})
	msg := acc.Message()
	want := map[string]any{"role": "assistant", "content": "Let me check.", "tool_calls": []any{map[string]any{"id": "call_0", "name": "list_files", "arguments": "{}"}}}
	if got := messageForm(msg); !equalJSON(got, want) {
		t.Errorf("Message(): got %s, want %s (text joined; a call counts once its end delta came; no arguments is {})", show(got), show(want))
	}
	if acc.Usage() != (types.Usage{In: 12, Out: 7}) {
		t.Errorf("Usage(): got %+v, want {In:12 Out:7} (the last UsageDelta)", acc.Usage())
	}
	if acc.FinishReason() != "length" {
		t.Errorf("FinishReason(): got %q, want \"length\"", acc.FinishReason())
	}

	// what the caller does with the message it got must not change the accumulator
	msg.ToolCalls[0].Args[0] = '['
	msg.ToolCalls = append(msg.ToolCalls, types.ToolCall{ID: "call_x", Name: "rm", Args: json.RawMessage("{}")})
	msg.Content += " (edited)"
	if got := messageForm(acc.Message()); !equalJSON(got, want) {
		t.Errorf("Message() after the caller changed the previous result: got %s, want %s again", show(got), show(want))
	}
}

func TestAccumulatorErrors(t *testing.T) {
	opened := []types.Delta{types.ToolCallStartDelta{Index: 0, ID: "call_0", Name: "get_weather"}, types.ToolCallArgsDelta{Index: 0, Fragment: `{"city":`}}
	var acc types.Accumulator
	for _, d := range opened {
		acc.Add(d)
	}
	if err := acc.Err(); !errors.Is(err, types.ErrIncomplete) {
		t.Errorf("Err() with no DoneDelta yet: got %v, want types.ErrIncomplete", err)
	}
	if calls := acc.Message().ToolCalls; len(calls) != 0 {
		t.Errorf("a call with no end delta: got %+v, want no tool call", calls)
	}
	if _, _, err := types.Collect(deltaChan(opened...)); !errors.Is(err, types.ErrIncomplete) {
		t.Errorf("Collect of a stream with no done or error delta: got error %v, want types.ErrIncomplete", err)
	}

	first, second := errors.New("first failure"), errors.New("second failure")
	var failed types.Accumulator
	for _, d := range []types.Delta{types.TextDelta{Text: "Hel"}, types.ErrorDelta{Err: first}, types.ErrorDelta{Err: second}} {
		failed.Add(d)
	}
	if failed.Err() != first {
		t.Errorf("Err() after two ErrorDeltas: got %v, want the first one's own error", failed.Err())
	}
	if _, _, err := types.Collect(deltaChan(types.TextDelta{Text: "Hel"}, types.ErrorDelta{Err: provider.ErrNoDone})); err != provider.ErrNoDone {
		t.Errorf("Collect of a cut stream: got error %v, want its ErrorDelta's own error", err)
	}

	var done types.Accumulator
	done.Add(types.DoneDelta{FinishReason: "stop"})
	if err := done.Err(); err != nil {
		t.Errorf("Err() after a DoneDelta: got %v, want nil", err)
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

func TestCallContextDefaultTainted(t *testing.T) {
	if cc := types.CallContextFrom(context.Background()); cc != (types.CallContext{Tainted: true}) {
		t.Errorf("no call context attached: got %+v, want {Tainted: true} (err on the cautious side)", cc)
	}
	type otherKey struct{}
	withOther := context.WithValue(context.TODO(), otherKey{}, types.CallContext{Tainted: false, Iter: 9})
	if cc := types.CallContextFrom(withOther); cc != (types.CallContext{Tainted: true}) {
		t.Errorf("a CallContext stored under another package's key: got %+v, want {Tainted: true} (only WithCallContext attaches one)", cc)
	}
	// a goroutine that starts from a fresh context has none either
	seen := make(chan types.CallContext)
	go func() { seen <- types.CallContextFrom(context.Background()) }()
	if cc := <-seen; cc != (types.CallContext{Tainted: true}) {
		t.Errorf("a new goroutine with a fresh context: got %+v, want {Tainted: true}", cc)
	}
}

func TestCallContextRestores(t *testing.T) {
	outer := types.CallContext{Tainted: false, Iter: 1}
	inner := types.CallContext{Tainted: true, Iter: 2}
	ctxOuter := types.WithCallContext(context.Background(), outer)
	if got := types.CallContextFrom(ctxOuter); got != outer {
		t.Errorf("WithCallContext(outer): got %+v, want %+v", got, outer)
	}
	ctxInner := types.WithCallContext(ctxOuter, inner)
	if got := types.CallContextFrom(ctxInner); got != inner {
		t.Errorf("nested: got %+v, want %+v", got, inner)
	}
	if got := types.CallContextFrom(ctxOuter); got != outer {
		t.Errorf("the outer context after nesting: got %+v, want %+v unchanged (WithCallContext returns a child)", got, outer)
	}
	type otherKey struct{}
	if got := types.CallContextFrom(context.WithValue(ctxInner, otherKey{}, "x")); got != inner {
		t.Errorf("through an unrelated context value: got %+v, want %+v", got, inner)
	}
	// a tool that fails inside its own context leaves the caller's as it was
	failing := func(ctx context.Context) error {
		ctx = types.WithCallContext(ctx, inner)
		if types.CallContextFrom(ctx) != inner {
			return errors.New("the tool did not see its context")
		}
		return errors.New("a tool failed")
	}
	if err := failing(ctxOuter); err == nil || err.Error() != "a tool failed" {
		t.Errorf("inside a tool's context: %v", err)
	}
	if got := types.CallContextFrom(ctxOuter); got != outer {
		t.Errorf("after a tool that failed in its own context: got %+v, want %+v", got, outer)
	}
	if got := types.CallContextFrom(context.Background()); got != (types.CallContext{Tainted: true}) {
		t.Errorf("a fresh context after all this: got %+v, want the default {Tainted: true} again", got)
	}
}

func TestStepNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{{types.LLMStep(3), "llm/3"}, {types.ToolStep(3, 0, "get_weather"), "tool/3/0/get_weather"}, {types.LLMStep(0), "llm/0"}} {
		if c.got != c.want {
			t.Errorf("step name: got %q, want %q", c.got, c.want)
		}
	}
	for _, c := range []struct {
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
		{"tool/-1/0/get_weather", "", false},
		{"tool//0/get_weather", "", false},
		{"tool/3//get_weather", "", false},
		{"tool/\u0663/0/get_weather", "", false}, // ARABIC-INDIC DIGIT THREE: a digit, but not an ASCII one
		{"tool/\u00b2/0/get_weather", "", false}, // SUPERSCRIPT TWO
		{"tools/3/0/get_weather", "", false},
		{"", "", false},
	} {
		if got, ok := types.StepToolName(c.step); got != c.want || ok != c.ok {
			t.Errorf("StepToolName(%q): got (%q, %v), want (%q, %v)", c.step, got, ok, c.want, c.ok)
		}
	}
}

func TestContentAndVerdicts(t *testing.T) {
	for _, c := range []struct {
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
	} {
		if got := types.IsContent(c.d); got != c.want {
			t.Errorf("IsContent(%#v): got %v, want %v", c.d, got, c.want)
		}
	}

	names := []string{types.Allow.String(), types.Deny.String(), types.NeedApproval.String(), types.Decision(7).String()}
	if want := []string{"allow", "deny", "need_approval", "Decision(7)"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Decision names (Allow, Deny, NeedApproval, Decision(7)): got %q, want %q", names, want)
	}
	var zero types.Verdict
	if zero.Decision != types.Allow {
		t.Errorf("the zero Verdict: got %v, want Allow", zero.Decision)
	}
	if types.StepLLM != "llm" || types.StepTool != "tool" {
		t.Errorf("StepKind values: got %q, %q; want llm, tool", types.StepLLM, types.StepTool)
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

func TestSSELineEndsEverySplit(t *testing.T) {
	ends := []string{"\n", "\r\n", "\r"}
	failures := 0
	for _, x := range ends {
		for _, y := range ends {
			for _, z := range ends {
				for _, w := range ends[:2] {
					body := []byte("data: a" + x + "data: b" + y + z + "data: c" + w + w)
					want, wantEnd := specEvents(body)
					n := len(body)
					var ways [][]int
					for i := 1; i < n; i++ {
						ways = append(ways, []int{i}) // two reads, split at i
					}
					for i := 1; i < n-1; i++ {
						ways = append(ways, []int{i, i + 1}) // the byte at i alone in the middle read
					}
					for i := 1; i < n-2; i++ {
						ways = append(ways, []int{i, i + 2}) // the two bytes at i alone
					}
					every := []int{}
					for i := 1; i < n; i++ {
						every = append(every, i)
					}
					ways = append(ways, every) // one byte per read
					for _, cuts := range ways {
						got, end := readEvents(&cutReader{data: body, cuts: append([]int(nil), cuts...)})
						if !reflect.DeepEqual(got, want) || end != wantEnd {
							t.Errorf("body %q read as %s: got events %+v ending in %v, want %+v ending in %v", body, showReads(body, cuts), got, end, want, wantEnd)
							failures++
							break
						}
					}
					if failures >= 3 {
						return
					}
				}
			}
		}
	}
}

// showReads is the pieces a body is cut into, as a message shows them.
func showReads(body []byte, cuts []int) string {
	if len(cuts) >= 5 {
		return fmt.Sprintf("%d one-byte reads", len(body))
	}
	var pieces []string
	start := 0
	for _, c := range append(append([]int(nil), cuts...), len(body)) {
		pieces = append(pieces, fmt.Sprintf("%q", body[start:c]))
		start = c
	}
	return "[" + strings.Join(pieces, " ") + "]"
}

func TestSSEAnyReadsSameEvents(t *testing.T) {
	// A property, checked on 400 generated cases (always the same ones, from a fixed seed): for any
	// stream of data, event, id, comment and blank lines with any line ends, cut into reads anywhere
	// (some with an empty Read before each piece, some with the last piece and io.EOF together), the
	// events are those of reading it whole, and those the rules give. A failure is shown shrunk.
	rng, ways := rand.New(rand.NewSource(20261130)), rand.New(rand.NewSource(20261201))
	for n := 0; n < 400; n++ {
		lines, cuts := randomCase(rng)
		way := readWay{empty: ways.Intn(4) == 0, eofWithEnd: ways.Intn(4) == 0}
		if propertyFailure(lines, cuts, way) != "" {
			lines, cuts = shrink(lines, cuts, way)
			t.Fatalf("case %d of 400, shrunk: %s", n+1, propertyFailure(lines, cuts, way))
		}
	}
}

var (
	propertyLines = []string{"data: a", "data:b ", "data", "data:  \u00e9\u2028x", "data: \U0001f44b:", "event: x", "event", ": c", ":", "", "", "id: 1", "id", "id: 2\x003", "retry: 5", "data:a:b"}
	propertyTails = []string{"", "data: pending", "\r", "data: \u20ac"}
	lineEnds      = []string{"\n", "\r\n", "\r"}
)

// randomCase is a body as lines, each with its line end (the last one a tail without an end), and
// the read boundaries to cut it at.
func randomCase(rng *rand.Rand) ([]string, []int) {
	var lines []string
	for k := rng.Intn(13); k > 0; k-- {
		lines = append(lines, propertyLines[rng.Intn(len(propertyLines))]+lineEnds[rng.Intn(len(lineEnds))])
	}
	if rng.Float64() < 0.2 {
		lines = append([]string{"\ufeff"}, lines...)
	}
	lines = append(lines, propertyTails[rng.Intn(len(propertyTails))])
	data := strings.Join(lines, "")
	if len(data) < 2 {
		return lines, nil
	}
	mode := rng.Float64()
	if mode < 0.1 { // one byte per read
		every := make([]int, 0, len(data)-1)
		for i := 1; i < len(data); i++ {
			every = append(every, i)
		}
		return lines, every
	}
	// reads that end or begin right at a CR or LF, where line ends are split: all such points, or some
	var near []int
	for i := 0; i < len(data); i++ {
		if data[i] == '\r' || data[i] == '\n' {
			for _, p := range []int{i, i + 1} {
				if p > 0 && p < len(data) {
					near = append(near, p)
				}
			}
		}
	}
	near = sortedUnique(near)
	if mode < 0.4 && len(near) > 0 {
		return lines, near
	}
	if mode < 0.7 && len(near) > 0 {
		return lines, sample(rng, near, 1+rng.Intn(8))
	}
	all := make([]int, 0, len(data)-1)
	for i := 1; i < len(data); i++ {
		all = append(all, i)
	}
	return lines, sample(rng, all, rng.Intn(9))
}

// sample is k of the points (all of them when there are fewer), in increasing order.
func sample(rng *rand.Rand, points []int, k int) []int {
	picked := append([]int(nil), points...)
	rng.Shuffle(len(picked), func(i, j int) { picked[i], picked[j] = picked[j], picked[i] })
	return sortedUnique(picked[:min(k, len(picked))])
}

// propertyFailure says why a case breaks the property, or "".
func propertyFailure(lines []string, cuts []int, way readWay) string {
	data := []byte(strings.Join(lines, ""))
	whole, wholeEnd := readEvents(bytes.NewReader(data))
	want, wantEnd := specEvents(data)
	if !reflect.DeepEqual(whole, want) || wholeEnd != wantEnd {
		return fmt.Sprintf("body %q read whole: got events %+v ending in %v, want %+v ending in %v", data, whole, wholeEnd, want, wantEnd)
	}
	got, end := readEvents(&cutReader{data: data, cuts: append([]int(nil), cuts...), empty: way.empty, eofWithEnd: way.eofWithEnd})
	if !reflect.DeepEqual(got, whole) || end != wholeEnd {
		return fmt.Sprintf("body %q read as %s%s: got events %+v ending in %v, want %+v ending in %v (as when read whole)", data, showReads(data, cuts), way, got, end, whole, wholeEnd)
	}
	return ""
}

// readWay is how a case's reader returns its pieces, besides where it cuts them (see cutReader).
type readWay struct{ empty, eofWithEnd bool }

func (w readWay) String() string {
	var how []string
	if w.empty {
		how = append(how, "an empty Read (0, nil) before each piece")
	}
	if w.eofWithEnd {
		how = append(how, "the last piece returned together with io.EOF")
	}
	if len(how) == 0 {
		return ""
	}
	return " (" + strings.Join(how, "; ") + ")"
}

// shrink drops lines and read boundaries while the case still fails.
func shrink(lines []string, cuts []int, way readWay) ([]string, []int) {
	for progress := true; progress; {
		progress = false
		for k := range lines {
			fewer := append(append([]string(nil), lines[:k]...), lines[k+1:]...)
			size := len(strings.Join(fewer, ""))
			var kept []int
			for _, c := range cuts {
				if c < size {
					kept = append(kept, c)
				}
			}
			if len(fewer) > 0 && propertyFailure(fewer, kept, way) != "" {
				lines, cuts, progress = fewer, kept, true
				break
			}
		}
		for k := range cuts {
			fewer := append(append([]int(nil), cuts[:k]...), cuts[k+1:]...)
			if propertyFailure(lines, fewer, way) != "" {
				cuts, progress = fewer, true
				break
			}
		}
	}
	return lines, cuts
}

func TestSSEReaderContract(t *testing.T) {
	// What io.Reader allows, each of which some Reader does: fewer bytes than asked; 0 bytes and no
	// error (nothing yet, not the end); the last bytes together with io.EOF; bytes together with an
	// error; an error after data. Callers process the bytes a Read returned before its error.
	hand := loadStreams(t).HandExample.Body
	bodies := map[string]string{
		"the 'Hello' stream":    hand,
		"CRLF, CR and comments": "data: a\r\ndata: b\r\n\r\n: ping\n\nid: 7\nevent: x\ndata: c\rdata: [DONE]\r\r",
	}
	for _, name := range []string{"the 'Hello' stream", "CRLF, CR and comments"} {
		body := []byte(bodies[name])
		for _, size := range []int{1, 5, 64} {
			cuts := pieces(body, size)
			var emptyAfterEach, emptyInRuns, eofWithLast []readStep
			emptyInRuns = append(emptyInRuns, readStep{}, readStep{}, readStep{})
			for i, piece := range cuts {
				emptyAfterEach = append(emptyAfterEach, readStep{data: piece}, readStep{})
				emptyInRuns = append(emptyInRuns, readStep{data: piece})
				if i%3 == 2 {
					emptyInRuns = append(emptyInRuns, readStep{}, readStep{})
				}
				eofWithLast = append(eofWithLast, readStep{data: piece})
			}
			emptyAfterEach = append(emptyAfterEach, readStep{err: io.EOF})
			emptyInRuns = append(emptyInRuns, readStep{err: io.EOF})
			eofWithLast[len(eofWithLast)-1].err = io.EOF
			want, wantEnd := specEvents(body)
			for _, c := range []struct {
				how   string
				steps []readStep
			}{
				{"an empty Read (0 bytes, nil) after every one", emptyAfterEach},
				{"three empty Reads first, then two after every third", emptyInRuns},
				{"the last bytes returned together with io.EOF", eofWithLast},
			} {
				what := fmt.Sprintf("%s in Reads of %d byte(s), %s", name, size, c.how)
				checkContract(t, what, &scriptedReader{steps: c.steps}, want, wantEnd, nil)
			}
		}
	}

	// the input cut inside an event, its last bytes returned together with io.EOF
	cut := []byte("data: one\n\ndata: tw")
	checkContract(t, "\"data: one\\n\\ndata: tw\" with its last bytes and io.EOF", &scriptedReader{steps: []readStep{{data: cut[:13]}, {data: cut[13:], err: io.EOF}}},
		[]sseEvent{{"one", "message", ""}}, io.ErrUnexpectedEOF, nil)

	// a failure after data, and a failure returned with the bytes that complete an event
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	two := []sseEvent{{"one", "message", ""}, {"2", "two", ""}}
	failing := []byte("data: one\n\nevent: two\ndata: 2\n\ndata: thr")
	for _, size := range []int{1, 7, 64} {
		steps := []readStep{}
		for _, piece := range pieces(failing, size) {
			steps = append(steps, readStep{data: piece})
		}
		checkContract(t, fmt.Sprintf("two events and part of a third in Reads of %d byte(s), then a connection reset", size),
			&scriptedReader{steps: append(steps, readStep{err: reset})}, two, nil, reset)
		complete := failing[:len(failing)-len("data: thr")]
		steps = nil
		for _, piece := range pieces(complete, size) {
			steps = append(steps, readStep{data: piece})
		}
		steps[len(steps)-1].err = reset
		checkContract(t, fmt.Sprintf("two events in Reads of %d byte(s), the last bytes returned together with a connection reset", size),
			&scriptedReader{steps: steps}, two, nil, reset)
	}

	// the same through ChatStream: the deltas of the events before the failure, then the failure itself
	body := []byte("data: " + apiChunk(`{"content":"Hel"}`, "null", "null") + "\n\ndata: " + apiChunk(`{"content":"lo"}`, "null", "null") + "\n\n")
	for _, c := range []struct {
		how   string
		steps []readStep
		want  error
	}{
		{"empty Reads between the events, then a connection reset", []readStep{{}, {data: body[:40]}, {}, {}, {data: body[40:]}, {}, {err: reset}}, reset},
		{"the last bytes together with a connection reset", []readStep{{data: body[:40]}, {data: body[40:], err: reset}}, reset},
		{"the last bytes together with io.EOF (before [DONE])", []readStep{{data: body[:40]}, {}, {data: body[40:], err: io.EOF}}, provider.ErrNoDone},
	} {
		reader := &scriptedReader{steps: c.steps}
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(reader), Request: r}, nil
		})}
		ch, err := openAI("http://127.0.0.1:1/v1", func(c *provider.Config) { c.Client = client }).ChatStream(testContext(t), []types.Message{user("hi")}, nil)
		if err != nil {
			t.Errorf("ChatStream over a body with %s: %v", c.how, err)
			continue
		}
		deltas := drain(t, ch, 10*time.Second)
		var last error
		if len(deltas) > 0 {
			if e, ok := deltas[len(deltas)-1].(types.ErrorDelta); ok {
				last = e.Err
			}
		}
		if texts := textsOf(deltas); !reflect.DeepEqual(texts, []string{"Hel", "lo"}) || !errors.Is(last, c.want) {
			t.Errorf("ChatStream over a body with %s: got %s, want the texts \"Hel\" and \"lo\", then ErrorDelta{%v}", c.how, show(neutralAll(deltas)), c.want)
		}
	}
}

// checkContract reads r's events and compares them and the error that ends them: want and wantEnd,
// or, when failure is set, an error that is that failure (errors.Is), again on the next call.
func checkContract(t *testing.T, what string, r *scriptedReader, want []sseEvent, wantEnd, failure error) {
	t.Helper()
	events := provider.NewEventReader(r)
	var got []sseEvent
	var end error
	for len(got) < 100 {
		data, err := events.Next()
		if err != nil {
			end = err
			break
		}
		got = append(got, sseEvent{string(data), events.Type(), events.LastID()})
	}
	switch {
	case r.emptyBuffers > 0:
		t.Errorf("%s: Read was called with an empty buffer %d time(s): such a Read can only return nothing; make room first", what, r.emptyBuffers)
	case errors.Is(end, errMisused):
		t.Errorf("%s: Read was called more than 100 times after the reader had returned %v: stop at the first error", what, r.steps[0].err)
	case !reflect.DeepEqual(got, want):
		t.Errorf("%s: got events %+v, want %+v", what, got, want)
	case failure == nil && end != wantEnd:
		t.Errorf("%s: after the events, Next returned %v, want %v", what, end, wantEnd)
	case failure != nil && !errors.Is(end, failure):
		t.Errorf("%s: after the events, Next returned %v, want the reader's own error (%v), as it came: errors.Is must find it", what, end, failure)
	case failure != nil:
		if data, again := events.Next(); again == nil {
			t.Errorf("%s: Next after the failure returned an event %q, want the failure again", what, data)
		}
	}
}

func TestSSELinearTime(t *testing.T) {
	// How the work grows with the size of one event, read 512 bytes at a time: the CPU time per event
	// at 16 KiB and at 32 times that, each the best of several runs taken in turns. A linear reader takes
	// about 32 times as long for 32 times the bytes; one that searches or copies its unfinished line
	// again on every Read, about 1000 times. CPU time leaves out the time other processes held the
	// cores, and load slows every size alike: the ratio holds on a busy machine.
	const read = 512
	sizes := []int{16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10}
	best := make([]time.Duration, len(sizes))
	for round := 0; round < 5; round++ {
		for i, size := range sizes {
			if round > 0 && best[i] > 5*time.Millisecond {
				continue // a long run is measured precisely enough once
			}
			took, problem := timedEvents(size, read)
			if problem != "" {
				t.Fatalf("an event of %d bytes then [DONE], read %d bytes at a time: %s (TestSSELargeEvent checks the bytes in detail)", size, read, problem)
			}
			if round == 0 || took < best[i] {
				best[i] = took
			}
		}
	}
	if verdict, measured := growthVerdict(sizes, best, read); verdict != "" {
		t.Error(verdict)
	} else {
		t.Log(measured)
	}
}

// growthVerdict is "" when the times grow in proportion to the sizes, else a message that says how
// they grew and what makes work quadratic; and the measurements, in words. Time grows as size^k: k is
// 1 for a linear reader (a little less here: every event has a fixed cost too) and 2 for a quadratic
// one (a little less at these sizes: its linear part still counts at the smallest). Growth beyond
// k = 1.25 fails, between the two with room on both sides.
func growthVerdict(sizes []int, times []time.Duration, read int) (string, string) {
	scale := float64(sizes[len(sizes)-1]) / float64(sizes[0])
	limit := math.Pow(scale, 1.25)
	growth := float64(times[len(times)-1]) / float64(max(times[0], time.Nanosecond))
	var each []string
	for i, size := range sizes {
		each = append(each, fmt.Sprintf("%d KiB: %v", size>>10, times[i].Round(100*time.Nanosecond)))
	}
	measured := fmt.Sprintf("one event read %d bytes at a time, CPU time per event by size (best of 5): %s; %.0fx the size took %.1fx the time",
		read, strings.Join(each, ", "), scale, growth)
	if growth <= limit {
		return "", measured
	}
	return fmt.Sprintf("%s: a linear reader takes about %.0fx, a quadratic one up to %.0fx, and more than %.0fx (size^1.25) fails. The work of "+
		"each Read grows with the unfinished line: search only the bytes that Read brought for a line end (remember how far you "+
		"looked), and grow the buffer by doubling, never by a fixed step or by one Read's size", measured, scale, scale*scale, limit), measured
}

// timedEvents reads events of size bytes ("data: " + size x's + "\n\ndata: [DONE]\n\n"), read bytes per
// Read, each with a fresh EventReader, until a millisecond of CPU time has passed or 2 MiB were read,
// and gives the CPU time per event, or what went wrong. The collector is off while it runs: its work
// would depend on what came before.
func timedEvents(size, read int) (time.Duration, string) {
	readers := make([]*provider.EventReader, max(1, (2<<20)/size))
	for i := range readers {
		readers[i] = provider.NewEventReader(&longEvent{left: size, read: read, tail: []byte("\n\ndata: [DONE]\n\n"), head: []byte("data: ")})
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var took time.Duration
	done := 0
	for before := cpuTime(); done < len(readers) && took < time.Millisecond; took = cpuTime() - before {
		data, err := readers[done].Next()
		switch {
		case err != nil:
			return 0, fmt.Sprintf("Next returned %v, want the event", err)
		case len(data) != size:
			return 0, fmt.Sprintf("the event came back with %d bytes, want %d", len(data), size)
		}
		done++
	}
	for _, events := range readers[:done] {
		if data, err := events.Next(); err != nil || string(data) != "[DONE]" {
			return 0, fmt.Sprintf("the event after it: got %.40q and %v, want [DONE]", data, err)
		}
	}
	return took / time.Duration(done), ""
}

func TestSSELargeEvent(t *testing.T) {
	// Every byte of a large event arrives, whatever the reads. The sizes are such that a reader doing
	// quadratic work still finishes quickly: whether it is fast enough is TestSSELinearTime's question.
	unit := strings.Repeat("0123456789abcdef", 15) + "é€👋 "
	big := strings.Repeat(unit, 1<<20/len(unit)+1)[:1<<20]
	for _, c := range []struct {
		what, body string
		want       []string
		sizes      []int
	}{
		{"a comment, a 1 MiB event, [DONE]", ": big\ndata: " + big + "\n\ndata: [DONE]\n\n", []string{big, "[DONE]"}, []int{4096, 65536}},
		{"a 16 KiB event with CRLF line ends", "data: " + big[:16<<10] + "\r\n\r\n", []string{big[:16<<10]}, []int{1}},
		{"an event of 300 data lines of 1000 bytes", "data: " + strings.Repeat(big[:1000]+"\ndata: ", 299) + big[:1000] + "\n\ndata: y\n\n",
			[]string{strings.Repeat(big[:1000]+"\n", 299) + big[:1000], "y"}, []int{7, 4096}},
	} {
		for _, size := range c.sizes {
			checkEvents(t, fmt.Sprintf("%s, read %d byte(s) at a time", c.what, size), chunked([]byte(c.body), size), 0, c.want)
		}
	}

	// A short first data line, then a long rest of the same event, after earlier events that fill the
	// read buffer: while the event is pending the buffer moves its unread bytes to its front (or grows),
	// and a first line kept where it was read is overwritten by later reads. The earlier events take
	// lengths from 0 to 72 KiB, 4 KiB apart, so the move comes at many points of the event.
	long := strings.Repeat("0123456789", 4000)
	var lines []string
	for i := 0; i < 40; i++ {
		lines = append(lines, fmt.Sprintf("%04d%s", i, long[:996]))
	}
	shapes := []struct{ what, rest, want string }{
		{"40 more data lines of 1000 bytes", "\ndata: " + strings.Join(lines, "\ndata: "), "first\n" + strings.Join(lines, "\n")},
		{"40 comment lines of 1000 bytes, then a last data line", "\n:" + strings.Join(lines, "\n:") + "\ndata: last", "first\nlast"},
		{"one 40000-byte data line", "\ndata: " + long, "first\n" + long},
	}
	for _, shape := range shapes {
		failures := 0
		for earlier := 0; earlier < 72<<10 && failures < 3; earlier += 4093 {
			prefix, count := smallEvents(earlier)
			body := []byte(prefix + "data: first" + shape.rest + "\n\ndata: after\n\n")
			for _, size := range []int{61, 4096} {
				what := fmt.Sprintf("%d bytes of small events, then an event of a data line \"first\" and %s, read %d bytes at a time", len(prefix), shape.what, size)
				if !checkEvents(t, what, chunked(body, size), count, []string{shape.want, "after"}) {
					failures++
					break
				}
			}
		}
	}

	// many small events, one byte per read: the reader must not search again what it has consumed
	small := strings.Repeat("data: {\"choices\":[]}\r\n\r\n", 20000)
	events, end := readEvents(chunked([]byte(small), 1))
	if len(events) != 20000 || end != io.EOF {
		t.Errorf("20000 small events read one byte at a time: got %d events ending in %v, want 20000 and io.EOF", len(events), end)
	}
}

// smallEvents is about n bytes of events of 100 bytes or less, and how many there are.
func smallEvents(n int) (string, int) {
	var b strings.Builder
	count := 0
	for ; b.Len() < n; count++ {
		fmt.Fprintf(&b, "data: {\"n\": %d, \"pad\": \"%s\"}\n\n", count, strings.Repeat("-", min(70, n-b.Len())))
	}
	return b.String(), count
}

// checkEvents reads r to its end and reports (once, as a test error) whether the data of its events,
// after the first skip, are want, in order, and the reading ended in io.EOF.
func checkEvents(t *testing.T, what string, r io.Reader, skip int, want []string) bool {
	t.Helper()
	got, end := readEvents(r)
	got = got[min(skip, len(got)):]
	if end != io.EOF || len(got) != len(want) {
		t.Errorf("%s: got %d event(s) ending in %v, want %d and io.EOF", what, len(got), end, len(want))
		return false
	}
	for i := range want {
		if got[i].Data != want[i] {
			t.Errorf("%s: event %d: %s", what, i+1, firstDifference(got[i].Data, want[i]))
			return false
		}
	}
	return true
}

// firstDifference says where two long texts first differ, with a little of each around that place.
func firstDifference(got, want string) string {
	at := 0
	for at < len(got) && at < len(want) && got[at] == want[at] {
		at++
	}
	from := max(0, at-20)
	return fmt.Sprintf("got %d bytes, want %d; from byte %d they differ: got %.60q, want %.60q", len(got), len(want), at, got[from:], want[from:])
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
