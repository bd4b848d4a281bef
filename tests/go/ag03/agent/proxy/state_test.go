// The ag03 catalog, Go track: a Responses proxy that fails closed. Tests run in catalog order. The
// upstream streams come from the chapter's fixtures (COURSE_FIXTURES); the upstream is scripted in
// the test, and the proxy is served on 127.0.0.1 and asked over HTTP. No test leaves a goroutine
// behind (noLeaks counts them).
//
// This file: the stream state (StreamState), what a stream of events amounts to, and when it amounts
// to nothing but a failure.
package proxy_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"tinyllm/agent/proxy"
)

// The pieces of the small streams the state tests build around one call, fc_1 / call_1.
var (
	head      = map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_m", "status": "in_progress", "model": "m", "output": []any{}}}
	callItem  = map[string]any{"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": ""}
	added     = map[string]any{"type": "response.output_item.added", "output_index": 0, "item": callItem}
	delta     = map[string]any{"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": "{}"}
	done      = map[string]any{"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0, "arguments": "{}"}
	completed = map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_m", "status": "completed", "model": "m"}}
)

// created is a stream that opens with head, then events, numbered.
func created(events ...map[string]any) []byte {
	return framed(numbered(append([]map[string]any{head}, events...)...))
}

// mustFail feeds data and finishes; the code of the failure ("" when there is none).
func failureOf(data []byte, size int) string {
	_, code := outcome(data, size)
	return code
}

func callsOf(turn proxy.Turn) [][3]string {
	var out [][3]string
	for _, c := range turn.Calls {
		out = append(out, [3]string{c.CallID, c.Name, c.Arguments})
	}
	return out
}

func TestHandExample(t *testing.T) {
	noLeaks(t)
	events := eventsOf(t, "tool_call", "")
	state := proxy.NewStreamState()
	for _, e := range events[:len(events)-1] { // everything but response.completed: both done events included
		if err := state.Feed(eventOf(t, e)); err != nil {
			t.Fatalf("feeding %s: %v", e["type"], err)
		}
	}
	if _, err := state.Finish(); codeOf(err) != proxy.CodeMissingTerminal {
		t.Fatalf("before response.completed Finish must fail closed with missing_terminal, got %v", err)
	}
	if err := state.Feed(eventOf(t, events[len(events)-1])); err != nil {
		t.Fatalf("feeding response.completed: %v", err)
	}
	turn, err := state.Finish()
	if err != nil {
		t.Fatalf("after response.completed Finish returns the turn, got %v", err)
	}
	if got, want := callsOf(turn), [][3]string{{"call_paris", "get_weather", `{"city":"Paris"}`}}; !slices.Equal(got, want) {
		t.Fatalf("one complete get_weather call for Paris, got %q", got)
	}
	if args, err := turn.Calls[0].ParsedArguments(); err != nil || !same(args, map[string]any{"city": "Paris"}) {
		t.Errorf("parsed arguments {city: Paris}, got %v, %v", args, err)
	}
	if turn.ID != "resp_call1" || turn.Text != "" {
		t.Errorf("id resp_call1 and no text, got %q and %q", turn.ID, turn.Text)
	}
}

func TestInterleavedDeltasByItem(t *testing.T) {
	noLeaks(t)
	want := [][3]string{{"call_paris", `{"city":"Paris"}`, `{"city":"Paris"}`}, {"call_lisbon", `{"city":"Lisbon"}`, `{"city":"Lisbon"}`}}
	for _, size := range readSizes {
		for round := 0; round < 10; round++ { // whatever order a map would hand them out in
			turn, code := outcome(body(t, "interleaved_calls"), size)
			var got [][3]string
			for _, c := range turn.Calls {
				got = append(got, [3]string{c.CallID, c.Streamed(), c.Arguments})
			}
			if code != "" || !slices.Equal(got, want) {
				t.Fatalf("each fragment goes to the call its item_id names, the calls in output order (read size %d): got %q, failure %q; want %q", size, got, code, want)
			}
		}
	}
	reordered := eventsOf(t, "interleaved_calls", "")
	var opened []int
	for i, e := range reordered {
		if e["type"] == "response.output_item.added" {
			opened = append(opened, i)
		}
	}
	reordered[opened[0]], reordered[opened[1]] = reordered[opened[1]], reordered[opened[0]]
	for round := 0; round < 10; round++ {
		turn, code := outcome(framed(numbered(reordered...)), 65536)
		var got []string
		for _, c := range turn.Calls {
			got = append(got, c.CallID)
		}
		if code != "" || !slices.Equal(got, []string{"call_paris", "call_lisbon"}) {
			t.Fatalf("calls come out by output_index, not by the order they opened: got %q (failure %q)", got, code)
		}
	}
}

func TestFinalArgumentsChecked(t *testing.T) {
	noLeaks(t)
	for _, size := range readSizes {
		if code := failureOf(body(t, "mismatched_arguments"), size); code != proxy.CodeMismatch {
			t.Errorf("deltas spelling Pais under a done event stating Paris fail closed as mismatch (read size %d), got %q", size, code)
		}
	}
	events := eventsOf(t, "mismatched_arguments", "")
	state := proxy.NewStreamState()
	for _, e := range events {
		err := state.Feed(eventOf(t, e))
		if e["type"] == "response.function_call_arguments.done" {
			if codeOf(err) != proxy.CodeMismatch {
				t.Errorf("the disagreement is found at the done event itself, got %v", err)
			}
			break
		}
		if err != nil {
			t.Fatalf("before the done event, %s: %v", e["type"], err)
		}
	}
	turn, code := outcome(body(t, "tool_call"), 65536)
	if code != "" || turn.Calls[0].Streamed() != `{"city":"Paris"}` || turn.Calls[0].Arguments != `{"city":"Paris"}` || !turn.Calls[0].Closed {
		t.Errorf("a done event stating exactly the fragments closes the call with those arguments: %+v (failure %q)", turn.Calls, code)
	}
	if code := failureOf(body(t, "item_done_differs"), 65536); code != proxy.CodeMismatch {
		t.Errorf("a call's output_item.done stating other arguments fails closed as mismatch, got %q", code)
	}
	for _, c := range []struct {
		fragments []string
		final     string
	}{{[]string{`{"city": "Paris"}`}, `{"city":"Paris"}`}, {[]string{`{"city":"Paris"}`, " "}, `{"city":"Paris"}`}, {[]string{`{"city":"Paris"}`}, `{"city":"Paris"} `}} {
		events := []map[string]any{added}
		for _, f := range c.fragments {
			events = append(events, with(delta, "delta", f))
		}
		events = append(events, with(done, "arguments", c.final))
		if _, err := fed(created(events...), 65536); codeOf(err) != proxy.CodeMismatch {
			t.Errorf("byte for byte: fragments %q under %q are a mismatch even where the JSON means the same, got %v", c.fragments, c.final, err)
		}
	}
	if _, err := fed(created(added, with(done, "arguments", `{"city":"Paris"}`)), 65536); codeOf(err) != proxy.CodeMismatch {
		t.Errorf("a done event with no fragment before it disagrees with its (empty) stream, got %v", err)
	}
	for _, name := range []string{"mismatched_arguments", "item_done_differs"} {
		upstream := scripted(t, name, "final_after_tools")
		tools := newWeather(upstream)
		_, err := (&proxy.Proxy{Upstream: upstream, Tools: tools.tools()}).BufferedFinalStream(ctx(t), requestOf(request()))
		if codeOf(err) != proxy.CodeMismatch || len(tools.ran()) != 0 {
			t.Errorf("%s: no tool runs on disputed arguments: failure %v, runs %v", name, err, tools.ran())
		}
		if n := len(upstream.sent()); n != 1 {
			t.Errorf("%s: nothing more is sent upstream, got %d requests", name, n)
		}
	}
}

func TestFinalTextChecked(t *testing.T) {
	noLeaks(t)
	for _, name := range []string{"text_done_differs", "completed_text_differs"} {
		for _, size := range readSizes {
			if code := failureOf(body(t, name), size); code != proxy.CodeMismatch {
				t.Errorf("%s (read size %d): a text whose final statement disagrees with its deltas fails closed, got %q", name, size, code)
			}
		}
	}
	refused, code := outcome(body(t, "refusal"), 65536)
	if code != "" || refused.Refusal != "I can't help with that request." || refused.Text != "" {
		t.Errorf("a refusal is kept as the refusal: text %q, refusal %q (failure %q)", refused.Text, refused.Refusal, code)
	}
	events := eventsOf(t, "refusal", "")
	changed := slices.Clone(events)
	for i, e := range changed {
		if e["type"] == "response.refusal.done" {
			changed[i] = with(e, "refusal", "I can help.")
		}
	}
	if code := failureOf(framed(changed), 65536); code != proxy.CodeMismatch {
		t.Errorf("a refusal.done disagreeing with its deltas fails closed, got %q", code)
	}
	last := len(events) - 1
	terminal := slices.Clone(events)
	response := asMap(terminal[last]["response"])
	message := with(asMap(response["output"].([]any)[0]), "content", []any{map[string]any{"type": "refusal", "refusal": "Something else."}})
	terminal[last] = with(terminal[last], "response", with(response, "output", []any{message}))
	if code := failureOf(framed(terminal), 65536); code != proxy.CodeMismatch {
		t.Errorf("a completed response stating another refusal fails closed, got %q", code)
	}
	slim := eventsOf(t, "final_text", "")
	last = len(slim) - 1
	slim[last] = with(slim[last], "response", with(asMap(slim[last]["response"]), "output", nil))
	if turn, code := outcome(framed(slim), 65536); code != "" || turn.Text != "It is raining in Paris." {
		t.Errorf("a terminal event without an output list keeps the streamed text: %q (failure %q)", turn.Text, code)
	}
	emptied := eventsOf(t, "final_text", "")
	for i, e := range emptied {
		if e["type"] == "response.output_text.done" {
			emptied[i] = with(e, "text", "")
		}
	}
	if code := failureOf(framed(emptied), 65536); code != proxy.CodeMismatch {
		t.Errorf("a text done event stating an empty text under deltas is a disagreement, not a missing text: got %q", code)
	}
	slimChanged := eventsOf(t, "text_done_differs", "")
	last = len(slimChanged) - 1
	slimChanged[last] = with(slimChanged[last], "response", with(asMap(slimChanged[last]["response"]), "output", nil))
	if code := failureOf(framed(slimChanged), 65536); code != proxy.CodeMismatch {
		t.Errorf("a text done event disagreeing with its deltas fails closed even when the completed response does not repeat the text, got %q", code)
	}
	silent := eventsOf(t, "final_text", "")
	last = len(silent) - 1
	silent[last] = with(silent[last], "response", with(asMap(silent[last]["response"]), "output", []any{}))
	if code := failureOf(framed(silent), 65536); code != proxy.CodeMismatch {
		t.Errorf("a completed response whose output holds no text while text streamed fails closed, got %q", code)
	}
}

func TestIncompleteCallsFailClosed(t *testing.T) {
	noLeaks(t)
	for name, want := range map[string]string{"cut_mid_arguments": proxy.CodeMissingTerminal,
		"completed_before_arguments_done": proxy.CodeIncompleteCall, "incomplete_max_tokens": proxy.CodeUpstreamIncomplete} {
		state, err := fed(body(t, name), 65536)
		if err == nil {
			_, err = state.Finish()
		}
		if codeOf(err) != want {
			t.Errorf("%s: fails closed with %q, got %v", name, want, err)
		}
		if name == "incomplete_max_tokens" && !strings.Contains(fmt.Sprint(err), "max_output_tokens") {
			t.Errorf("the incomplete reason is kept in the message: %v", err)
		}
	}
}

func TestMissingTerminalFailsClosed(t *testing.T) {
	noLeaks(t)
	for _, name := range []string{"cut_after_arguments", "cut_inside_event", "cut_inside_terminal"} {
		for _, size := range readSizes {
			if code := failureOf(body(t, name), size); code != proxy.CodeMissingTerminal && code != proxy.CodeTruncated {
				t.Errorf("%s (read size %d): a body without its terminal event fails closed, got %q", name, size, code)
			}
		}
	}
}

func TestUpstreamFailuresFailClosed(t *testing.T) {
	noLeaks(t)
	for _, c := range []struct{ name, code, words string }{
		{"failed_after_done", proxy.CodeUpstreamFailed, "failed to finish"},
		{"error_event", proxy.CodeUpstreamError, "went wrong upstream"},
		{"error_event_nested", proxy.CodeUpstreamError, "overloaded"},
	} {
		_, err := fed(body(t, c.name), 65536)
		if codeOf(err) != c.code {
			t.Errorf("%s: expected %q, got %v", c.name, c.code, err)
		} else if !strings.Contains(err.Error(), c.words) {
			t.Errorf("%s: the upstream's own message is kept, got %q", c.name, err)
		}
	}
}

func TestTerminalCallsMatchStream(t *testing.T) {
	noLeaks(t)
	for _, name := range []string{"completed_mismatch", "completed_missing_call"} {
		if code := failureOf(body(t, name), 65536); code != proxy.CodeMismatch {
			t.Errorf("%s: the completed response must list exactly the streamed calls, got %q", name, code)
		}
	}
	slim := eventsOf(t, "tool_call", "")
	last := len(slim) - 1
	slim[last] = with(slim[last], "response", with(asMap(slim[last]["response"]), "output", nil))
	if turn, code := outcome(framed(slim), 65536); code != "" || len(turn.Calls) != 1 || turn.Calls[0].CallID != "call_paris" {
		t.Errorf("a terminal event without an output list keeps the streamed calls: %q (failure %q)", callsOf(turn), code)
	}
	bare := eventsOf(t, "tool_call", "")
	response := asMap(bare[last]["response"])
	item := asMap(response["output"].([]any)[0])
	bare[last] = with(bare[last], "response", with(response, "output", []any{with(item, "arguments", nil)}))
	if code := failureOf(framed(bare), 65536); code != proxy.CodeMismatch {
		t.Errorf("a completed response listing the call without its arguments does not state what streamed, got %q", code)
	}
}

func TestProtocolViolationsFailClosed(t *testing.T) {
	noLeaks(t)
	other := func(kind string, pairs ...any) map[string]any { return with(map[string]any{"type": kind}, pairs...) }
	second := with(callItem, "id", "fc_2", "call_id", "call_2")
	cases := map[string][]byte{
		"created_twice":        created(added, other("response.created", "response", map[string]any{"id": "resp_m", "status": "in_progress"})),
		"in_progress_other_id": created(other("response.in_progress", "response", map[string]any{"id": "resp_x", "status": "in_progress"})),
		"response_id_field":    created(added, with(delta, "response_id", "resp_x")),
		"item_done_never_added": created(other("response.output_item.done", "output_index", 0,
			"item", with(callItem, "id", "fc_9"))),
		"item_done_before_arguments_done": created(added, delta, other("response.output_item.done", "output_index", 0,
			"item", with(callItem, "arguments", "{}"))),
		"unknown_item_done":              created(added, delta, with(done, "item_id", "fc_9")),
		"unknown_item_while_two_pending": created(added, delta, with(added, "output_index", 1, "item", second), with(delta, "item_id", "fc_9", "output_index", 1)),
	}
	for _, name := range []string{"unknown_item_delta", "duplicate_item", "repeated_sequence", "created_missing",
		"terminal_id_mismatch", "event_after_terminal", "reused_call_id"} {
		cases[name] = body(t, name)
	}
	for name, data := range cases {
		if code := failureOf(data, 65536); code != proxy.CodeProtocol {
			t.Errorf("%s: a stream the state does not understand fails closed as protocol, got %q", name, code)
		}
	}
}

func TestMalformedEventsFailClosed(t *testing.T) {
	noLeaks(t)
	first := framed(numbered(head, added))
	cases := map[string][]byte{
		"created-without-response":    framed(numbered(map[string]any{"type": "response.created"})),
		"call-without-call_id":        created(with(added, "item", with(callItem, "call_id", ""))),
		"call-without-name":           created(with(added, "item", with(callItem, "name", nil))),
		"call-without-id":             created(with(added, "item", with(callItem, "id", nil))),
		"done-without-arguments":      created(added, delta, with(done, "arguments", nil)),
		"delta-after-done":            created(added, delta, done, map[string]any{"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "x"}),
		"completed-not-completed":     created(added, delta, done, with(completed, "response", with(asMap(completed["response"]), "status", "in_progress"))),
		"output-not-a-list":           created(added, delta, done, with(completed, "response", with(asMap(completed["response"]), "output", map[string]any{"0": callItem}))),
		"text-delta-not-text":         created(map[string]any{"type": "response.output_text.delta", "item_id": "msg_1", "delta": nil}),
		"completed-without-id":        created(with(completed, "response", map[string]any{"status": "completed"})),
		"completed-without-response":  created(added, delta, done, map[string]any{"type": "response.completed"}),
		"failed-without-response":     created(map[string]any{"type": "response.failed"}),
		"incomplete-without-response": created(map[string]any{"type": "response.incomplete"}),
		"sequence-number-text":        []byte(strings.Replace(string(first), `"sequence_number":1`, `"sequence_number":"1"`, 1)),
		"sequence-number-bool":        []byte(strings.Replace(string(first), `"sequence_number":1`, `"sequence_number":true`, 1)),
		"sequence-number-fraction":    []byte(strings.Replace(string(first), `"sequence_number":1`, `"sequence_number":1.5`, 1)),
		"sequence-number-step-back":   framed([]map[string]any{with(head, "sequence_number", 4), with(added, "sequence_number", 3)}),
	}
	for name, data := range cases {
		if code := failureOf(data, 65536); code != proxy.CodeProtocol {
			t.Errorf("%s: a malformed event fails closed as protocol, got %q", name, code)
		}
	}
}

func TestLenientWhereTheAPIAllows(t *testing.T) {
	noLeaks(t)
	plain := eventsOf(t, "tool_call", "")
	for i := range plain {
		plain[i] = with(plain[i], "sequence_number", nil)
	}
	if turn, code := outcome(framed(plain), 65536); code != "" || len(turn.Calls) != 1 {
		t.Errorf("events without sequence numbers (some servers send none) are accepted: %q (failure %q)", callsOf(turn), code)
	}
	text := created(map[string]any{"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Hi"},
		map[string]any{"type": "response.output_text.done", "item_id": "msg_1"}, completed)
	if turn, code := outcome(text, 65536); code != "" || turn.Text != "Hi" {
		t.Errorf("a text done event without its text keeps the deltas: %q (failure %q)", turn.Text, code)
	}
	unstated := created(map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_m", "model": "m"}})
	if _, code := outcome(unstated, 65536); code != "" {
		t.Errorf("a completed event that states no status is taken at its word: failure %q", code)
	}
	quiet := created(map[string]any{"type": "response.output_item.added", "output_index": 0},
		map[string]any{"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "delta": "thinking"},
		map[string]any{"type": "response.output_item.added", "output_index": 1, "item": map[string]any{"id": "rs_1", "type": "reasoning"}},
		map[string]any{"type": "response.output_item.done", "output_index": 1, "item": map[string]any{"id": "rs_1", "type": "reasoning"}},
		map[string]any{"type": "response.output_item.done", "output_index": 2}, completed)
	if turn, code := outcome(quiet, 65536); code != "" || turn.Text != "" || len(turn.Calls) != 0 {
		t.Errorf("events the proxy does not need (reasoning, items of other types, items it is not told of) are progress only: %+v (failure %q)", turn, code)
	}
	bare := created(with(added, "item", with(callItem, "arguments", nil)), with(delta, "delta", nil), with(delta, "delta", `{"city":"Paris"}`),
		with(done, "arguments", `{"city":"Paris"}`), map[string]any{"type": "response.output_text.done", "item_id": "msg_1", "text": ""}, completed)
	if turn, code := outcome(bare, 65536); code != "" || len(turn.Calls) != 1 || turn.Calls[0].Arguments != `{"city":"Paris"}` {
		t.Errorf("a call item added without arguments, a fragment without its delta, an empty text stated without deltas: all allowed, got %q (failure %q)", callsOf(turn), code)
	}
}

// callsStream is a response of count calls, each streamed as arguments and closed by final (the
// same when final is "").
func callsStream(count int, arguments, final string) []byte {
	if final == "" {
		final = arguments
	}
	events := []map[string]any{with(head, "response", map[string]any{"id": "resp_lim", "status": "in_progress", "model": "m"})}
	var output []any
	for i := range count {
		item := with(callItem, "id", fmt.Sprintf("fc_%d", i), "call_id", fmt.Sprintf("call_%d", i))
		events = append(events, with(added, "output_index", i, "item", item),
			with(delta, "item_id", item["id"], "output_index", i, "delta", arguments),
			with(done, "item_id", item["id"], "output_index", i, "arguments", final))
		output = append(output, with(item, "arguments", final))
	}
	events = append(events, map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_lim", "status": "completed", "model": "m", "output": output}})
	return framed(numbered(events...))
}

// textStream is text and refusal deltas of chars characters in all (the text made of piece, the
// last 1,000 a refusal, which crosses the bound): they count against one bound.
func textStream(chars int, piece string) []byte {
	events := []map[string]any{with(head, "response", map[string]any{"id": "resp_txt", "status": "in_progress", "model": "m"})}
	text := func(n int) map[string]any {
		return map[string]any{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": strings.Repeat(piece, n)}
	}
	for range chars/1000 - 1 {
		events = append(events, text(1000))
	}
	events = append(events, text(chars%1000), map[string]any{"type": "response.refusal.delta", "item_id": "msg_1",
		"output_index": 0, "content_index": 1, "delta": strings.Repeat("r", 1000)})
	events = append(events, map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_txt", "status": "completed", "model": "m"}})
	return framed(numbered(events...))
}

func TestLimitsAtAndPastBounds(t *testing.T) {
	noLeaks(t)
	if turn, code := outcome(callsStream(proxy.MaxPendingCalls, `{"city":"Paris"}`, ""), 65536); code != "" || len(turn.Calls) != proxy.MaxPendingCalls {
		t.Errorf("%d calls are allowed: got %d (failure %q)", proxy.MaxPendingCalls, len(turn.Calls), code)
	}
	if _, err := fed(callsStream(proxy.MaxPendingCalls+1, `{"city":"Paris"}`, ""), 65536); codeOf(err) != proxy.CodeLimit {
		t.Errorf("call %d fails closed as limit, got %v", proxy.MaxPendingCalls+1, err)
	}
	for _, letter := range []string{"P", "é", "東"} { // characters, not bytes: "é" is 2 bytes, "東" 3
		exact := `{"city":"` + strings.Repeat(letter, proxy.MaxArgumentChars-11) + `"}`
		if turn, code := outcome(callsStream(1, exact, ""), 65536); code != "" || turn.Calls[0].Arguments != exact {
			t.Errorf("arguments of exactly %d characters pass (%q characters, %d bytes): failure %q", proxy.MaxArgumentChars, letter, len(exact), code)
		}
		over := `{"city":"` + strings.Repeat(letter, proxy.MaxArgumentChars-10) + `"}`
		for _, c := range [][2]string{{over, exact}, {exact, over}} {
			if _, err := fed(callsStream(1, c[0], c[1]), 65536); codeOf(err) != proxy.CodeLimit {
				t.Errorf("arguments of %d characters (%q), streamed or final, fail closed as limit, got %v", proxy.MaxArgumentChars+1, letter, err)
			}
		}
		brought := map[string]any{"id": "fc_0", "type": "function_call", "call_id": "call_0", "name": "get_weather", "arguments": over}
		if _, err := fed(created(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": brought}), 65536); codeOf(err) != proxy.CodeLimit {
			t.Errorf("arguments the added item brings count: %d characters (%q) fail closed as limit at once, got %v", proxy.MaxArgumentChars+1, letter, err)
		}
	}
	for _, letter := range []string{"x", "ü"} {
		turn, code := outcome(textStream(proxy.MaxTextChars, letter), 65536)
		if got := len([]rune(turn.Text + turn.Refusal)); code != "" || got != proxy.MaxTextChars {
			t.Errorf("%d characters of text and refusal (%q) pass: got %d (failure %q)", proxy.MaxTextChars, letter, got, code)
		}
		if _, err := fed(textStream(proxy.MaxTextChars+1, letter), 65536); codeOf(err) != proxy.CodeLimit {
			t.Errorf("text and refusal of %d characters (%q) together fail closed as limit, got %v", proxy.MaxTextChars+1, letter, err)
		}
	}
}

func TestReadBoundaries(t *testing.T) {
	noLeaks(t)
	loadFixtures(t)
	for _, name := range streamNames {
		var outcomes []string
		for _, size := range readSizes {
			turn, code := outcome(body(t, name), size)
			var calls []string
			for _, c := range turn.Calls {
				calls = append(calls, c.CallID+" "+c.Arguments)
			}
			outcomes = append(outcomes, fmt.Sprintf("failure %q, text %q, refusal %q, calls %q", code, turn.Text, turn.Refusal, calls))
		}
		if outcomes[0] != outcomes[1] || outcomes[0] != outcomes[2] {
			t.Errorf("%s: the same outcome at read sizes %v: %q", name, readSizes, outcomes)
		}
	}
}

func TestMetadataPreserved(t *testing.T) {
	noLeaks(t)
	turn, code := outcome(body(t, "final_text"), 65536)
	events := eventsOf(t, "final_text", "")
	final := asMap(events[len(events)-1]["response"])
	usage, _ := json.Marshal(turn.Usage)
	if code != "" || turn.ID != "resp_text1" || turn.Model != final["model"] || fmt.Sprint(turn.CreatedAt) != fmt.Sprint(final["created_at"]) ||
		turn.Status != "completed" || !same(json.RawMessage(usage), final["usage"]) || turn.Text != "It is raining in Paris." {
		t.Errorf("id, model, created_at, status, usage and text of the final response: got %+v, usage %s (failure %q); want those of %s", turn, usage, code, show(final))
	}
	for round := 0; round < 10; round++ { // whatever order a map would hand the parts out in
		parts, code := outcome(body(t, "text_parts_and_items"), 65536)
		if code != "" || parts.Text != "Rain in Paris; sun in Lisbon. Enjoy." {
			t.Fatalf("every part of every message, in the order the parts began: %q (failure %q)", parts.Text, code)
		}
	}
	refused, code := outcome(body(t, "refusal"), 65536)
	if code != "" || refused.ID != "resp_refuse1" || refused.Refusal != "I can't help with that request." {
		t.Errorf("a refusal is part of what the turn keeps: %s %q (failure %q)", refused.ID, refused.Refusal, code)
	}
	preamble, code := outcome(body(t, "text_then_call"), 65536)
	if code != "" || preamble.Text != "Let me check." || len(preamble.Calls) != 1 {
		t.Errorf("text beside a call is kept with it: %q, %d calls (failure %q)", preamble.Text, len(preamble.Calls), code)
	}
}
