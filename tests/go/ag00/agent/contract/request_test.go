// The ag00 catalog, Go track: one non-streaming Responses call and the contract around it. The
// replies are the authored samples of the chapter's fixtures (COURSE_FIXTURES), played by a
// scripted model: no network, no key. This file: building the request (request.go).
package contract_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"

	"tinyllm/agent/contract"
)

// strictTool is what makes the read_order tool strict: its descriptions left out.
var strictTool = map[string]any{
	"type": "function", "name": "read_order", "strict": true,
	"parameters": map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"order_id": map[string]any{"type": "string"}},
		"required":             []any{"order_id"},
		"additionalProperties": false,
	},
}

// schemaView is the part of a tool definition that makes it strict, as JSON values.
func schemaView(t *testing.T, tool contract.Tool) any {
	t.Helper()
	view := map[string]any{"type": tool.Type, "name": tool.Name, "strict": tool.Strict}
	params, _ := value(t, tool.Parameters).(map[string]any)
	properties := map[string]any{}
	if given, ok := params["properties"].(map[string]any); ok {
		for name, p := range given {
			if p, ok := p.(map[string]any); ok {
				properties[name] = map[string]any{"type": p["type"]}
			}
		}
	}
	view["parameters"] = map[string]any{"type": params["type"], "properties": properties,
		"required": params["required"], "additionalProperties": params["additionalProperties"]}
	return view
}

func build(t *testing.T, model, question string, budget int) *contract.Request {
	t.Helper()
	req, err := contract.BuildRequest(model, question, budget)
	if err != nil || req == nil {
		t.Fatalf("BuildRequest(%q, %q, %d): got %v and error %v, want a request", model, question, budget, req, err)
	}
	return req
}

