// Your own tests for ag01, beside the code they test. `go test ./...` (in go/) runs them on your
// code; `course selftest` runs them on the course's reference, where each must pass, and then on
// every pitfall mutant of the chapter, each of which should make at least one of them fail.
// `course check` leaves them out. Add tests here or in any _test.go file of your module; here is
// one to start from. It uses the package from outside (package provider_test): the chapter's
// interface is all that the reference, the mutants and your code have in common.
package provider_test

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"tinyllm/agent/provider"
)

func TestTwoEventsReadOneByteAtATime(t *testing.T) {
	body := iotest.OneByteReader(strings.NewReader("data: one\n\ndata: two\ndata: lines\n\n"))
	reader := provider.NewEventReader(body)
	var events []string
	for {
		data, err := reader.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("after the events %q: %v", events, err)
		}
		events = append(events, string(data)) // a copy: data is valid only until the next call
	}
	want := []string{"one", "two\nlines"}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("events: got %q, want %q (whatever the read size)", events, want)
	}
}
