package proxy_test

// What the client receives (synthesize.go): a Responses object as JSON, and the same response as a
// server-sent event stream.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"tinyllm/agent/proxy"
)

var weatherTool = json.RawMessage(`{"type":"function","name":"get_weather","parameters":{"type":"object"}}`)

// expectedTurn is the turn of fixtures/ag03/expected.json, echoing what a request without
// tool_choice and parallel_tool_calls asks for.
func expectedTurn(t *testing.T) proxy.Turn {
	t.Helper()
	loadFixtures(t)
	var turn struct {
		ID        string       `json:"id"`
		Model     string       `json:"model"`
		CreatedAt int64        `json:"created_at"`
		Text      string       `json:"text"`
		Usage     *proxy.Usage `json:"usage"`
	}
	if err := json.Unmarshal(expected.FinalText.Turn, &turn); err != nil {
		t.Fatalf("expected.json: %v", err)
	}
	return proxy.Turn{ID: turn.ID, Model: turn.Model, CreatedAt: turn.CreatedAt, Status: "completed", Text: turn.Text,
		Usage: turn.Usage, ParallelToolCalls: true}
}

func TestSynthesizedJSONValid(t *testing.T) {
	noLeaks(t)
	turn := expectedTurn(t)
	doc := object(t, decoded(t, proxy.ToJSON(turn)))
	if doc["object"] != "response" || doc["status"] != "completed" {
		t.Errorf("a completed response object, got object %s, status %s", show(doc["object"]), show(doc["status"]))
	}
	if doc["id"] != turn.ID || doc["model"] != turn.Model || fmt.Sprint(doc["created_at"]) != fmt.Sprint(turn.CreatedAt) || !same(doc["usage"], turn.Usage) {
		t.Errorf("id, model, created_at and usage carried over unchanged: %s", show(doc))
	}
	output, _ := doc["output"].([]any)
	if len(output) != 1 || messageText(doc, "output_text") != turn.Text {
		t.Fatalf("one assistant message holds the text: %s", show(doc["output"]))
	}
	message := asMap(output[0])
	if message["type"] != "message" || message["role"] != "assistant" || message["status"] != "completed" || message["id"] == "" {
		t.Errorf("the output item is a completed assistant message with an id: %s", show(message))
	}
	if problems := responseProblems(doc); problems != nil {
		t.Errorf("the answer reads as the official SDK's Response type: %q", problems)
	}
	empty := object(t, decoded(t, proxy.ToJSON(proxy.Turn{ID: "resp_e", Model: "m", CreatedAt: 1})))
	content, _ := asMap(empty["output"].([]any)[0])["content"].([]any)
	if len(content) != 1 || asMap(content[0])["type"] != "output_text" || asMap(content[0])["text"] != "" || responseProblems(empty) != nil {
		t.Errorf("an empty answer is still a valid response with an empty text part: %s %q", show(empty["output"]), responseProblems(empty))
	}
	echoed := object(t, decoded(t, proxy.ToJSON(proxy.Turn{ID: "resp_t", Model: "m", CreatedAt: 1, Text: "x",
		Tools: []json.RawMessage{weatherTool}, ToolChoice: json.RawMessage(`"required"`)})))
	if !same(echoed["tools"], []json.RawMessage{weatherTool}) || echoed["tool_choice"] != "required" || echoed["parallel_tool_calls"] != false {
		t.Errorf("the response echoes what the turn says its request asked for: tools %s, tool_choice %s, parallel_tool_calls %s",
			show(echoed["tools"]), show(echoed["tool_choice"]), show(echoed["parallel_tool_calls"]))
	}
	refused := object(t, decoded(t, proxy.ToJSON(proxy.Turn{ID: "resp_r", Model: "m", CreatedAt: 1, Refusal: "No."})))
	if messageText(refused, "refusal") != "No." {
		t.Errorf("a turn's refusal is in its message: %s", show(refused["output"]))
	}
	if !same(doc, expected.FinalText.JSON) {
		t.Errorf("the answer is, field for field, the response object of fixtures/ag03/expected.json:\n got %s\nwant %s", show(doc), show(expected.FinalText.JSON))
	}
}

