package proxy_test

// The policies (policy.go): when tools run, what the client is answered, and that the upstream is
// closed whatever happens; most of it asked over HTTP, as clients ask.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tinyllm/agent/proxy"
)

// items is the input items of an upstream request, by type.
func items(t *testing.T, sent map[string]any, kind string) []map[string]any {
	t.Helper()
	input, _ := sent["input"].([]any)
	var out []map[string]any
	for _, item := range input {
		if asMap(item)["type"] == kind {
			out = append(out, asMap(item))
		}
	}
	return out
}

// usageSum is the usage of the final events of fixtures, added up.
func usageSum(t *testing.T, names ...string) map[string]any {
	total := map[string]int{}
	for _, name := range names {
		events := eventsOf(t, name, "")
		var u proxy.Usage
		raw, _ := json.Marshal(asMap(events[len(events)-1]["response"])["usage"])
		json.Unmarshal(raw, &u)
		total["in"] += u.InputTokens
		total["cached"] += u.InputTokensDetails.CachedTokens
		total["written"] += u.InputTokensDetails.CacheWriteTokens
		total["out"] += u.OutputTokens
		total["reasoning"] += u.OutputTokensDetails.ReasoningTokens
	}
	return map[string]any{"input_tokens": total["in"], "input_tokens_details": map[string]any{"cached_tokens": total["cached"],
		"cache_write_tokens": total["written"]}, "output_tokens": total["out"], "output_tokens_details": map[string]any{
		"reasoning_tokens": total["reasoning"]}, "total_tokens": total["in"] + total["out"]}
}

func TestToolRunsAfterCompleteArguments(t *testing.T) {
	noLeaks(t)
	upstream := scripted(t, "tool_call", "final_after_tools")
	upstream.readSize = 7
	tools := newWeather(upstream)
	turn, err := (&proxy.Proxy{Upstream: upstream, Tools: tools.tools()}).BufferedFinalStream(ctx(t), requestOf(request()))
	if err != nil {
		t.Fatalf("a tool call then a final answer: %v", err)
	}
	if runs := tools.ran(); !same(runs, []any{map[string]any{"city": "Paris"}}) {
		t.Errorf("get_weather runs exactly once, with the parsed arguments: %s", show(runs))
	}
	if after := tools.ranAfterEnd(); !slices.Equal(after, []bool{true}) {
		t.Errorf("the tool runs only after the upstream answer was read to its end and closed: %v", after)
	}
	if turn.Text != "Paris: light rain, 14 C; Lisbon: sunny, 21 C." {
		t.Errorf("the final answer is the text-only response: %q", turn.Text)
	}
	sent := upstream.sent()
	if len(sent) != 2 {
		t.Fatalf("two upstream requests, got %d", len(sent))
	}
	calls, outputs := items(t, sent[1], "function_call"), items(t, sent[1], "function_call_output")
	if len(calls) != 1 || calls[0]["call_id"] != "call_paris" || calls[0]["name"] != "get_weather" || calls[0]["arguments"] != `{"city":"Paris"}` {
		t.Fatalf("the call goes back upstream as it was made: %s", show(calls))
	}
	var result map[string]any
	output, _ := outputs[0]["output"].(string)
	json.Unmarshal([]byte(output), &result)
	if len(outputs) != 1 || outputs[0]["call_id"] != "call_paris" || result["forecast"] != "light rain, 14 C" {
		t.Errorf("its result goes back with the same call_id: %s", show(outputs))
	}
	input := sent[1]["input"].([]any)
	if slices.IndexFunc(input, func(i any) bool { return asMap(i)["type"] == "function_call" }) >
		slices.IndexFunc(input, func(i any) bool { return asMap(i)["type"] == "function_call_output" }) {
		t.Errorf("the call comes before its result: %s", show(input))
	}
	both := scripted(t, "interleaved_calls", "final_after_tools")
	tools = newWeather(both)
	s := serve(t, &proxy.Proxy{Upstream: both, Tools: tools.tools()})
	if got := ask(t, s, request()); got.status != 200 {
		t.Errorf("over HTTP, two calls then an answer: %s", got)
	}
	if runs := tools.ran(); !same(runs, []any{map[string]any{"city": "Paris"}, map[string]any{"city": "Lisbon"}}) {
		t.Errorf("both interleaved calls run once each, in output order: %s", show(runs))
	}
}

func TestBatchValidatedBeforeAnyCall(t *testing.T) {
	noLeaks(t)
	for _, name := range []string{"unknown_tool", "second_call_bad_arguments", "arguments_not_json", "arguments_not_object"} {
		upstream := scripted(t, name, "final_after_tools")
		tools := newWeather(upstream)
		_, err := (&proxy.Proxy{Upstream: upstream, Tools: tools.tools()}).BufferedFinalStream(ctx(t), requestOf(request()))
		if runs := tools.ran(); len(runs) != 0 {
			t.Errorf("%s: no call of the batch runs when one of them cannot (%v): ran %s", name, err, show(runs))
		}
		if code := codeOf(err); code != proxy.CodeUnknownTool && code != proxy.CodeBadArguments {
			t.Errorf("%s: fails closed with unknown_tool or bad_arguments, got %v", name, err)
		}
		if name == "unknown_tool" && !strings.Contains(fmt.Sprint(err), "delete_files") {
			t.Errorf("the failure names the tool the proxy does not run: %v", err)
		}
		if n := len(upstream.sent()); n != 1 {
			t.Errorf("%s: nothing is sent upstream after a batch fails, got %d requests", name, n)
		}
	}
}

func TestToolFailureFailsClosed(t *testing.T) {
	noLeaks(t)
	upstream := scripted(t, "interleaved_calls", "final_after_tools")
	var mu sync.Mutex
	var ran []string
	broken := errors.New("the weather service is down")
	tools := proxy.Tools{"get_weather": func(_ context.Context, arguments map[string]any) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, fmt.Sprint(arguments["city"]))
		return "", broken
	}}
	got := ask(t, serve(t, &proxy.Proxy{Upstream: upstream, Tools: tools}), request())
	message := failedClosed(t, got, proxy.CodeToolFailed)
	mu.Lock()
	stopped := slices.Equal(ran, []string{"Paris"})
	mu.Unlock()
	if !strings.Contains(message, "weather service is down") || !stopped {
		t.Errorf("the tool's words are kept (%q), and the batch stops at the tool that failed: ran %q", message, ran)
	}
	if len(upstream.sent()) != 1 || !upstream.allClosed() {
		t.Errorf("nothing more goes upstream (%d requests), every upstream body is closed", len(upstream.sent()))
	}
	_, err := proxy.RunCalls(ctx(t), []*proxy.FunctionCall{{CallID: "call_1", Name: "get_weather", Arguments: "{}", Closed: true}}, tools)
	if !errors.Is(err, broken) {
		t.Errorf("the tool's own error stays reachable (errors.Is) through the failure: %v", err)
	}
}

// failures are fixtures that fail closed: the code the client is answered with, and words of the
// upstream it keeps.
var failures = map[string][2]string{
	"cut_after_arguments": {"missing_terminal", ""}, "cut_mid_arguments": {"missing_terminal", ""},
	"cut_inside_event": {"truncated", ""}, "failed_after_done": {"upstream_failed", "failed to finish"},
	"error_event_nested": {"upstream_error", "overloaded"}, "completed_mismatch": {"mismatch", ""},
	"repeated_sequence": {"protocol", ""}, "mismatched_arguments": {"mismatch", ""}, "text_done_differs": {"mismatch", ""},
	"completed_text_differs": {"mismatch", ""}, "item_done_differs": {"mismatch", ""}, "unknown_item_delta": {"protocol", ""},
	"terminal_id_mismatch": {"protocol", ""}, "completed_before_arguments_done": {"incomplete_call", ""},
}

