// Your own tests for ag03, beside the code they test. `go test ./...` (in go/) runs them on your
// code; `course selftest` runs them on the course's reference, where each must pass, and then on
// every pitfall mutant of the chapter, each of which should make at least one of them fail.
// `course check` leaves them out. Add tests here or in any _test.go file of your module; here is
// one to start from. It uses the package from outside (package proxy_test): the chapter's
// interface is all that the reference, the mutants and your code have in common.
package proxy_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"tinyllm/agent/proxy"
)

// A call whose arguments and item are both done, in a stream cut before response.completed: the
// response never finished, so there is nothing to run.
func TestCallDoneButResponseCut(t *testing.T) {
	body := strings.Join([]string{
		`event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","model":"m"}}`,
		`event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"get_weather","arguments":""}}`,
		`event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":2,"item_id":"fc_1","output_index":0,"delta":"{\"city\":\"Paris\"}"}`,
		`event: response.function_call_arguments.done
data: {"type":"response.function_call_arguments.done","sequence_number":3,"item_id":"fc_1","output_index":0,"arguments":"{\"city\":\"Paris\"}"}`,
	}, "\n\n") + "\n\n"
	state := proxy.NewStreamState()
	events := proxy.NewEventReader(strings.NewReader(body))
	for {
		e, err := events.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		if err := state.Feed(e); err != nil {
			t.Fatalf("feeding %s: %v", e.Type, err)
		}
	}
	turn, err := state.Finish()
	var failure *proxy.FailClosed
	if !errors.As(err, &failure) || failure.Code != proxy.CodeMissingTerminal {
		t.Errorf("Finish without response.completed: got %+v and %v, want a *FailClosed with code missing_terminal", turn, err)
	}
}