func TestSynthesizedSSEValid(t *testing.T) {
	noLeaks(t)
	turn := expectedTurn(t)
	data := proxy.ToSSE(turn)
	events := sseEvents(t, data)
	kinds := kinds(events)
	if len(kinds) == 0 || kinds[0] != "response.created" || kinds[len(kinds)-1] != "response.completed" {
		t.Fatalf("the stream opens with response.created and ends with response.completed: %q", kinds)
	}
	for i, e := range events {
		if fmt.Sprint(e["sequence_number"]) != fmt.Sprint(i) {
			t.Fatalf("sequence numbers count from 0 without a gap or a repeat: event %d (%s) carries %s", i, kinds[i], show(e["sequence_number"]))
		}
	}
	count := func(kind string) int {
		return len(slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return k != kind }))
	}
	for _, pair := range [][2]string{{"response.output_item.added", "response.output_item.done"}, {"response.content_part.added", "response.content_part.done"}} {
		if count(pair[0]) != 1 || count(pair[1]) != 1 || slices.Index(kinds, pair[0]) > slices.Index(kinds, pair[1]) {
			t.Errorf("%s then %s, once each: %q", pair[0], pair[1], kinds)
		}
	}
	var deltas strings.Builder
	var stated []string
	for _, e := range events {
		switch e["type"] {
		case "response.output_text.delta":
			deltas.WriteString(e["delta"].(string))
		case "response.output_text.done":
			stated = append(stated, e["text"].(string))
		}
	}
	if deltas.String() != turn.Text || !slices.Equal(stated, []string{turn.Text}) {
		t.Errorf("the deltas spell the text and its done event states it: %q, %q", deltas.String(), stated)
	}
	if !(slices.Index(kinds, "response.content_part.added") < slices.Index(kinds, "response.output_text.delta") &&
		slices.Index(kinds, "response.output_text.done") < slices.Index(kinds, "response.content_part.done") &&
		slices.Index(kinds, "response.content_part.done") < slices.Index(kinds, "response.output_item.done") &&
		slices.Index(kinds, "response.output_item.done") < slices.Index(kinds, "response.completed")) {
		t.Errorf("the text part is added before its delta, and done events close inside out: %q", kinds)
	}
	opened, final := asMap(events[0]["response"]), asMap(events[len(events)-1]["response"])
	if opened["id"] != turn.ID || final["id"] != turn.ID || opened["status"] != "in_progress" {
		t.Errorf("created (in progress) and completed name the same response: %s, %s", show(opened["id"]), show(final["id"]))
	}
	if !same(final, decoded(t, proxy.ToJSON(turn))) {
		t.Errorf("the completed event carries exactly the response the JSON answer gives: %s", show(final))
	}
	if problems := streamProblems(events); problems != nil {
		t.Errorf("the stream reads as the official SDK reads one: %q", problems)
	}
	if bytes.Contains(data, []byte("[DONE]")) {
		t.Error("the Responses API sends no [DONE] line")
	}
	for _, e := range events {
		if !bytes.Contains(data, []byte(fmt.Sprintf("event: %s\ndata: ", e["type"]))) {
			t.Errorf("each event is framed as 'event: TYPE' then 'data: JSON': %s", e["type"])
		}
	}
	if !bytes.HasSuffix(data, []byte("}\n\n")) || bytes.Contains(data, []byte("\r")) || bytes.Count(data, []byte("\n\n")) != len(events) {
		t.Errorf("every event ends with one blank line, LF only: %d blank lines for %d events", bytes.Count(data, []byte("\n\n")), len(events))
	}
	if len(events) != len(expected.FinalText.SSE) {
		t.Errorf("%d events, got %d: %q", len(expected.FinalText.SSE), len(events), kinds)
	}
	for i := range min(len(events), len(expected.FinalText.SSE)) {
		if !same(events[i], expected.FinalText.SSE[i]) {
			t.Errorf("event %d (%s) field for field:\n got %s\nwant %s", i, kinds[i], show(events[i]), show(expected.FinalText.SSE[i]))
		}
	}
}

func TestFinalTextOnlyStreamDownstream(t *testing.T) {
	noLeaks(t)
	events := sseEvents(t, proxy.ToSSE(proxy.Turn{ID: "resp_x", Model: "m", CreatedAt: 5, Text: "Ok."}))
	if got := messageText(asMap(events[len(events)-1]["response"]), "output_text"); got != "Ok." {
		t.Errorf("a text-only answer becomes one message in the completed event, got %q", got)
	}
	ids := map[any]bool{}
	for _, e := range events {
		if id, ok := e["item_id"]; ok {
			ids[id] = true
		}
		if item, ok := e["item"]; ok {
			ids[asMap(item)["id"]] = true
		}
	}
	if len(ids) != 1 {
		t.Errorf("every item event names the one message item: %v", ids)
	}
	if problems := streamProblems(events); problems != nil {
		t.Errorf("the stream reads as the official SDK reads one: %q", problems)
	}
	empty := sseEvents(t, proxy.ToSSE(proxy.Turn{ID: "resp_y", Model: "m", CreatedAt: 5}))
	var deltas int
	for _, e := range empty {
		if e["type"] == "response.output_text.delta" {
			deltas++
		}
	}
	if deltas > 1 || empty[len(empty)-1]["type"] != "response.completed" || streamProblems(empty) != nil {
		t.Errorf("an empty answer streams at most one (empty) delta and still completes, its text part opened and closed: %q %q",
			kinds(empty), streamProblems(empty))
	}
}