func TestFailClosedAnswers502(t *testing.T) {
	noLeaks(t)
	for name, want := range failures {
		for _, stream := range []bool{false, true} {
			upstream := scripted(t, name, "final_after_tools")
			tools := newWeather(upstream)
			got := ask(t, serve(t, &proxy.Proxy{Upstream: upstream, Tools: tools.tools()}), request("stream", stream))
			if message := failedClosed(t, got, want[0]); !strings.Contains(message, want[1]) {
				t.Errorf("%s: the error keeps the upstream's words (%q): %q", name, want[1], message)
			}
			if runs := tools.ran(); len(runs) != 0 {
				t.Errorf("%s: nothing ran: %s", name, show(runs))
			}
		}
	}
}

func TestUpstreamClosedEveryTime(t *testing.T) {
	noLeaks(t)
	for _, script := range [][]any{{"final_text"}, {"tool_call", "final_after_tools"}, {"cut_mid_arguments"}, {"error_event"},
		{"tool_call", "cut_inside_event"}, {"unknown_tool"}, {"mismatched_arguments"}} {
		for _, policy := range []proxy.Policy{proxy.BufferedFinalStream, proxy.ProgressEvents} {
			upstream := scripted(t, script...)
			upstream.readSize = 7
			ask(t, serve(t, &proxy.Proxy{Upstream: upstream, Tools: newWeather(upstream).tools(), Policy: policy}), request("stream", true))
			if !upstream.allClosed() {
				t.Errorf("%s on %v: every upstream body is closed", policy, script)
			}
		}
	}
	truncated := &proxy.FailClosed{Code: proxy.CodeTruncated, Message: "connection reset (scripted)"}
	broken := breaking(3, truncated, pieces(body(t, "tool_call"), 20)...)
	upstream := scripted(t, broken)
	got := ask(t, serve(t, &proxy.Proxy{Upstream: upstream, Tools: newWeather(upstream).tools()}), request())
	if got.status != 502 || !broken.isClosed() {
		t.Errorf("an upstream body that breaks mid-way is closed all the same: %s, closed %v", got, broken.isClosed())
	}
	passing := scripted(t, breaking(1, truncated, []byte(": one\n\n"), []byte(": two\n\n")), "final_text", "final_text")
	s := serve(t, &proxy.Proxy{Upstream: passing, Tools: newWeather(nil).tools()})
	stateless := map[string]any{"model": "m", "input": "hi", "stream": true}
	ask(t, s, stateless)
	ask(t, s, stateless)
	left := openStream(t, s, stateless)
	left.until("response.created")
	left.resp.Body.Close() // the client leaves early
	for i, b := range passing.answered() {
		if !b.waitClosed() {
			t.Errorf("pass-through body %d of 3 (broken, read to its end, left early) is closed", i+1)
		}
	}
}

func TestClientDisconnectClosesUpstream(t *testing.T) {
	noLeaks(t)
	// pass-through: the client leaves while the upstream is silent, as a model thinking
	chunks := [][]byte{[]byte(": first\n\n")}
	for range 1000 {
		chunks = append(chunks, []byte(": keep-alive "+strings.Repeat("x", 1000)+"\n\n"))
	}
	stalled := gated(1, chunks...)
	s := serve(t, &proxy.Proxy{Upstream: scripted(t, stalled), Tools: newWeather(nil).tools()})
	conn := rawAsk(t, s, map[string]any{"model": "m", "input": "hi", "stream": true})
	if !conn.until(": first") {
		t.Fatalf("the first chunk of a pass-through reaches the client at once: %q", conn.seen)
	}
	conn.conn.Close()
	if promptly, by := stalled.closedPromptly(); !promptly {
		t.Errorf("a client gone while the upstream is silent has the upstream closed at once (the request's ctx, passed on upstream, ends its read): it waited for %q", by)
	}
	if read, _, _ := stalled.state(); read > 3 {
		t.Errorf("and the upstream is closed within a few chunks: after %d of %d", read, len(chunks))
	}
	// every policy: the client leaves during progress, or before anything went out
	for _, c := range []struct {
		policy     proxy.Policy
		forwarding bool
		marker     string // what the client waits for before it leaves ("": the upstream to be read)
	}{{proxy.ProgressEvents, false, "response.output_text.delta"}, {proxy.ProgressEvents, true, "response.output_text.delta"},
		{proxy.ProgressEvents, false, "response.created"}, {proxy.BufferedFinalStream, false, ""}} {
		events := eventsOf(t, "text_then_call", "")
		at := slices.IndexFunc(events, func(e map[string]any) bool { return e["type"] == "response.output_text.delta" }) + 1
		var chunks [][]byte
		for _, e := range events {
			chunks = append(chunks, frame(e))
		}
		stalled := gated(at, chunks...)
		upstream := scripted(t, stalled, "final_after_tools")
		tools := newWeather(upstream)
		s := serve(t, &proxy.Proxy{Upstream: upstream, Tools: tools.tools(), Policy: c.policy, ForwardToolEvents: c.forwarding})
		conn := rawAsk(t, s, request("stream", true))
		if c.marker != "" && !conn.until(c.marker) {
			t.Fatalf("%s: %q reaches the client while the upstream still streams: %q", c.policy, c.marker, conn.seen)
		}
		if c.marker == "" && !stalled.waitGate() {
			t.Fatalf("%s: the proxy reads the upstream", c.policy)
		}
		conn.conn.Close()
		if promptly, by := stalled.closedPromptly(); !promptly {
			t.Errorf("%s (forwarding %v, left after %q): a client gone has the silent upstream closed at once (the request's ctx, passed on upstream): it waited for %q",
				c.policy, c.forwarding, c.marker, by)
		}
		time.Sleep(20 * time.Millisecond) // what the proxy might still do wrongly, it does now
		if runs := tools.ran(); len(runs) != 0 || len(upstream.sent()) != 1 {
			t.Errorf("%s: with the client gone, nothing runs (%s) and nothing more goes upstream (%d requests)", c.policy, show(runs), len(upstream.sent()))
		}
	}
	// a tool that runs while the client leaves is told so through its ctx
	started, saw := make(chan struct{}), make(chan string, 1)
	slow := proxy.Tools{"get_weather": func(ctx context.Context, _ map[string]any) (string, error) {
		close(started)
		select {
		case <-ctx.Done():
			saw <- "ctx"
			return "", ctx.Err()
		case <-time.After(patience):
			saw <- "patience"
			return `{"forecast":"unknown"}`, nil
		}
	}}
	upstream := scripted(t, "tool_call", "final_after_tools")
	conn = rawAsk(t, serve(t, &proxy.Proxy{Upstream: upstream, Tools: slow}), request())
	select {
	case <-started:
	case <-time.After(patience):
		t.Fatal("the tool never ran")
	}
	conn.conn.Close()
	if by := <-saw; by != "ctx" {
		t.Errorf("a tool running when the client leaves sees its ctx end (the request's ctx, passed on): it waited for %s", by)
	}
	time.Sleep(20 * time.Millisecond)
	if len(upstream.sent()) != 1 || !upstream.allClosed() {
		t.Errorf("nothing more goes upstream once the client left (%d requests), every upstream body closed", len(upstream.sent()))
	}
	// a client whose connection fails on a write: the proxy stops there, reads nothing more, runs nothing
	for _, c := range []struct {
		name    string
		payload map[string]any
		policy  proxy.Policy
		failAt  int
	}{{"pass-through", map[string]any{"model": "m", "input": "hi", "stream": true}, "", 2},
		{"progress, at its first event", request("stream", true), proxy.ProgressEvents, 1},
		{"progress, at a text delta", request("stream", true), proxy.ProgressEvents, 2}} {
		long := append(body(t, "text_then_call"), bytes.Repeat([]byte(": padding\n\n"), 2000)...)
		upstream := scripted(t, pieces(long, 64), "final_after_tools")
		tools := newWeather(upstream)
		gone := newGoneClient(c.failAt)
		err := (&proxy.Proxy{Upstream: upstream, Tools: tools.tools(), Policy: c.policy}).Handle(ctx(t), gone, requestOf(c.payload))
		read, closed, _ := upstream.answered()[0].state()
		if err == nil || !closed || read > 60 || gone.failed != 1 || len(tools.ran()) != 0 || len(upstream.sent()) != 1 {
			t.Errorf("%s: a write that fails ends the answer: Handle returns an error (%v), closes the upstream (%v) after a few chunks (%d read), "+
				"writes nothing more (%d failed writes), runs nothing (%d) and sends nothing more upstream (%d requests)",
				c.name, err, closed, read, gone.failed, len(tools.ran()), len(upstream.sent()))
		}
	}
}