func TestRequestShape(t *testing.T) {
	if contract.OutputTokenBudget != 500 {
		t.Errorf("OutputTokenBudget is %d, want 500", contract.OutputTokenBudget)
	}
	req := build(t, model, question, contract.OutputTokenBudget)
	body, _ := value(t, req).(map[string]any)
	var keys []string
	for k := range body {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if want := []string{"input", "max_output_tokens", "model", "tools"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("the request's JSON keys: got %q, want %q", keys, want)
	}
	if req.Model != model {
		t.Errorf("Model: got %q, want %q", req.Model, model)
	}
	want := []any{map[string]any{"role": "developer", "content": contract.DeveloperInstructions},
		map[string]any{"role": "user", "content": question}}
	if got := value(t, req.Input); !reflect.DeepEqual(got, want) {
		t.Errorf("Input: got %v, want exactly the developer message holding DeveloperInstructions, then the user's question %v", got, want)
	}
	if len(req.Tools) != 1 {
		t.Fatalf("Tools: got %d tools, want exactly one, read_order", len(req.Tools))
	}
	if got := schemaView(t, req.Tools[0]); !reflect.DeepEqual(got, value(t, strictTool)) {
		t.Errorf("the tool: got %v, want one strict read_order tool %v", got, strictTool)
	}
	if !sameJSON(t, req.Tools[0], contract.ReadOrderTool()) {
		t.Errorf("the tool: got %s, want ReadOrderTool() in every field, its descriptions included: %s",
			encode(t, req.Tools[0]), encode(t, contract.ReadOrderTool()))
	}
	if req.MaxOutputTokens != 500 || body["max_output_tokens"] != 500.0 {
		t.Errorf("max_output_tokens: got %d (in JSON %v), want 500, the default budget", req.MaxOutputTokens, body["max_output_tokens"])
	}
}

func TestRequestKeepsTheQuestionAsGiven(t *testing.T) {
	for _, q := range []string{question, "  Where is o-1?\n", "Où est ma commande o-1 ?", strings.Repeat("Where is o-1? ", 800),
		"<b>o-1</b> & o-2?"} {
		req := build(t, model, q, contract.OutputTokenBudget)
		want := map[string]any{"role": "user", "content": q}
		if got := value(t, req.Input[len(req.Input)-1]); !reflect.DeepEqual(got, want) {
			t.Errorf("the user message for the question %.60q: got %.200v, want %.200v (sent exactly as given)", q, got, want)
		}
	}
	for _, m := range []string{"ft:gpt-4o-mini:acme::abc123", "org/model_v2", "m", "model with spaces inside", " sample-model "} {
		if got := build(t, m, question, contract.OutputTokenBudget).Model; got != m {
			t.Errorf("model %q: the request holds %q, want it as given (any non-blank text is a model id)", m, got)
		}
	}
}

// editToolSchema changes the nested schema of a request's tool, in place: a flag, a property's
// type, the required list (an element, and one more).
func editToolSchema(t *testing.T, tool contract.Tool) {
	t.Helper()
	params := tool.Parameters
	properties, _ := params["properties"].(map[string]any)
	orderID, _ := properties["order_id"].(map[string]any)
	required, _ := params["required"].([]any)
	if orderID == nil || len(required) == 0 {
		t.Fatalf("the tool's parameters are not those of ReadOrderTool(): %v", params)
	}
	params["additionalProperties"] = true
	orderID["type"] = "integer"
	required[0] = "tenant"
	params["required"] = append(required, "user")
}

func TestRequestToolIsADeepCopy(t *testing.T) {
	for _, target := range []string{"ReadOrderTool()", "an earlier request", "a later request"} {
		t.Run(strings.ReplaceAll(target, " ", "-"), func(t *testing.T) {
			earlier := build(t, model, question, contract.OutputTokenBudget)
			edited := build(t, model, question, contract.OutputTokenBudget)
			editToolSchema(t, edited.Tools[0])
			tool := map[string]contract.Tool{"ReadOrderTool()": contract.ReadOrderTool(), "an earlier request": earlier.Tools[0],
				"a later request": build(t, "m", question, contract.OutputTokenBudget).Tools[0]}[target]
			if got, want := schemaView(t, tool), value(t, strictTool); !reflect.DeepEqual(got, want) {
				t.Errorf("editing the nested schema of one built request changed the tool of %s: got %v, want %v; "+
					"a Tool copied as a struct shares its maps and slices: every request needs a tool of its own", target, got, want)
			}
		})
	}
}

func TestRequestMessagesAreNew(t *testing.T) {
	first := build(t, model, question, contract.OutputTokenBudget)
	for _, item := range first.Input {
		for i := range item {
			item[i] = ' ' // scribbled over in place
		}
	}
	first.Input[0] = json.RawMessage(`{"role": "developer", "content": "edited"}`)
	second := build(t, model, question, contract.OutputTokenBudget)
	want := []any{map[string]any{"role": "developer", "content": contract.DeveloperInstructions},
		map[string]any{"role": "user", "content": question}}
	var got []any
	for _, item := range second.Input {
		var v any
		if json.Unmarshal(item, &v) != nil {
			t.Fatalf("after editing the messages of one request in place, the next request's messages are %q, want %v", second.Input, want)
		}
		got = append(got, v)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("editing the messages of one request changed the next request's: got %v, want %v", got, want)
	}
}

func TestRequestRejectsBlankText(t *testing.T) {
	blanks := map[string]string{"empty": "", "spaces": "   ", "tab-newline": "\t\n", "unicode-spaces": "\u00a0\u3000"}
	for name, blank := range blanks {
		for _, c := range []struct{ what, model, question string }{{"model", blank, question}, {"question", model, blank}} {
			t.Run(name+"-"+c.what, func(t *testing.T) {
				req, err := contract.BuildRequest(c.model, c.question, contract.OutputTokenBudget)
				if req != nil || !errors.Is(err, contract.ErrInvalidRequest) {
					t.Errorf("BuildRequest(%q, %q, 500): got %v and error %v, want no request and an error wrapping ErrInvalidRequest (a blank %s)",
						c.model, c.question, req, err, c.what)
				}
			})
		}
	}
}

func TestRequestRejectsBadBudget(t *testing.T) {
	for _, budget := range []int{0, -1, -500, math.MinInt} {
		req, err := contract.BuildRequest(model, question, budget)
		if req != nil || !errors.Is(err, contract.ErrInvalidRequest) {
			t.Errorf("BuildRequest(..., %d): got %v and error %v, want no request and an error wrapping ErrInvalidRequest (a budget is 1 or more)",
				budget, req, err)
		}
	}
}

func TestRequestBudgetPassedThrough(t *testing.T) {
	for _, budget := range []int{1, 64, 500, 100_000} {
		req := build(t, model, question, budget)
		body, _ := value(t, req).(map[string]any)
		if req.MaxOutputTokens != budget || body["max_output_tokens"] != float64(budget) {
			t.Errorf("a budget of %d: the request holds %d (in JSON %v), want %d (1 is the smallest budget)",
				budget, req.MaxOutputTokens, body["max_output_tokens"], budget)
		}
	}
}
