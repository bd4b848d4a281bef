package responses_test

// The request: the portable history and tool catalog as one Responses API request (section 2.1).

import (
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"

	"tinyllm/agent/responses"
)

var editArgs = map[string]string{"path": "calculator.py", "old": "return a - b", "new": "return a + b"}

func nineMessages() []responses.Message {
	return []responses.Message{
		{Role: responses.RoleDeveloper, Content: "Fix bugs with the smallest edit."},
		{Role: responses.RoleUser, Content: "The test for add() fails."},
		{Role: responses.RoleAssistant, Content: "Let me look.", ToolCalls: []responses.ToolCall{
			{ID: "call_r", Name: "read", Arguments: map[string]string{"path": "calculator.py"}}}},
		{Role: responses.RoleTool, Content: "def add(a, b):\n    return a - b\n", ToolCallID: "call_r"},
		{Role: responses.RoleAssistant, ToolCalls: []responses.ToolCall{
			{ID: "call_e", Name: "edit", Arguments: map[string]string{"path": "calculator.py", "old": "return a - b", "new": "return a + b"}},
			{ID: "call_r2", Name: "read", Arguments: map[string]string{"path": "t.py"}}}},
		{Role: responses.RoleTool, Content: "edited calculator.py", ToolCallID: "call_e"},
		{Role: responses.RoleTool, Content: "assert add(2, 3) == 5", ToolCallID: "call_r2"},
		{Role: responses.RoleAssistant, Refusal: "I can't run the tests myself."},
		{Role: responses.RoleUser, Content: "Thanks."},
	}
}

// asJSON is the request as the wire sees it: its JSON, decoded into plain values.
func asJSON(t *testing.T, req *responses.Request) map[string]any {
	t.Helper()
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatalf("the request does not marshal: %v", err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("the request's JSON %s: %v", raw, err)
	}
	return out
}

func build(t *testing.T, history []responses.Message, tools []responses.ToolSpec, budget int) map[string]any {
	t.Helper()
	req, err := responses.BuildRequest(history, tools, model, budget)
	if err != nil || req == nil {
		t.Fatalf("BuildRequest: got (%v, %v), want a request", req, err)
	}
	return asJSON(t, req)
}