func TestPassThroughByteIdentical(t *testing.T) {
	noLeaks(t)
	odd := [][]byte{[]byte(": keep-alive\r\n"), []byte("event: response.created\r\ndata: {\"type\":\"response.created\","),
		[]byte("\"response\":{\"id\":\"r\"}}\r\n\r\n"), []byte("data: not even json\n\n"), []byte("\xef\xbb\xbftrailing")}
	answerOf := gated(1, odd...)
	upstream := scripted(t, answerOf)
	s := serve(t, &proxy.Proxy{Upstream: upstream, Tools: newWeather(nil).tools()})
	stateless := map[string]any{"model": "m", "input": "hi", "stream": true, "store": false, "metadata": map[string]any{"who": "test"}}
	got := openStream(t, s, stateless)
	if got.resp.StatusCode != 200 || got.resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("a streamed pass-through: %d %s", got.resp.StatusCode, got.resp.Header.Get("Content-Type"))
	}
	if !got.until(": keep-alive\r\n") {
		t.Fatalf("the first chunk reaches the client: %q", got.seen)
	}
	if by := answerOf.release(); by != "gate" {
		t.Errorf("each chunk goes out as it arrives (written and flushed), not after the upstream's next one: the upstream waited for %s", by)
	}
	all, err := got.rest()
	if err != nil || !bytes.Equal(all, bytes.Join(odd, nil)) {
		t.Errorf("every byte forwarded unchanged (no parsing, no re-framing, no tidying): got %q (%v), want %q", all, err, bytes.Join(odd, nil))
	}
	if sent := upstream.sent(); len(sent) != 1 || !same(sent[0], stateless) {
		t.Errorf("the client's request goes upstream unchanged: %s", show(sent))
	}
	if !upstream.allClosed() {
		t.Error("a pass-through read to its end closes the upstream")
	}
	plain := scripted(t, [][]byte{[]byte(`{"id": "resp_1",  "object":`), []byte(`"response"}`)})
	got2 := ask(t, serve(t, &proxy.Proxy{Upstream: plain, Tools: newWeather(nil).tools()}), map[string]any{"model": "m", "input": "hi"})
	if !strings.HasPrefix(got2.header.Get("Content-Type"), "application/json") || string(got2.body) != `{"id": "resp_1",  "object":"response"}` {
		t.Errorf("a non-streamed pass-through forwards the JSON body byte for byte: %s", got2)
	}
	if sent := plain.sent(); !same(sent, []any{map[string]any{"model": "m", "input": "hi"}}) {
		t.Errorf("a non-streamed request goes upstream as it is, not turned into a stream: %s", show(sent))
	}
	refused := scripted(t, proxy.Fail(proxy.CodeUpstreamStatus, "the upstream answered 429: slow down"))
	failedClosed(t, ask(t, serve(t, &proxy.Proxy{Upstream: refused, Tools: newWeather(nil).tools()}), stateless), proxy.CodeUpstreamStatus)
	oddReads := newBody([]byte("a"), []byte{}, []byte("b"), []byte("c"))
	oddReads.joined = true
	got3 := ask(t, serve(t, &proxy.Proxy{Upstream: scripted(t, oddReads), Tools: newWeather(nil).tools()}), map[string]any{"model": "m", "input": "hi", "stream": true})
	if string(got3.body) != "abc" || got3.err != nil {
		t.Errorf("a Read of no bytes is not the end, and the last bytes may come with io.EOF (io.Reader allows both): got %q (%v), want \"abc\"", got3.body, got3.err)
	}
	emptyTools := scripted(t, "final_text")
	got4 := ask(t, serve(t, &proxy.Proxy{Upstream: emptyTools, Tools: newWeather(nil).tools()}), map[string]any{"model": "m", "input": "hi", "stream": true, "tools": []any{}})
	if !bytes.Equal(got4.body, body(t, "final_text")) || !same(emptyTools.sent()[0]["tools"], []any{}) {
		t.Errorf("a request whose tools are an empty list passes through too: %s", got4)
	}
}

func TestPassThroughCutVisible(t *testing.T) {
	noLeaks(t)
	stateless := map[string]any{"model": "m", "input": "hi", "stream": true}
	for _, cause := range []error{&proxy.FailClosed{Code: proxy.CodeTruncated, Message: "the upstream connection broke"}, syscall.ECONNRESET} {
		broken := breaking(2, cause, []byte("event: a\ndata: {}\n\n"), []byte("event: b\n"))
		broken.joined = true // the bytes before the break come with it
		recorder := httptest.NewRecorder()
		err := proxy.PassThrough(recorder, broken, proxy.ContentSSE)
		if !errors.Is(err, cause) || recorder.Body.String() != "event: a\ndata: {}\n\nevent: b\n" {
			t.Errorf("PassThrough gives the chunks before the break (%q), then returns the break as it came (%v), for %T", recorder.Body.String(), err, cause)
		}
		if !recorder.Flushed || recorder.Code != 200 || recorder.Header().Get("Content-Type") != proxy.ContentSSE {
			t.Errorf("PassThrough answers 200 with the content type, and flushes what it writes: %d %q flushed %v", recorder.Code, recorder.Header().Get("Content-Type"), recorder.Flushed)
		}
	}
	whole := body(t, "final_text")
	cut := breaking(3, &proxy.FailClosed{Code: proxy.CodeTruncated, Message: "reset"}, pieces(whole, 40)...)
	s := serve(t, &proxy.Proxy{Upstream: scripted(t, cut, [][]byte{whole[:10], {}, whole[10:]}), Tools: newWeather(nil).tools()})
	got := openStream(t, s, stateless)
	if got.resp.StatusCode != 200 || !slices.Equal(got.resp.TransferEncoding, []string{"chunked"}) {
		t.Errorf("a pass-through streams in chunks, so that a cut can show: %d %v", got.resp.StatusCode, got.resp.TransferEncoding)
	}
	partial, err := got.rest()
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("the client reads a body cut short (io.ErrUnexpectedEOF), never a clean end: got %v", err)
	}
	if !bytes.Equal(partial, whole[:120]) {
		t.Errorf("the client gets the bytes before the break: %q", partial)
	}
	if !cut.waitClosed() {
		t.Error("the broken upstream is closed")
	}
	if again := ask(t, s, stateless); !bytes.Equal(again.body, whole) || again.err != nil {
		t.Errorf("the proxy goes on serving after a cut, an empty upstream read included: %s (%v)", again, again.err)
	}
}

