// The demonstration of chapter ag00 (`course run ag00`): five runs of your loop on authored sample
// replies (the chapter's fixtures, in COURSE_FIXTURES), played by a scripted model. No network, no
// API key, no cost. Each run prints what was sent, how each reply was classified, which calls ran
// and how the run ended.
//
// `course run` builds this file into your module (as cmd/ag00-demo, through go's -overlay, nothing
// written), so it uses your package exactly as a program of yours would.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"tinyllm/agent/contract"
)

const question = "What is the status of order o-1?"

func main() {
	os.Exit(run())
}

func run() int {
	fixtures := os.Getenv("COURSE_FIXTURES")
	if fixtures == "" {
		fmt.Println("COURSE_FIXTURES is not set: run this with `course run ag00`, which names the chapter's sample replies.")
		return 2
	}
	fmt.Println("ag00 offline demonstration: authored sample replies (fixtures/ag00), no network, no API key.")
	if here, err := os.Getwd(); err == nil {
		fmt.Println("code under test:", here) // course run starts the program in the code's folder
	}
	p := contract.TrustedPrincipal
	fmt.Printf("trusted principal (from the session, never from the model): tenant %s, user %s\n", p.Tenant, p.User)

	replies := func(names ...string) []contract.Reply {
		var out []contract.Reply
		for _, name := range names {
			out = append(out, load(fixtures, name, ""))
		}
		return out
	}
	var again []contract.Reply
	for n := 1; n <= 4; n++ {
		again = append(again, load(fixtures, "tool_call_o1", fmt.Sprintf("call_again_%d", n)))
	}
	paths := []struct {
		title, note string
		replies     []contract.Reply
	}{
		{"normal", "The model asks to read o-1, then answers with exactly the receipt.", replies("tool_call_o1", "answer_o1")},
		{"cross-tenant", "The model asks for o-2, an order of shop-b.", replies("tool_call_o2_cross_tenant", "answer_o1")},
		{"bounded loop", "The model keeps asking for o-1 under new call_ids; MaxCalls 2, MaxTurns 3.", again},
		{"refusal", "The model declines; the refusal part is not output_text.", replies("refusal")},
		{"incomplete", "Generation stopped at max_output_tokens with half an answer written.", replies("incomplete_max_tokens")},
	}
	for _, path := range paths {
		if !show(path.title, path.note, path.replies) {
			return 1
		}
	}
	fmt.Println("\nOnly answer_ready means the task is done; every other status is a different stop, kept apart.")
	return 0
}

// load is one authored sample as the Reply the model gives; with callID, the call it holds gets
// that call_id (and item id), so that each turn asks under a new one.
func load(fixtures, name, callID string) contract.Reply {
	var sample struct {
		HTTPStatus int             `json:"http_status"`
		Body       json.RawMessage `json:"body"`
	}
	raw, err := os.ReadFile(filepath.Join(fixtures, name+".json"))
	if err == nil {
		err = json.Unmarshal(raw, &sample)
	}
	if err == nil && callID != "" {
		var body map[string]any
		if err = json.Unmarshal(sample.Body, &body); err == nil {
			output := body["output"].([]any)
			call := output[len(output)-1].(map[string]any)
			call["call_id"], call["id"] = callID, "fc_"+callID
			sample.Body, err = json.Marshal(body)
		}
	}
	if err != nil {
		fmt.Printf("cannot read the sample %s: %v\n", name, err)
		os.Exit(1)
	}
	return contract.Reply{StatusCode: sample.HTTPStatus, Body: sample.Body}
}

// script is the model: it answers each request with the next reply, and keeps what it was sent.
type script struct {
	replies []contract.Reply
	sent    []*contract.Request
}

func (s *script) Send(_ context.Context, req *contract.Request) (contract.Reply, error) {
	s.sent = append(s.sent, req)
	if len(s.sent) > len(s.replies) {
		return contract.Reply{}, fmt.Errorf("the loop asked for turn %d, but only %d replies were scripted", len(s.sent), len(s.replies))
	}
	return s.replies[len(s.sent)-1], nil
}

// show runs one path and prints it; false when your code is not written yet, or failed.
func show(title, note string, replies []contract.Reply) (ok bool) {
	defer func() {
		if value := recover(); value != nil {
			ok = false
			if text := fmt.Sprint(value); strings.HasPrefix(text, "TODO") {
				fmt.Printf("\nNot written yet: your code panics with %q.\n", text)
				fmt.Println("Write it (its doc comment and `course show ag00` say what to do), then run `course run ag00` again.")
				return
			}
			fmt.Printf("\nyour code panicked: %v; `course check ag00` says which rule it breaks\n", value)
		}
	}()
	fmt.Printf("\n== %s\n   %s\n", title, note)
	req, err := contract.BuildRequest("sample-model", question, contract.OutputTokenBudget)
	if err != nil {
		fmt.Println("   BuildRequest refused the chapter's own question:", err)
		return false
	}
	model := &script{replies: replies}
	loop := contract.NewLoop(model)
	outcome, err := loop.Run(context.Background(), req)
	if err != nil {
		fmt.Println("   Run:", err)
		return false
	}
	for i, step := range outcome.Steps {
		if i < len(model.sent) {
			fmt.Printf("   turn %d: sent input [%s]\n", step.Turn, labels(model.sent[i].Input))
		}
		fmt.Printf("           reply classified as %s\n", step.Kind)
		for _, callID := range step.Executed {
			fmt.Printf("           ran %s -> function_call_output %s\n", callID, output(outcome.Results, callID))
		}
	}
	var extra []string
	if v := outcome.Verdict; v != nil && v.Reason != "" {
		extra = append(extra, fmt.Sprintf("reason %q", v.Reason))
	}
	if v := outcome.Verdict; v != nil && v.Kind == contract.HTTPError {
		extra = append(extra, fmt.Sprintf("retryable %v", v.Retryable))
	}
	if outcome.Denial != nil {
		denial, _ := json.Marshal(outcome.Denial)
		extra = append(extra, "the denial holds only "+string(denial))
	}
	if v := outcome.Verdict; outcome.Status == contract.BudgetExhausted && v != nil {
		extra = append(extra, fmt.Sprintf("a batch of %d more did not run, %d of %d used", len(v.Calls), outcome.Calls, loop.MaxCalls))
	}
	if outcome.Answer != nil {
		answer, _ := json.Marshal(outcome.Answer)
		extra = append(extra, "answer "+string(answer))
	}
	tail := ""
	if extra != nil {
		tail = " (" + strings.Join(extra, "; ") + ")"
	}
	fmt.Printf("   outcome: %s; tool calls %d; results sent back %d%s\n", outcome.Status, outcome.Calls, len(outcome.Results), tail)
	return true
}

// labels names each input item: its type, or the role of a plain message.
func labels(input []json.RawMessage) string {
	var names []string
	for _, raw := range input {
		var item struct {
			Type string `json:"type"`
			Role string `json:"role"`
		}
		_ = json.Unmarshal(raw, &item)
		name := item.Type
		if name == "" {
			name = item.Role
		}
		names = append(names, name)
	}
	return strings.Join(names, ", ")
}

// output is the output text of the result for callID.
func output(results []json.RawMessage, callID string) string {
	for _, raw := range results {
		var item struct {
			CallID string `json:"call_id"`
			Output string `json:"output"`
		}
		if json.Unmarshal(raw, &item) == nil && item.CallID == callID {
			return item.Output
		}
	}
	return "(no result)"
}
