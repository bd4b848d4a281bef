// Your own tests for ag02, beside the code they test. `go test ./...` (in go/) runs them on your
// code; `course selftest` runs them on the course's reference, where each must pass, and then on
// every pitfall mutant of the chapter, each of which should make at least one of them fail.
// `course check` leaves them out. Add tests here or in any _test.go file of your module; here is
// one to start from. It uses the package from outside (package responses_test): the chapter's
// interface is all that the reference, the mutants and your code have in common.
package responses_test

import (
	"errors"
	"testing"

	"tinyllm/agent/responses"
)

func TestArgumentsDoneIsNotCompletion(t *testing.T) {
	read := responses.ToolSpec{Name: "read", Parameters: []string{"path"}}
	asm := responses.NewAssembly([]responses.ToolSpec{read}, nil)
	progress := []string{
		`{"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}`,
		`{"type": "response.output_item.added", "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": ""}}`,
		`{"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{\"path\": "}`,
		`{"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "\"a.py\"}"}`,
		`{"type": "response.function_call_arguments.done", "item_id": "fc_1", "arguments": "{\"path\": \"a.py\"}"}`,
	}
	for _, event := range progress {
		if decision, err := asm.Accept([]byte(event)); decision != nil || err != nil {
			t.Fatalf("%s is progress: got (%v, %v), want (nil, nil)", event, decision, err)
		}
	}
	_, err := asm.Accept([]byte(`{"type": "response.failed", "response": {"id": "resp_1", "status": "failed"}}`))
	var failure *responses.ResponseError
	if !errors.As(err, &failure) || failure.Code != "failed" {
		t.Errorf("the response failed after its arguments were done: got %v, want the failure \"failed\"", err)
	}
	if asm.Pending() != 0 {
		t.Errorf("the failed response's call is still buffered (%d calls)", asm.Pending())
	}
}