func TestProgressForwardsTextNotTools(t *testing.T) {
	noLeaks(t)
	events := eventsOf(t, "text_then_call", "")
	at := slices.IndexFunc(events, func(e map[string]any) bool { return e["type"] == "response.output_text.delta" }) + 1
	before, after := pieces(framed(events[:at]), 7), pieces(framed(events[at:]), 7)
	first := gated(len(before), append(before, after...)...)
	upstream := scripted(t, first, "final_after_tools")
	tools := newWeather(upstream)
	s := serve(t, &proxy.Proxy{Upstream: upstream, Tools: tools.tools(), Policy: proxy.ProgressEvents})
	got := openStream(t, s, request("stream", true))
	if !got.until("response.output_text.delta") {
		t.Fatalf("the first text delta reaches the client: %q", got.seen)
	}
	if runs := tools.ran(); first.isExhausted() || len(runs) != 0 {
		t.Errorf("text goes out while the upstream still streams, before any tool runs: %s", show(runs))
	}
	if by := first.release(); by != "gate" {
		t.Errorf("each text delta is written and flushed at once, not held until the upstream's next chunk: the upstream waited for %s", by)
	}
	data, err := got.rest()
	if err != nil || got.resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("an event stream read to its end: %v, %q", err, got.resp.Header.Get("Content-Type"))
	}
	downstream := sseEvents(t, data)
	k := kinds(downstream)
	if k[0] != "response.created" || k[len(k)-1] != "response.completed" {
		t.Errorf("created first, completed last: %q", k)
	}
	for _, e := range downstream {
		if strings.Contains(e["type"].(string), "function_call") || asMap(e["item"])["type"] == "function_call" {
			t.Errorf("no tool-call event reaches the client: %s", show(e))
		}
	}
	var text strings.Builder
	for _, e := range downstream {
		if e["type"] == "response.output_text.delta" {
			text.WriteString(e["delta"].(string))
			if e["item_id"] != asMap(downstream[2]["item"])["id"] || fmt.Sprint(e["output_index"]) != "0" || fmt.Sprint(e["content_index"]) != "0" {
				t.Errorf("each forwarded delta belongs to the downstream message item: %s", show(e))
			}
		}
	}
	if text.String() != "Let me check.Paris: light rain, 14 C; Lisbon: sunny, 21 C." {
		t.Errorf("every text delta forwarded: %q", text.String())
	}
	if runs := tools.ran(); !same(runs, []any{map[string]any{"city": "Paris"}}) {
		t.Errorf("the tool still runs once, after its response completed: %s", show(runs))
	}
	opened, final := asMap(downstream[0]["response"]), asMap(downstream[len(downstream)-1]["response"])
	upstreamFirst := asMap(events[0]["response"])
	for _, r := range []map[string]any{opened, final} {
		if r["id"] != upstreamFirst["id"] || r["model"] != upstreamFirst["model"] || fmt.Sprint(r["created_at"]) != fmt.Sprint(upstreamFirst["created_at"]) {
			t.Errorf("the downstream response is named after the first upstream one, from created to completed: %s", show(r))
		}
	}
	if opened["status"] != "in_progress" || final["status"] != "completed" {
		t.Errorf("created in progress, completed completed: %s, %s", show(opened["status"]), show(final["status"]))
	}
	if !same(final["usage"], usageSum(t, "text_then_call", "final_after_tools")) {
		t.Errorf("with the usage of every upstream response added up: %s", show(final["usage"]))
	}
	if message := asMap(final["output"].([]any)[0]); messageText(final, "output_text") != text.String() || !strings.HasPrefix(message["id"].(string), "msg_") {
		t.Errorf("completed holds all the text forwarded, in one message: %s", show(message))
	}
	var statuses []string
	for _, e := range downstream {
		if strings.HasPrefix(e["type"].(string), "response.output_item") {
			statuses = append(statuses, asMap(e["item"])["status"].(string))
		}
	}
	if !slices.Equal(statuses, []string{"in_progress", "completed"}) {
		t.Errorf("the message item is added in progress and done completed: %q", statuses)
	}
	if problems := streamProblems(downstream); problems != nil {
		t.Errorf("the stream reads as the official SDK reads one: %q", problems)
	}
	if second := upstream.sent()[1]; second["stream"] != true || len(items(t, second, "function_call")) != 1 || len(items(t, second, "function_call_output")) != 1 {
		t.Errorf("progress mode sends the call and its result upstream as the buffered policy does: %s", show(second))
	}
	quiet := scripted(t, "tool_call", "final_after_tools")
	events2 := sseEvents(t, ask(t, serve(t, &proxy.Proxy{Upstream: quiet, Tools: newWeather(quiet).tools(), Policy: proxy.ProgressEvents}), request()).body)
	for _, e := range events2 {
		if strings.Contains(e["type"].(string), "function_call") || asMap(e["item"])["type"] == "function_call" {
			t.Errorf("no tool-call event goes out unless forwarding is on: %s", show(e))
		}
	}
	// two requests of three responses each (the call ids of each response its own), the same proxy
	forwarding := scripted(t, "text_then_call", taggedBody(t, "interleaved_calls", "b"), "final_after_tools",
		taggedBody(t, "text_then_call", "c"), taggedBody(t, "interleaved_calls", "d"), "final_after_tools")
	s2 := serve(t, &proxy.Proxy{Upstream: forwarding, Tools: newWeather(forwarding).tools(), Policy: proxy.ProgressEvents, ForwardToolEvents: true})
	forwarded := sseEvents(t, ask(t, s2, request("stream", true)).body)
	again := sseEvents(t, ask(t, s2, request("stream", true)).body)
	if k := kinds(forwarded); k[len(k)-1] != "response.completed" || len(forwarding.sent()) != 6 {
		t.Errorf("three responses and their tools, forwarded, end in response.completed: %q after %d upstream requests", k[len(k)-1], len(forwarding.sent()))
	}
	var numbered, renumbered []string
	for _, e := range forwarded {
		if e["type"] == "response.output_item.added" {
			numbered = append(numbered, fmt.Sprint(e["output_index"]))
		}
	}
	for _, e := range again {
		if e["type"] == "response.output_item.added" {
			renumbered = append(renumbered, fmt.Sprint(e["output_index"]))
		}
	}
	if !slices.Equal(numbered, renumbered) {
		t.Errorf("each request numbers its forwarded calls afresh: nothing of one request is kept for the next (%q, then %q)", numbered, renumbered)
	}
	k = kinds(forwarded)
	count := func(kind string) int {
		return len(slices.DeleteFunc(slices.Clone(k), func(x string) bool { return x != kind }))
	}
	if count("response.function_call_arguments.delta") != 7 || count("response.function_call_arguments.done") != 3 {
		t.Errorf("with ForwardToolEvents every call's events are forwarded: %q", k)
	}
	type place struct {
		index  string
		id     any
		callID any
	}
	var places []place
	for _, e := range forwarded {
		if e["type"] == "response.output_item.added" {
			item := asMap(e["item"])
			places = append(places, place{fmt.Sprint(e["output_index"]), item["id"], item["call_id"]})
		}
	}
	ids := map[any]bool{}
	var indexes []string
	for _, p := range places {
		ids[p.id] = true
		indexes = append(indexes, p.index)
	}
	if !slices.Equal(indexes, []string{"0", "1", "2", "3"}) || len(ids) != 4 || asMap(forwarded[2]["item"])["type"] != "message" {
		t.Fatalf("the message at output index 0, then each forwarded call at an index and with an item id of the proxy's own (the upstream's message items stay inside): %+v", places)
	}
	var done []string
	for _, e := range forwarded {
		if e["type"] == "response.function_call_arguments.done" {
			done = append(done, fmt.Sprintf("%v %v %v", e["item_id"], e["output_index"], e["arguments"]))
		}
	}
	want := []string{fmt.Sprintf(`%v 1 {"city":"Paris"}`, places[1].id), fmt.Sprintf(`%v 3 {"city":"Lisbon"}`, places[3].id), fmt.Sprintf(`%v 2 {"city":"Paris"}`, places[2].id)}
	if !slices.Equal(done, want) {
		t.Errorf("each forwarded event names its call by the proxy's numbering, its arguments as they came: got %q, want %q", done, want)
	}
	if problems := streamProblems(forwarded); problems != nil {
		t.Errorf("forwarded events read as the official SDK reads a stream (renumbered too): %q", problems)
	}
}