func TestRefusalPassedOn(t *testing.T) {
	noLeaks(t)
	refusal := "I can't help with that request."
	alone := proxy.Turn{ID: "resp_r", Model: "m", CreatedAt: 5, Refusal: refusal}
	doc := object(t, decoded(t, proxy.ToJSON(alone)))
	if content := asMap(doc["output"].([]any)[0])["content"]; doc["status"] != "completed" || !same(content, []any{map[string]any{"type": "refusal", "refusal": refusal}}) {
		t.Errorf("a refusal is the message's refusal part, as the API sends it, never an empty text: %s", show(doc["output"]))
	}
	events := sseEvents(t, proxy.ToSSE(alone))
	if k := kinds(events); !slices.Contains(k, "response.refusal.delta") || !slices.Contains(k, "response.refusal.done") || slices.Contains(k, "response.output_text.delta") {
		t.Errorf("the stream spells the refusal in its own events: %q", k)
	}
	if got := messageText(asMap(events[len(events)-1]["response"]), "refusal"); got != refusal || streamProblems(events) != nil {
		t.Errorf("and completes with it (%q): %q", got, streamProblems(events))
	}
	both := proxy.Turn{ID: "resp_b", Model: "m", CreatedAt: 5, Text: "Partly.", Refusal: " No more."}
	content := asMap(object(t, decoded(t, proxy.ToJSON(both)))["output"].([]any)[0])["content"].([]any)
	if len(content) != 2 || asMap(content[0])["type"] != "output_text" || asMap(content[1])["type"] != "refusal" {
		t.Errorf("text, then the refusal: %s", show(content))
	}
	events = sseEvents(t, proxy.ToSSE(both))
	if final := asMap(asMap(events[len(events)-1]["response"])["output"].([]any)[0])["content"]; streamProblems(events) != nil || !same(final, content) {
		t.Errorf("streamed, each part opened and closed at its own place: %q", streamProblems(events))
	}
	for _, mode := range []struct {
		stream bool
		policy proxy.Policy
	}{{false, proxy.BufferedFinalStream}, {true, proxy.BufferedFinalStream}, {true, proxy.ProgressEvents}} {
		upstream := scripted(t, "refusal")
		s := serve(t, &proxy.Proxy{Upstream: upstream, Tools: newWeather(upstream).tools(), Policy: mode.policy})
		got := ask(t, s, request("input", "Do something bad.", "stream", mode.stream))
		if got.status != 200 {
			t.Fatalf("%s (stream %v): a refusal is an answer, got %s", mode.policy, mode.stream, got)
		}
		response := map[string]any{}
		if mode.stream {
			events := sseEvents(t, got.body)
			if problems := streamProblems(events); problems != nil {
				t.Errorf("%s: the refusal's stream reads as the SDK reads one: %q", mode.policy, problems)
			}
			response = asMap(events[len(events)-1]["response"])
		} else {
			response = object(t, decoded(t, got.body))
		}
		if messageText(response, "refusal") != refusal || messageText(response, "output_text") != "" {
			t.Errorf("%s (stream %v): an upstream refusal reaches the client as the refusal, not an empty success: %s", mode.policy, mode.stream, show(response["output"]))
		}
	}
}

func TestFailedResponseReadable(t *testing.T) {
	noLeaks(t)
	writer := proxy.EventWriter{Next: 7}
	shown := proxy.Turn{ID: "resp_f", Model: "m", CreatedAt: 5, Tools: []json.RawMessage{weatherTool}}
	events := sseEvents(t, proxy.Failed(&writer, shown, &proxy.FailClosed{Code: "missing_terminal", Message: "the stream ended early"}))
	if len(events) != 1 {
		t.Fatalf("one response.failed event, got %q", kinds(events))
	}
	response := asMap(events[0]["response"])
	if events[0]["type"] != "response.failed" || fmt.Sprint(events[0]["sequence_number"]) != "7" || response["id"] != "resp_f" || response["status"] != "failed" {
		t.Errorf("one response.failed event, numbered by the writer, for the response shown, status failed: %s", show(events[0]))
	}
	failure := asMap(response["error"])
	if message, _ := failure["message"].(string); failure["code"] != "server_error" || !strings.HasPrefix(message, "missing_terminal") {
		t.Errorf("its code is one of the API's own, and the proxy's code leads the message: %s", show(failure))
	}
	if problems := responseProblems(response); problems != nil || !same(response["tools"], []json.RawMessage{weatherTool}) {
		t.Errorf("the failed response reads as the SDK's Response type, with the fields it requires: %q, tools %s", problems, show(response["tools"]))
	}
	if writer.Next != 8 {
		t.Errorf("the writer counts the event it wrote: next is %d, want 8", writer.Next)
	}
}