func TestRequestShape(t *testing.T) {
	if responses.MaxOutputTokens != 2048 {
		t.Errorf("MaxOutputTokens: got %d, want 2048", responses.MaxOutputTokens)
	}
	body := build(t, []responses.Message{{Role: responses.RoleUser, Content: "hi"}}, toolSpecs(t), responses.MaxOutputTokens)
	var keys []string
	for k := range body {
		keys = append(keys, k)
	}
	want := []string{"input", "max_output_tokens", "model", "store", "stream", "tools"}
	if !sameJSON(sortedCopy(keys), want) {
		t.Errorf("request keys: got %v, want exactly %v (never previous_response_id)", sortedCopy(keys), want)
	}
	if body["model"] != model || body["store"] != false || body["stream"] != true || body["max_output_tokens"] != 2048.0 {
		t.Errorf("model %v, store %v, stream %v, max_output_tokens %v: want %q, false (nothing kept upstream), true, 2048",
			body["model"], body["store"], body["stream"], body["max_output_tokens"], model)
	}
	if got := build(t, []responses.Message{{Role: responses.RoleUser, Content: "hi"}}, nil, 300)["max_output_tokens"]; got != 300.0 {
		t.Errorf("a budget of 300 is passed through: got max_output_tokens %v", got)
	}
	for _, none := range [][]responses.ToolSpec{nil, {}} {
		if got, ok := build(t, nil, none, 100)["tools"].([]any); !ok || len(got) != 0 {
			t.Errorf("no tools (%#v) gives \"tools\": [], got %s", none, show(build(t, nil, none, 100)["tools"]))
		}
	}
	if got, ok := build(t, nil, nil, 100)["input"].([]any); !ok || len(got) != 0 {
		t.Errorf("an empty history gives \"input\": [], got %s", show(build(t, nil, nil, 100)["input"]))
	}
	wantEdit := map[string]any{
		"type": "function", "name": "edit", "description": "Replace the exact text old with new in one file of the project.",
		"parameters": map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"path": map[string]any{"type": "string"}, "old": map[string]any{"type": "string"}, "new": map[string]any{"type": "string"}},
			"required":             []any{"path", "old", "new"},
			"additionalProperties": false,
		},
		"strict": true,
	}
	tools, _ := body["tools"].([]any)
	var names []any
	for _, tool := range tools {
		m, _ := tool.(map[string]any)
		names = append(names, m["name"])
		if m["name"] == "edit" && !sameJSON(m, wantEdit) {
			t.Errorf("the edit tool as a strict function schema:\n got  %s\n want %s", show(m), show(wantEdit))
		}
	}
	if !sameJSON(names, []string{"read", "edit"}) {
		t.Errorf("tools keep the catalog's order: got %v", names)
	}
	ping := build(t, nil, []responses.ToolSpec{{Name: "ping", Description: "Is anyone there?"}}, 100)["tools"].([]any)[0].(map[string]any)["parameters"]
	wantEmpty := map[string]any{"type": "object", "properties": map[string]any{}, "required": []any{}, "additionalProperties": false}
	if !sameJSON(ping, wantEmpty) {
		t.Errorf("a tool without parameters: got %s, want %s (an empty object and list, not null)", show(ping), show(wantEmpty))
	}

	// The request shares no memory with the caller's tools, either way round.
	params := make([]string, 2, 8) // room to grow in place
	copy(params, []string{"path", "mode"})
	spec := []responses.ToolSpec{{Name: "open", Parameters: params}}
	req, err := responses.BuildRequest(nil, spec, model, 100)
	if err != nil {
		t.Fatalf("BuildRequest: %v", err)
	}
	before := asJSON(t, req)
	params[0] = "PATH"
	_ = append(params, "extra")
	if after := asJSON(t, req); !sameJSON(before, after) {
		t.Errorf("changing the ToolSpec's Parameters after BuildRequest changed the request:\n before %s\n after  %s", show(before), show(after))
	}
	params[0] = "path"
	req.Tools[0].Parameters.Required[1] = "MODE"
	req.Tools[0].Parameters.Required = append(req.Tools[0].Parameters.Required, "more")
	if got := params[:cap(params)][:3]; got[1] != "mode" || got[2] == "more" {
		t.Errorf("changing the request's required list changed the caller's ToolSpec.Parameters: %q", got)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func TestHistoryAsItems(t *testing.T) {
	given := nineMessages()
	before := nineMessages()
	items, _ := build(t, given, toolSpecs(t), 2048)["input"].([]any)
	if !reflect.DeepEqual(given, before) {
		t.Errorf("BuildRequest must not change the caller's history")
	}
	call := func(callID, name string) map[string]any {
		var found []map[string]any
		for _, item := range items {
			m, _ := item.(map[string]any)
			if m["type"] == "function_call" && m["call_id"] == callID {
				found = append(found, m)
			}
		}
		if len(found) != 1 {
			t.Fatalf("exactly one function_call item with call_id %q, got %d", callID, len(found))
		}
		item := found[0]
		if len(item) != 4 || item["name"] != name {
			t.Errorf("call %s: a function_call item is exactly type, call_id, name %q and arguments (no item id with store false), got %s", callID, name, show(item))
		}
		return item
	}
	parsed := func(item map[string]any) map[string]string {
		text, ok := item["arguments"].(string)
		if !ok {
			t.Errorf("call %v: arguments must be a JSON string, got %s", item["call_id"], show(item["arguments"]))
			return nil
		}
		var out map[string]string
		if err := json.Unmarshal([]byte(text), &out); err != nil || out == nil {
			t.Errorf("call %v: arguments %q must be the JSON text of the argument object (%v)", item["call_id"], text, err)
		}
		return out
	}
	if got := parsed(call("call_e", "edit")); !reflect.DeepEqual(got, editArgs) {
		t.Errorf("the edit's arguments, parsed: got %v, want %v", got, editArgs)
	}
	if got := parsed(call("call_r", "read")); !reflect.DeepEqual(got, map[string]string{"path": "calculator.py"}) {
		t.Errorf("the read's arguments, parsed: got %v", got)
	}
	shape := func(item any) string {
		m, _ := item.(map[string]any)
		switch m["type"] {
		case "function_call":
			return "call " + show(m["call_id"])
		case "function_call_output":
			if len(m) != 3 {
				t.Errorf("a function_call_output item is exactly type, call_id and output, got %s", show(m))
			}
			return "output " + show(m["call_id"]) + " " + show(m["output"])
		}
		if len(m) != 2 {
			t.Errorf("a message item is exactly role and content, got %s", show(m))
		}
		return "message " + show(m["role"]) + " " + show(m["content"])
	}
	want := []string{
		`message "developer" "Fix bugs with the smallest edit."`,
		`message "user" "The test for add() fails."`,
		`message "assistant" "Let me look."`,
		`call "call_r"`,
		`output "call_r" "def add(a, b):\n    return a - b\n"`,
		`call "call_e"`,
		`call "call_r2"`,
		`output "call_e" "edited calculator.py"`,
		`output "call_r2" "assert add(2, 3) == 5"`,
		`message "assistant" "I can't run the tests myself."`,
		`message "user" "Thanks."`,
	}
	var got []string
	for _, item := range items {
		got = append(got, shape(item))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("input items in history order (text before its calls, each result its own item):\n got  %s\n want %s",
			strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}

	nested := map[string]string{"path": "a.py", "old": "say \"hi\"\n<b>&", "new": "é 😀"}
	odd := []responses.Message{
		{Role: responses.RoleAssistant, ToolCalls: []responses.ToolCall{{ID: "c1", Name: "edit", Arguments: nested}, {ID: "c2", Name: "list"}}},
		{Role: responses.RoleUser},
		{Role: responses.RoleAssistant, Refusal: "Not that file.", ToolCalls: []responses.ToolCall{{ID: "c3", Name: "read", Arguments: map[string]string{"path": "b.py"}}}},
	}
	sent, _ := build(t, odd, nil, 100)["input"].([]any)
	if len(sent) != 5 {
		t.Fatalf("two calls, an empty user turn, and a refusal beside a call give five items, got %s", show(sent))
	}
	if !sameJSON(sent[3], map[string]any{"role": "assistant", "content": "Not that file."}) || sent[4].(map[string]any)["call_id"] != "c3" {
		t.Errorf("a refusal beside a call is replayed as the assistant's text, before the call: got %s, %s", show(sent[3]), show(sent[4]))
	}
	both, _ := build(t, []responses.Message{{Role: responses.RoleAssistant, Content: "Here is the fix.", Refusal: "I won't run it."}}, nil, 100)["input"].([]any)
	if len(both) != 1 || !sameJSON(both[0], map[string]any{"role": "assistant", "content": "Here is the fix."}) {
		t.Errorf("a turn with Content and a Refusal is replayed as its Content alone, got %s", show(both))
	}
	if got := parsed(sent[0].(map[string]any)); !reflect.DeepEqual(got, nested) {
		t.Errorf("quotes, newlines, <, & and non-ASCII survive the JSON text: got %q, want %q", got, nested)
	}
	if text := sent[1].(map[string]any)["arguments"]; text != "{}" {
		t.Errorf("a call without arguments (a nil map) is sent with arguments \"{}\", got %s", show(text))
	}
	if !sameJSON(sent[2], map[string]any{"role": "user", "content": ""}) {
		t.Errorf("an empty user turn is still a message item with content \"\": got %s", show(sent[2]))
	}
}

func TestToolResultNeedsCall(t *testing.T) {
	call := responses.Message{Role: responses.RoleAssistant, ToolCalls: []responses.ToolCall{{ID: "call_1", Name: "read", Arguments: map[string]string{"path": "a.py"}}}}
	result := responses.Message{Role: responses.RoleTool, Content: "text of a.py", ToolCallID: "call_1"}
	items, _ := build(t, []responses.Message{call, {Role: responses.RoleUser, Content: "go on"}, result}, nil, 100)["input"].([]any)
	var outputs []any
	for _, item := range items {
		if m, _ := item.(map[string]any); m["type"] == "function_call_output" {
			outputs = append(outputs, m["call_id"])
		}
	}
	if !sameJSON(outputs, []string{"call_1"}) {
		t.Errorf("a result may answer a call made several messages earlier: got the outputs %v", outputs)
	}
	for what, bad := range map[string][]responses.Message{
		"a result answering no call":        {call, {Role: responses.RoleTool, Content: "?", ToolCallID: "call_9"}},
		"a result before its call":          {result, call},
		"a result with no call id":          {call, {Role: responses.RoleTool, Content: "?"}},
		"an unknown role":                   {{Role: "system2", Content: "hello"}},
		"the role of another API (system)":  {{Role: "system", Content: "hello"}},
		"an unknown role after a good turn": {call, result, {Role: "Assistant", Content: "x"}},
	} {
		req, err := responses.BuildRequest(bad, nil, model, 100)
		if err == nil || !errors.Is(err, responses.ErrBadHistory) || req != nil {
			t.Errorf("%s: got (%v, %v), want no request and an error wrapping ErrBadHistory", what, req, err)
		}
	}
}