func TestProgressFailureIsExplicit(t *testing.T) {
	noLeaks(t)
	progress := func(steps ...any) answer {
		upstream := scripted(t, steps...)
		return ask(t, serve(t, &proxy.Proxy{Upstream: upstream, Tools: newWeather(upstream).tools(), Policy: proxy.ProgressEvents}), request("stream", true))
	}
	got := progress("text_then_call", "cut_mid_arguments")
	if got.status != 200 {
		t.Fatalf("progress already went out: the failure is told inside the stream, got %s", got)
	}
	events := sseEvents(t, got.body)
	k := kinds(events)
	if k[len(k)-1] != "response.failed" || slices.Contains(k, "response.completed") {
		t.Fatalf("a failure ends the stream with response.failed, never completed: %q", k)
	}
	failed := asMap(events[len(events)-1]["response"])
	failure := asMap(failed["error"])
	if message, _ := failure["message"].(string); failure["code"] != "server_error" || !strings.HasPrefix(message, "missing_terminal") {
		t.Errorf("with one of the API's error codes, the proxy's code leading the message: %s", show(failure))
	}
	opened := asMap(events[0]["response"])
	if failed["id"] != opened["id"] || failed["model"] != opened["model"] || failed["status"] != "failed" || !same(failed["output"], []any{}) {
		t.Errorf("the failed response is the one created: %s", show(failed))
	}
	if problems := streamProblems(events); problems != nil {
		t.Errorf("the failed stream still reads as the SDK reads one: %q", problems)
	}
	changed := sseEvents(t, progress("text_done_differs").body)
	if last := changed[len(changed)-1]; last["type"] != "response.failed" || !strings.Contains(show(last), "mismatch") {
		t.Errorf("text whose final statement disagrees with the deltas already forwarded ends in response.failed: %s", show(last))
	}
	slim := eventsOf(t, "text_done_differs", "")
	slim[len(slim)-1] = with(slim[len(slim)-1], "response", with(asMap(slim[len(slim)-1]["response"]), "output", nil))
	quiet := sseEvents(t, progress(framed(slim)).body)
	if last := quiet[len(quiet)-1]; last["type"] != "response.failed" {
		t.Errorf("a text done event disagreeing with the deltas forwarded fails the stream, even under a completed event without output: %s", show(last))
	}
	failedClosed(t, progress("created_missing"), proxy.CodeProtocol)
	failedClosed(t, progress(proxy.Fail(proxy.CodeUpstreamStatus, "the upstream answered 503")), proxy.CodeUpstreamStatus)
}

func TestTurnLimit(t *testing.T) {
	noLeaks(t)
	loops := func() []any {
		var steps []any
		for n := range proxy.MaxTurns {
			steps = append(steps, taggedBody(t, "tool_call", fmt.Sprintf("t%d", n)))
		}
		return steps
	}
	upstream := scripted(t, loops()...)
	tools := newWeather(upstream)
	failedClosed(t, ask(t, serve(t, &proxy.Proxy{Upstream: upstream, Tools: tools.tools()}), request()), proxy.CodeTurnLimit)
	if len(upstream.sent()) != proxy.MaxTurns || len(tools.ran()) != proxy.MaxTurns {
		t.Errorf("at most %d upstream responses: %d requests, %d runs", proxy.MaxTurns, len(upstream.sent()), len(tools.ran()))
	}
	upstream = scripted(t, loops()...)
	events := sseEvents(t, ask(t, serve(t, &proxy.Proxy{Upstream: upstream, Tools: newWeather(upstream).tools(), Policy: proxy.ProgressEvents}), request()).body)
	if last := events[len(events)-1]; last["type"] != "response.failed" || !strings.HasPrefix(asMap(asMap(last["response"])["error"])["message"].(string), "turn_limit") {
		t.Errorf("progress mode ends a runaway loop with response.failed, turn_limit: %s", show(last))
	}
	if len(upstream.sent()) != proxy.MaxTurns {
		t.Errorf("progress mode keeps the same bound: %d requests", len(upstream.sent()))
	}
	upstream = scripted(t, append(loops()[:proxy.MaxTurns-1], "final_after_tools")...)
	turn, err := (&proxy.Proxy{Upstream: upstream, Tools: newWeather(upstream).tools()}).BufferedFinalStream(ctx(t), requestOf(request()))
	if err != nil || !strings.HasPrefix(turn.Text, "Paris:") || len(upstream.sent()) != proxy.MaxTurns {
		t.Errorf("an answer in the last allowed response is still an answer: %q (%v) after %d requests", turn.Text, err, len(upstream.sent()))
	}
}

func TestCallIdsNeverReused(t *testing.T) {
	noLeaks(t)
	upstream := scripted(t, "reused_call_id", "final_after_tools")
	tools := newWeather(upstream)
	failedClosed(t, ask(t, serve(t, &proxy.Proxy{Upstream: upstream, Tools: tools.tools()}), request()), proxy.CodeProtocol)
	if len(tools.ran()) != 0 {
		t.Errorf("two pending calls under one call id fail closed before anything runs: %s", show(tools.ran()))
	}
	for _, policy := range []proxy.Policy{proxy.BufferedFinalStream, proxy.ProgressEvents} {
		upstream := scripted(t, "tool_call", "tool_call", "final_after_tools")
		tools := newWeather(upstream)
		got := ask(t, serve(t, &proxy.Proxy{Upstream: upstream, Tools: tools.tools(), Policy: policy}), request("stream", true))
		if !bytes.Contains(got.body, []byte("protocol")) || bytes.Contains(got.body, []byte("response.completed")) {
			t.Errorf("%s: a second response reusing the first one's call id fails closed: %s", policy, got)
		}
		if !same(tools.ran(), []any{map[string]any{"city": "Paris"}}) || len(upstream.sent()) != 2 {
			t.Errorf("%s: the first call ran once, the reused id never runs, nothing more goes upstream: %s, %d requests", policy, show(tools.ran()), len(upstream.sent()))
		}
	}
	history := []any{map[string]any{"role": "user", "content": "Weather in Paris?"},
		map[string]any{"type": "function_call", "call_id": "call_paris", "name": "get_weather", "arguments": `{"city":"Paris"}`},
		map[string]any{"type": "function_call_output", "call_id": "call_paris", "output": "rain"},
		map[string]any{"role": "user", "content": "And now?"}}
	upstream = scripted(t, "tool_call", "final_after_tools")
	tools = newWeather(upstream)
	failedClosed(t, ask(t, serve(t, &proxy.Proxy{Upstream: upstream, Tools: tools.tools()}), request("input", history)), proxy.CodeProtocol)
	if len(tools.ran()) != 0 {
		t.Errorf("a call id the client's history already answered is not run again: %s", show(tools.ran()))
	}
	upstream = scripted(t, taggedBody(t, "tool_call", "a"), taggedBody(t, "tool_call", "b"), "final_after_tools")
	tools = newWeather(upstream)
	if got := ask(t, serve(t, &proxy.Proxy{Upstream: upstream, Tools: tools.tools()}), request()); got.status != 200 || len(tools.ran()) != 2 {
		t.Errorf("calls with ids of their own run, one response after the other: %s, %d runs", got, len(tools.ran()))
	}
}

func TestNoToolRunsTwice(t *testing.T) {
	noLeaks(t)
	for _, mode := range []struct {
		name   string
		policy proxy.Policy
		fwd    bool
		stream bool
	}{{"buffered JSON", "", false, false}, {"buffered stream", "", false, true}, {"progress", proxy.ProgressEvents, false, true},
		{"progress forwarding", proxy.ProgressEvents, true, true}} {
		for _, failing := range []string{"cut_after_arguments", "failed_after_done", "mismatched_arguments", "error_event_nested", "the same call", "upstream 503"} {
			var steps []any
			for attempt := range 3 { // each attempt, a model choosing anew, then the failure
				first := taggedBody(t, "tool_call", fmt.Sprintf("a%d", attempt))
				var then any = failing
				switch failing {
				case "the same call":
					then = first
				case "upstream 503":
					then = proxy.Fail(proxy.CodeUpstreamStatus, "the upstream answered 503")
				}
				steps = append(steps, first, then)
			}
			upstream := scripted(t, steps...)
			tools := newWeather(upstream)
			s := serve(t, &proxy.Proxy{Upstream: upstream, Tools: tools.tools(), Policy: mode.policy, ForwardToolEvents: mode.fwd})
			got := sdkLikeAsk(t, s, request("stream", mode.stream))
			if runs := len(tools.ran()); runs != 1 {
				t.Errorf("%s, then %s: a client retrying as the SDK does by default still runs the tool once, not %d times (%s)", mode.name, failing, runs, got)
			}
			if got.attempts != 1 || len(upstream.sent()) != 2 {
				t.Errorf("%s, then %s: one client attempt (%d made), two upstream requests (%d)", mode.name, failing, got.attempts, len(upstream.sent()))
			}
			switch {
			case got.status == 502:
				if got.header.Get("X-Should-Retry") != "false" {
					t.Errorf("%s: the 502 says not to retry: %v", mode.name, got.header)
				}
			case got.status != 200 || kinds(sseEvents(t, got.body))[len(sseEvents(t, got.body))-1] != "response.failed":
				t.Errorf("%s, then %s: a 502, or a stream that ends in response.failed: %s", mode.name, failing, got)
			}
		}
	}
}

func TestDownstreamResponseConsistent(t *testing.T) {
	noLeaks(t)
	first := asMap(eventsOf(t, "tool_call", "")[0]["response"])
	var answers []map[string]any
	for _, mode := range []struct {
		name   string
		policy proxy.Policy
		fwd    bool
		stream bool
	}{{"buffered JSON", "", false, false}, {"buffered stream", "", false, true}, {"progress", proxy.ProgressEvents, false, true},
		{"progress forwarding", proxy.ProgressEvents, true, true}} {
		upstream := scripted(t, "tool_call", taggedBody(t, "text_then_call", "b"), "final_after_tools")
		upstream.readSize = 7
		s := serve(t, &proxy.Proxy{Upstream: upstream, Tools: newWeather(upstream).tools(), Policy: mode.policy, ForwardToolEvents: mode.fwd})
		got := ask(t, s, request("stream", mode.stream, "tool_choice", "required", "parallel_tool_calls", false))
		var final map[string]any
		if !mode.stream {
			final = object(t, decoded(t, got.body))
		} else {
			events := sseEvents(t, got.body)
			if problems := streamProblems(events); problems != nil {
				t.Errorf("%s: the stream reads as the official SDK reads one: %q", mode.name, problems)
			}
			var calls int
			var added []any
			for _, e := range events {
				if strings.Contains(e["type"].(string), "function_call") || asMap(e["item"])["type"] == "function_call" {
					calls++
				}
				if e["type"] == "response.output_item.added" {
					added = append(added, asMap(e["item"])["id"])
				}
			}
			if (calls > 0) != mode.fwd {
				t.Errorf("%s: tool-call events go out only when forwarding: %d", mode.name, calls)
			}
			if len(slices.Compact(slices.Clone(added))) != len(added) {
				t.Errorf("%s: every item of the downstream response has an id of its own: %s", mode.name, show(added))
			}
			final = asMap(events[len(events)-1]["response"])
			opened := asMap(events[0]["response"])
			if opened["id"] != final["id"] || !same(opened["tools"], json.RawMessage(toolsJSON)) || opened["tool_choice"] != "required" {
				t.Errorf("%s: created and completed name one response, echoing the request from the start: %s", mode.name, show(opened))
			}
		}
		if problems := responseProblems(final); problems != nil {
			t.Errorf("%s: the answer reads as the SDK's Response type: %q", mode.name, problems)
		}
		if final["id"] != first["id"] || fmt.Sprint(final["created_at"]) != fmt.Sprint(first["created_at"]) || final["model"] != first["model"] {
			t.Errorf("%s: the answer is named after the first upstream response, whatever the mode: %s %s %s", mode.name, final["id"], final["created_at"], final["model"])
		}
		if !same(final["usage"], usageSum(t, "tool_call", "text_then_call", "final_after_tools")) {
			t.Errorf("%s: the usage of every upstream response, added up: %s", mode.name, show(final["usage"]))
		}
		if !same(final["tools"], json.RawMessage(toolsJSON)) || final["tool_choice"] != "required" || final["parallel_tool_calls"] != false {
			t.Errorf("%s: the answer echoes what the request asked for: %s %s %s", mode.name, show(final["tools"]), show(final["tool_choice"]), show(final["parallel_tool_calls"]))
		}
		if text := messageText(final, "output_text"); text != "Let me check.Paris: light rain, 14 C; Lisbon: sunny, 21 C." {
			t.Errorf("%s: the text of every upstream response, in order: %q", mode.name, text)
		}
		answers = append(answers, final)
	}
	for i := 1; i < len(answers); i++ {
		if !same(answers[i], answers[0]) {
			t.Errorf("every mode gives the same final response for the same upstream answers:\n%s\n%s", show(answers[0]), show(answers[i]))
		}
	}
	upstream := scripted(t, "final_text")
	plain := object(t, decoded(t, ask(t, serve(t, &proxy.Proxy{Upstream: upstream, Tools: newWeather(upstream).tools()}), request()).body))
	if plain["tool_choice"] != "auto" || plain["parallel_tool_calls"] != true {
		t.Errorf("a request without tool_choice or parallel_tool_calls is answered with the API's defaults, auto and true: %s %s", show(plain["tool_choice"]), show(plain["parallel_tool_calls"]))
	}
	slim := eventsOf(t, "final_text", "")
	slim[len(slim)-1] = with(slim[len(slim)-1], "response", with(asMap(slim[len(slim)-1]["response"]), "usage", nil))
	upstream = scripted(t, framed(slim))
	bare := object(t, decoded(t, ask(t, serve(t, &proxy.Proxy{Upstream: upstream, Tools: newWeather(upstream).tools()}), request()).body))
	if bare["usage"] != nil || responseProblems(bare) != nil {
		t.Errorf("an upstream that reports no usage gives an answer without usage (null), not zeros: %s", show(bare["usage"]))
	}
}

func TestMalformedBytesFailClosed(t *testing.T) {
	noLeaks(t)
	for _, c := range []struct {
		name   string
		chunks [][]byte
		code   string
	}{
		{"not-utf8", [][]byte{[]byte("event: response.created\ndata: {\"type\": \"response.created\", \"response\": {\"id\": \"r\"}}\n\n\xff\n\n")}, "protocol"},
		{"not-an-object", [][]byte{[]byte("data: [1, 2]\n\n")}, "protocol"},
		{"not-json", [][]byte{[]byte("data: {oops\n\n")}, "protocol"},
		{"name-disagrees", [][]byte{[]byte("event: response.completed\ndata: {\"type\": \"response.created\", \"response\": {\"id\": \"r\"}}\n\n")}, "protocol"},
		{"split-crlf", [][]byte{[]byte("event: response.created\r"), []byte("\ndata: {\"type\": \"response.created\", \"response\": {\"id\": \"r\"}}\r\n\r\n")}, "missing_terminal"},
		{"bom-and-done", [][]byte{[]byte("\xef\xbb\xbfdata: {\"type\": \"response.created\", \"response\": {\"id\": \"r\"}}\n\ndata: [DONE]\n\n")}, "missing_terminal"},
		{"other-fields", [][]byte{[]byte("id: 7\nretry: 10\n\n\n\ndata: {\"type\": \"response.created\", \"response\": {\"id\": \"r\"}}\n\n")}, "missing_terminal"},
		{"split-character", [][]byte{[]byte("data: {\"type\": \"error\", \"message\": \"caf"), []byte("\xc3"), []byte("\xa9 closed\"}\n\n")}, "upstream_error"},
		{"cut-character", [][]byte{[]byte("data: {\"type\": \"response.created\"}\n\n"), []byte("\xc3")}, "protocol"},
		{"a-lone-cr", [][]byte{[]byte("data: {\"type\": \"response.created\", \"response\": {\"id\": \"r\"}}\r\r")}, "missing_terminal"},
		{"cut-character-after-an-event", [][]byte{[]byte("data: {\"type\": \"response.created\", \"response\": {\"id\": \"r\"}}\n\n"), []byte("\xc3")}, "protocol"},
		{"data-lines-joined", [][]byte{[]byte("data: {\"type\": \"response.created\",\ndata: \"response\": {\"id\": \"r\"}}\n\n")}, "missing_terminal"},
	} {
		upstream := scripted(t, c.chunks)
		tools := newWeather(upstream)
		message := failedClosed(t, ask(t, serve(t, &proxy.Proxy{Upstream: upstream, Tools: tools.tools()}), request()), c.code)
		if c.name == "split-character" && !strings.Contains(message, "café closed") {
			t.Errorf("%s: a character split across reads is read whole: %q", c.name, message)
		}
		if !upstream.allClosed() || len(tools.ran()) != 0 {
			t.Errorf("%s: the upstream is closed and nothing runs", c.name)
		}
	}
}

// upstreamServer is a Responses API on 127.0.0.1 answering each request with the next scripted reply.
type upstreamServer struct {
	*httptest.Server
	mu      sync.Mutex
	replies []func(w http.ResponseWriter)
	seen    []*http.Request
	bodies  []map[string]any
	release chan struct{}
}

func newUpstreamServer(t *testing.T) *upstreamServer {
	u := &upstreamServer{release: make(chan struct{})}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		u.mu.Lock()
		u.seen, u.bodies = append(u.seen, r), append(u.bodies, body)
		reply := u.replies[0]
		u.replies = u.replies[1:]
		u.mu.Unlock()
		reply(w)
	}))
	t.Cleanup(func() {
		close(u.release)
		u.Close()
	})
	return u
}

// requests is what the upstream was sent: each request, and its JSON body.
func (u *upstreamServer) requests() ([]*http.Request, []map[string]any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.seen), slices.Clone(u.bodies)
}

func (u *upstreamServer) script(replies ...func(w http.ResponseWriter)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.replies = append(u.replies, replies...)
}

func last(u *upstreamServer) *http.Request {
	seen, _ := u.requests()
	return seen[len(seen)-1]
}

func sse(data []byte) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(data)
	}
}

func TestProxyOverHTTP(t *testing.T) {
	noLeaks(t)
	up := newUpstreamServer(t)
	var mu sync.Mutex
	var runs []map[string]any
	weather := proxy.DemoTools()["get_weather"]
	tools := proxy.Tools{"get_weather": func(ctx context.Context, arguments map[string]any) (string, error) {
		mu.Lock()
		runs = append(runs, arguments)
		mu.Unlock()
		return weather(ctx, arguments)
	}}
	upstream := func(baseURL, key string, idle time.Duration) proxy.Upstream {
		u, err := proxy.NewHTTPUpstream(baseURL, key, nil, idle)
		if err != nil {
			t.Fatalf("NewHTTPUpstream(%q): %v", baseURL, err)
		}
		return u
	}
	s := serve(t, &proxy.Proxy{Upstream: upstream(up.URL+"/v1/", "k-1", 0), Tools: tools})
	up.script(sse(body(t, "tool_call")), sse(body(t, "final_after_tools")))
	got := ask(t, s, request("stream", true))
	events := sseEvents(t, got.body)
	if got.status != 200 || got.header.Get("Content-Type") != "text/event-stream" || events[len(events)-1]["type"] != "response.completed" {
		t.Fatalf("over HTTP the client gets the synthesized stream: %s", got)
	}
	if got.header.Get("Content-Length") != fmt.Sprint(len(got.body)) || streamProblems(events) != nil {
		t.Errorf("a synthesized stream is whole when it is sent, so it goes out with its length (%q): %q", got.header.Get("Content-Length"), streamProblems(events))
	}
	seen, bodies := up.requests()
	mu.Lock()
	ran := slices.Clone(runs)
	mu.Unlock()
	if first := seen[0]; !same(ran, []any{map[string]any{"city": "Paris"}}) || first.URL.Path != "/v1/responses" || first.Method != "POST" ||
		first.Header.Get("Authorization") != "Bearer k-1" || first.Header.Get("Content-Type") != "application/json" {
		t.Errorf("the tool ran once (%s) and the upstream got POST /v1/responses with the key: %s %s %q", show(ran), first.Method, first.URL.Path, first.Header.Get("Authorization"))
	}
	var result map[string]any
	output, _ := items(t, bodies[1], "function_call_output")[0]["output"].(string)
	if json.Unmarshal([]byte(output), &result); result["forecast"] != "light rain, 14 C" {
		t.Errorf("the tool's output went upstream: %s", show(bodies[1]))
	}
	up.script(sse(body(t, "final_text")))
	if plain := ask(t, s, map[string]any{"model": "m", "input": "hi", "stream": true}); !bytes.Equal(plain.body, body(t, "final_text")) {
		t.Errorf("pass-through over HTTP is byte for byte: %s", plain)
	}
	anonymous := serve(t, &proxy.Proxy{Upstream: upstream(up.URL+"/v1", "", 0), Tools: tools})
	up.script(sse(body(t, "final_text")))
	if ask(t, anonymous, request()); last(up).Header.Get("Authorization") != "" {
		t.Error("no key, no Authorization header")
	}
	cut := func(w http.ResponseWriter) { // a body that promises more than it sends, then a closed connection
		conn, _, _ := http.NewResponseController(w).Hijack()
		fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 5000\r\n\r\n%s", body(t, "tool_call")[:150])
		conn.Close()
	}
	whole := body(t, "final_text")
	up.script(func(w http.ResponseWriter) { // a pass-through cut where an event ends, short of its length
		conn, _, _ := http.NewResponseController(w).Hijack()
		fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
			len(whole), whole[:bytes.Index(whole, []byte("\n\n"))+2])
		conn.Close()
	})
	if plain := ask(t, s, map[string]any{"model": "m", "input": "hi", "stream": true}); plain.err == nil {
		t.Errorf("an upstream that closes short of the Content-Length it announced is a cut, passed on as one "+
			"(the chunked body without its last chunk), never a clean end: the client read %s", plain)
	}
	stall := func(w http.ResponseWriter) { // ... or that goes silent
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(body(t, "tool_call")[:150])
		http.NewResponseController(w).Flush()
		<-up.release
	}
	impatient := serve(t, &proxy.Proxy{Upstream: upstream(up.URL+"/v1", "", 50*time.Millisecond), Tools: tools})
	for _, c := range []struct {
		name  string
		proxy served
		reply func(w http.ResponseWriter)
		code  string
	}{{"a connection that ends mid-body", s, cut, proxy.CodeTruncated}, {"an upstream gone silent", impatient, stall, proxy.CodeTruncated},
		{"a cut stream", s, sse(body(t, "cut_after_arguments")), proxy.CodeMissingTerminal},
		{"an upstream 429", s, func(w http.ResponseWriter) { http.Error(w, `{"error": {"message": "slow down"}}`, 429) }, proxy.CodeUpstreamStatus}} {
		up.script(c.reply)
		if message := failedClosed(t, ask(t, c.proxy, request()), c.code); c.code == proxy.CodeUpstreamStatus && !strings.Contains(message, "slow down") {
			t.Errorf("%s: the upstream's words are kept: %q", c.name, message)
		}
	}
	failedClosed(t, ask(t, serve(t, &proxy.Proxy{Upstream: upstream(refusedURL(t), "", 0), Tools: tools}), request()), proxy.CodeUpstreamUnreachable)
	for name, broken := range map[string]proxy.UpstreamFunc{
		"an upstream that panics": func(context.Context, []byte) (io.ReadCloser, error) { panic("a bug in the upstream client") },
		"an error not FailClosed": func(context.Context, []byte) (io.ReadCloser, error) { return nil, errors.New("a bug") },
	} {
		got := ask(t, serve(t, &proxy.Proxy{Upstream: broken, Tools: tools}), request())
		if got.status != 500 || got.header.Get("X-Should-Retry") != "false" || errorOf(t, got)["type"] != "server_error" {
			t.Errorf("%s: anything else that goes wrong is a 500 in the API's error shape, not to be retried, never a dropped connection: %s", name, got)
		}
	}
	c := client(t)
	for _, bad := range []struct {
		path, method string
		body         []byte
		status       int
	}{{"/v1/other", "POST", []byte(`{}`), 404}, {"/v1/responses", "GET", nil, 405}, {"/v1/responses", "POST", []byte(`[1]`), 400},
		{"/v1/responses", "POST", []byte(`{`), 400}, {"/v1/responses", "POST", nil, 400}, {"/v1/responses", "POST", []byte(`null`), 400},
		{"/v1/responses", "POST", []byte(`{"model": "m", "input": 5, "tools": ` + toolsJSON + `}`), 500}} {
		req, _ := http.NewRequest(bad.method, s.url+bad.path, bytes.NewReader(bad.body))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", bad.method, bad.path, err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != bad.status || errorOf(t, answer{status: resp.StatusCode, body: data})["code"] == nil {
			t.Errorf("%s %s %q: %d in the API's error shape, got %d %s", bad.method, bad.path, bad.body, bad.status, resp.StatusCode, data)
		}
	}
	answers := map[string][2][]byte{} // requests at once, each its own conversation
	for n := range 6 {
		tag := fmt.Sprintf("c%d", n)
		answers["question "+tag] = [2][]byte{taggedBody(t, "tool_call", tag), taggedBody(t, "final_text", tag)}
	}
	concurrent := serve(t, &proxy.Proxy{Upstream: proxy.UpstreamFunc(func(_ context.Context, request []byte) (io.ReadCloser, error) {
		var sent struct {
			Input []map[string]any `json:"input"`
		}
		json.Unmarshal(request, &sent)
		answer := answers[fmt.Sprint(sent.Input[0]["content"])]
		return io.NopCloser(bytes.NewReader(answer[min(len(sent.Input)-1, 1)])), nil
	}), Tools: tools, Policy: proxy.ProgressEvents, ForwardToolEvents: true})
	results := make([]answer, 6)
	var wg sync.WaitGroup
	for n := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[n] = tryPost(client(t), concurrent.url+"/v1/responses", request("input", fmt.Sprintf("question c%d", n), "stream", true))
		}()
	}
	wg.Wait()
	for n, got := range results {
		if got.err != nil {
			t.Fatalf("request %d among several at once: %v", n, got.err)
		}
		events := sseEvents(t, got.body)
		if final := asMap(events[len(events)-1]["response"]); final["id"] != fmt.Sprintf("resp_call1_c%d", n) || messageText(final, "output_text") != "It is raining in Paris." || streamProblems(events) != nil {
			t.Errorf("request %d among several at once gets its own answer: %s %q", n, show(final["id"]), streamProblems(events))
		}
	}
	if _, err := proxy.NewHTTPUpstream("ftp://example.invalid", "", nil, 0); err == nil {
		t.Error("NewHTTPUpstream refuses a base URL that is not http(s)")
	}
}

func TestRequestForwardedStreaming(t *testing.T) {
	noLeaks(t)
	upstream := scripted(t, "tool_call", "final_after_tools")
	s := serve(t, &proxy.Proxy{Upstream: upstream, Tools: newWeather(upstream).tools()})
	got := ask(t, s, request("temperature", 0.5, "metadata", map[string]any{"who": "test"}))
	if got.status != 200 || !strings.HasPrefix(got.header.Get("Content-Type"), "application/json") {
		t.Fatalf("a non-streamed client gets JSON: %s", got)
	}
	answer := object(t, decoded(t, got.body))
	if !strings.HasPrefix(messageText(answer, "output_text"), "Paris:") || answer["id"] != "resp_call1" || !same(answer["tools"], json.RawMessage(toolsJSON)) {
		t.Errorf("the JSON answer is the final response, named after the first upstream response, echoing the request's tools: %s", show(answer))
	}
	sent := upstream.sent()
	if len(sent) != 2 || sent[0]["stream"] != true {
		t.Fatalf("the proxy always streams from upstream, whatever the client asked: %s", show(sent))
	}
	if !same(sent[0]["input"], []any{map[string]any{"role": "user", "content": "What is the weather in Paris?"}}) {
		t.Errorf("a string input becomes one user message: %s", show(sent[0]["input"]))
	}
	for _, key := range []string{"model", "tools", "temperature", "metadata"} {
		if !same(sent[0][key], request("temperature", 0.5, "metadata", map[string]any{"who": "test"})[key]) {
			t.Errorf("%s goes upstream as the client sent it: %s", key, show(sent[0][key]))
		}
	}
	if input, _ := sent[1]["input"].([]any); len(input) != 3 {
		t.Errorf("the second request holds the question, the call and its result: %s", show(sent[1]["input"]))
	}
	original := requestOf(request())
	given := maps.Clone(original)
	upstream = scripted(t, "tool_call", "final_after_tools")
	recorder := httptest.NewRecorder()
	if err := (&proxy.Proxy{Upstream: upstream, Tools: newWeather(upstream).tools()}).Handle(ctx(t), recorder, given); err != nil || recorder.Code != 200 {
		t.Errorf("Handle answers a request with tools: %d, %v", recorder.Code, err)
	}
	if !maps.EqualFunc(given, original, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
		t.Errorf("the client's request is never changed in place: %s, was %s", show(given), show(original))
	}
	streamed := sseEvents(t, ask(t, serve(t, &proxy.Proxy{Upstream: scripted(t, "final_text"), Tools: newWeather(nil).tools()}), request("stream", true)).body)
	if streamed[len(streamed)-1]["type"] != "response.completed" {
		t.Errorf("a streaming client gets a synthesized event stream: %q", kinds(streamed))
	}
	unknown := httptest.NewRecorder()
	err := (&proxy.Proxy{Upstream: scripted(t, "final_text"), Tools: newWeather(nil).tools(), Policy: "whatever"}).Handle(ctx(t), unknown, requestOf(request()))
	if !errors.Is(err, proxy.ErrUnknownPolicy) || unknown.Body.Len() != 0 || unknown.Flushed {
		t.Errorf("an unknown policy is an error wrapping ErrUnknownPolicy, before anything is written: %v, %q", err, unknown.Body.String())
	}
	history := []any{map[string]any{"role": "user", "content": "Weather?"}, map[string]any{"role": "assistant", "content": "Where?"},
		map[string]any{"role": "user", "content": "Paris"}}
	listed := scripted(t, "final_text")
	ask(t, serve(t, &proxy.Proxy{Upstream: listed, Tools: newWeather(nil).tools()}), request("input", history))
	if sent := listed.sent(); len(sent) != 1 || !same(sent[0]["input"], history) {
		t.Errorf("a list input goes upstream as its items: %s", show(sent))
	}
	none := scripted(t, "final_text")
	ask(t, serve(t, &proxy.Proxy{Upstream: none, Tools: newWeather(nil).tools()}), request("input", nil))
	if sent := none.sent(); len(sent) != 1 || !same(sent[0]["input"], []any{}) {
		t.Errorf("no input at all goes upstream as an empty list of items: %s", show(sent))
	}
}
