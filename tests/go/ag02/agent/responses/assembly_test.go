package responses_test

// The assembly: native events folded into one decision, released only at validated completion
// (sections 2.2 to 2.4). Events are the JSON data of server-sent events, fed one at a time.

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"tinyllm/agent/responses"
)

func TestHandExample(t *testing.T) {
	seq := load(t, "single_call")
	rec := &recorder{}
	asm := newAssembly(t, rec)
	last := len(seq.Events) - 1
	for i, event := range seq.Events[:last] {
		got, err := asm.Accept(event)
		if got != nil || err != nil {
			t.Fatalf("event %d (%s) is progress: Accept gave (%v, %v), want (nil, nil)", i, describe(event), got, err)
		}
	}
	decision, err := asm.Accept(seq.Events[last])
	if err != nil || decision == nil {
		t.Fatalf("response.completed must release the decision: got (%v, %v)", decision, err)
	}
	if got := messageForm(*decision); !sameJSON(got, seq.Expect.Message) {
		t.Errorf("the decision:\n got  %s\n want %s", show(got), show(seq.Expect.Message))
	}
	if len(decision.ToolCalls) != 1 || !reflect.DeepEqual(decision.ToolCalls[0].Arguments, editArgs) {
		t.Errorf("the call's Arguments are the parsed object: got %+v", decision.ToolCalls)
	}
	progress := rec.kinds("arguments")
	if len(progress) != 3 {
		t.Fatalf("each argument delta reports (\"arguments\", ...): got %q", rec.reports)
	}
	for i, n := range []string{"15", "49", "71"} {
		if !strings.Contains(progress[i], "fc_edit_1") || !regexp.MustCompile(`\b`+n+`\b`).MatchString(progress[i]) {
			t.Errorf("report %d must name the item fc_edit_1 and the %s characters buffered so far: got %q", i, n, progress[i])
		}
	}
	if len(rec.reports) != 3 {
		t.Errorf("nothing else is reported for this stream: got %q", rec.reports)
	}
}

func TestAuthoredSequences(t *testing.T) {
	for _, name := range sequenceNames(t) {
		t.Run(name, func(t *testing.T) {
			seq := load(t, name)
			var evs []any
			for _, e := range seq.Events {
				evs = append(evs, []byte(e))
			}
			got := feed(responses.NewAssembly(toolSpecs(t, seq.Tools...), (&recorder{}).report), evs)
			switch {
			case seq.Expect.Message != nil:
				if got.decision == nil {
					t.Fatalf("%s (%s): got %v, want a decision", name, seq.About, got)
				}
				if got.at != len(seq.Events)-1 {
					t.Errorf("%s: the decision came at event %d, not at the final response.completed", name, got.at)
				}
				if form := messageForm(*got.decision); !sameJSON(form, seq.Expect.Message) {
					t.Errorf("%s: the decision differs:\n got  %s\n want %s", name, show(form), show(seq.Expect.Message))
				}
			case seq.Expect.Failure == "stream_ended" || seq.Expect.Failure == "transport":
				// the stream stops early: every event the assembly saw stays progress
				if got.err != nil || got.decision != nil {
					t.Errorf("%s (%s): got %v; every event before the cut is progress", name, seq.About, got)
				}
			default:
				if got.code != seq.Expect.Failure || got.decision != nil {
					t.Errorf("%s (%s): got %v, want failure %s", name, seq.About, got, seq.Expect.Failure)
				}
			}
		})
	}
}

func TestItemCompletionIsNotResponseCompletion(t *testing.T) {
	for _, name := range []string{"done_then_failed", "cut_after_last_argument", "output_limit"} {
		seq := load(t, name)
		asm := newAssembly(t, nil)
		dones, failed := 0, false
		for _, event := range seq.Events {
			kind := describe(event)
			got, err := asm.Accept(event)
			if err != nil {
				failed = true
				if kind != "response.failed" && kind != "response.incomplete" {
					t.Errorf("%s: failure at %s (%v), want a failure only at the terminal response.failed or response.incomplete", name, kind, err)
				} else if code(err) != seq.Expect.Failure {
					t.Errorf("%s: failure %q, want %q", name, code(err), seq.Expect.Failure)
				}
				if asm.Pending() != 0 {
					t.Errorf("%s: %d calls still buffered after the failure; they must be discarded", name, asm.Pending())
				}
				late := completed([]any{callItem("fc_edit_1", "call_edit_1", "edit", "{}", "completed")}, "resp_"+name, "completed")
				if _, err := asm.Accept(encode(late)); code(err) != "ended" {
					t.Errorf("%s: an event after the failure must fail with \"ended\", got %v", name, err)
				}
				break
			}
			if strings.HasSuffix(kind, ".done") {
				dones++
			}
			if got != nil {
				t.Errorf("%s: %s released a decision; a .done event is progress, never permission", name, kind)
				break
			}
		}
		if dones < 2 {
			t.Errorf("%s: the sequence holds arguments.done and output_item.done (%d seen)", name, dones)
		}
		if want := seq.Expect.Failure != "stream_ended"; failed != want {
			t.Errorf("%s: failed %v, want %v (a cut stream leaves only progress)", name, failed, want)
		}
	}
}

func TestFragmentsBufferedNotParsed(t *testing.T) {
	whole := []rune(`{"path": "calculator.py", "old": "a - b", "new": "a + b é"}`)
	for cut := 1; cut < len(whole); cut++ {
		first, second := string(whole[:cut]), string(whole[cut:])
		evs := []any{created("resp_1"), added(callItem("fc_1", "call_1", "edit", "", "in_progress")), delta("fc_1", first), delta("fc_1", second),
			completed([]any{callItem("fc_1", "call_1", "edit", string(whole), "completed")}, "resp_1", "completed")}
		got := feed(newAssembly(t, nil), evs)
		if got.decision == nil {
			t.Errorf("arguments cut after %d characters (%q + %q): got %v; fragments are buffered and parsed once, at completion", cut, first, second, got)
			continue
		}
		if args := got.decision.ToolCalls[0].Arguments; args["new"] != "a + b é" || args["path"] != "calculator.py" {
			t.Errorf("cut at %d: arguments %q", cut, args)
		}
	}
	// The item may bring the first fragment itself, and an empty delta changes nothing.
	evs := []any{created("resp_1"), added(callItem("fc_1", "call_1", "read", `{"pa`, "in_progress")), delta("fc_1", ""), delta("fc_1", `th": "x.py"}`),
		completed([]any{callItem("fc_1", "call_1", "read", `{"path": "x.py"}`, "completed")}, "resp_1", "completed")}
	if got := feed(newAssembly(t, nil), evs); got.decision == nil {
		t.Errorf("arguments the added item brings count as the first fragment: got %v", got)
	}
}

func TestInterleavedCallsByItem(t *testing.T) {
	got := feed(newAssembly(t, nil), anyOf(events(t, "interleaved_calls")))
	if got.decision == nil {
		t.Fatalf("interleaved_calls: got %v, want a decision", got)
	}
	var calls []string
	for _, c := range got.decision.ToolCalls {
		calls = append(calls, c.ID+" "+c.Arguments["path"])
	}
	if want := []string{"call_read_a calculator.py", "call_read_b test_calculator.py"}; !reflect.DeepEqual(calls, want) {
		t.Errorf("each fragment goes to the item it names; calls in final output order: got %q, want %q", calls, want)
	}
	if got.decision.Content != "Reading both files first." {
		t.Errorf("the text beside the calls: got %q", got.decision.Content)
	}
	// Two calls added before any fragment: a fragment routed to the call added last goes astray.
	evs := []any{created("resp_1"), added(callItem("fc_a", "call_a", "read", "", "in_progress")), added(callItem("fc_b", "call_b", "read", "", "in_progress")),
		delta("fc_a", `{"path": "a.py"}`), delta("fc_b", `{"path": "b.py"}`),
		completed([]any{callItem("fc_a", "call_a", "read", `{"path": "a.py"}`, "completed"), callItem("fc_b", "call_b", "read", `{"path": "b.py"}`, "completed")}, "resp_1", "completed")}
	got = feed(newAssembly(t, nil), evs)
	if got.decision == nil || len(got.decision.ToolCalls) != 2 || got.decision.ToolCalls[0].Arguments["path"] != "a.py" || got.decision.ToolCalls[1].Arguments["path"] != "b.py" {
		t.Errorf("two calls, fragments by item id: got %v %+v", got, got.decision)
	}
}

func anyOf(evs [][]byte) []any {
	out := make([]any, len(evs))
	for i, e := range evs {
		out[i] = e
	}
	return out
}

func TestLifecycleOrder(t *testing.T) {
	expectFailure(t, anyOf(events(t, "before_created")), "not_started", "before_created")
	expectFailure(t, anyOf(events(t, "created_twice")), "duplicate_created", "created_twice")
	for what, c := range map[string]struct {
		event obj
		want  string
	}{
		"no id":                 {obj{"type": "response.created", "response": obj{"status": "in_progress"}}, "missing_id"},
		"an empty id":           {created(""), "missing_id"},
		"no response object":    {obj{"type": "response.created"}, "malformed_event"},
		"a null response":       {obj{"type": "response.created", "response": nil}, "malformed_event"},
		"a null id":             {obj{"type": "response.created", "response": obj{"id": nil}}, "malformed_event"},
		"an id that is no text": {obj{"type": "response.created", "response": obj{"id": 7}}, "malformed_event"},
	} {
		expectFailure(t, []any{c.event}, c.want, "response.created with "+what)
	}
	for _, end := range []string{"after completion", "after a failure"} {
		asm := newAssembly(t, nil)
		rid := "resp_text_only"
		if end == "after completion" {
			if got := feed(asm, anyOf(events(t, "text_only"))); got.decision == nil {
				t.Fatalf("text_only must complete, got %v", got)
			}
		} else {
			rid = "resp_error_event"
			if got := feed(asm, anyOf(events(t, "error_event"))); got.code != "error" {
				t.Fatalf("error_event must fail with error, got %v", got)
			}
		}
		for _, late := range []obj{textDelta("more", "output_text"), completed([]any{}, rid, "completed"), created("resp_new")} {
			if _, err := asm.Accept(encode(late)); code(err) != "ended" {
				t.Errorf("%s, %s must fail with \"ended\", got %v", end, late["type"], err)
			}
		}
	}
}

func TestIdentityAndStatus(t *testing.T) {
	base := []any{created("resp_1"), added(callItem("fc_1", "call_1", "read", "", "in_progress")), delta("fc_1", `{"path": "a.py"}`)}
	final := []any{callItem("fc_1", "call_1", "read", `{"path": "a.py"}`, "completed")}
	same := append(append([]any{base[0], obj{"type": "response.in_progress", "response": obj{"id": "resp_1"}}, with(base[1].(obj), "response_id", "resp_1")}, base[2:]...),
		completed(final, "resp_1", "completed"))
	if got := feed(newAssembly(t, nil), same); got.decision == nil {
		t.Errorf("events naming the same response are accepted: got %v", got)
	}
	for what, c := range map[string]struct {
		event any
		want  string
	}{
		"a response_id of another response":     {with(delta("fc_1", ""), "response_id", "resp_2"), "identity_mismatch"},
		"a response_id that is null":            {with(delta("fc_1", ""), "response_id", nil), "identity_mismatch"},
		"a lifecycle event of another response": {obj{"type": "response.in_progress", "response": obj{"id": "resp_2"}}, "identity_mismatch"},
		"a lifecycle response without an id":    {obj{"type": "response.in_progress", "response": obj{"status": "in_progress"}}, "identity_mismatch"},
		"completed, of another response":        {completed(final, "resp_2", "completed"), "identity_mismatch"},
		"failed, of another response":           {obj{"type": "response.failed", "response": obj{"id": "resp_2", "status": "failed"}}, "identity_mismatch"},
		"completed with the status incomplete":  {completed(final, "resp_1", "incomplete"), "status"},
		"completed without a status":            {obj{"type": "response.completed", "response": obj{"id": "resp_1", "output": final}}, "status"},
		"completed with a null status":          {obj{"type": "response.completed", "response": obj{"id": "resp_1", "status": nil, "output": final}}, "status"},
	} {
		expectFailure(t, append(append([]any{}, base...), c.event), c.want, what)
	}
}

func TestProviderFailures(t *testing.T) {
	base := []any{created("resp_1"), added(callItem("fc_1", "call_1", "read", "", "in_progress")), delta("fc_1", `{"path": "a.py"}`)}
	for what, c := range map[string]struct {
		event      obj
		code, said string
	}{
		"failed": {obj{"type": "response.failed", "response": obj{"id": "resp_1", "status": "failed",
			"error": obj{"code": "server_error", "message": "model crashed"}}}, "failed", "model crashed"},
		"failed, a code only": {obj{"type": "response.failed", "response": obj{"id": "resp_1", "status": "failed",
			"error": obj{"code": "server_error", "message": ""}}}, "failed", "server_error"},
		"incomplete": {obj{"type": "response.incomplete", "response": obj{"id": "resp_1", "status": "incomplete",
			"incomplete_details": obj{"reason": "max_output_tokens"}}}, "incomplete", "max_output_tokens"},
		"error, top level": {obj{"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": nil}, "error", "slow down"},
		"error, nested":    {obj{"type": "error", "error": obj{"type": "server_error", "code": "server_error", "message": "upstream gone"}}, "error", "upstream gone"},
		"error, bare":      {obj{"type": "error"}, "error", ""},
	} {
		asm := newAssembly(t, nil)
		if got := feed(asm, base); got.err != nil || got.decision != nil {
			t.Fatalf("%s: the stream before the failure is progress, got %v", what, got)
		}
		if asm.Pending() != 1 {
			t.Errorf("%s: one call is buffered before the failure, Pending() gives %d", what, asm.Pending())
		}
		_, err := asm.Accept(encode(c.event))
		var failure *responses.ResponseError
		if !errors.As(err, &failure) || failure.Code != c.code {
			t.Errorf("%s: got %v, want failure %q", what, err, c.code)
			continue
		}
		if failure.Detail == "" || !strings.Contains(failure.Detail, c.said) {
			t.Errorf("%s: the failure's Detail must carry what the provider said (%q, if it said anything): %q", what, c.said, failure.Detail)
		}
		if want := c.code + ": " + failure.Detail; failure.Error() != want {
			t.Errorf("%s: a *ResponseError reads \"code: detail\": got %q, want %q", what, failure.Error(), want)
		}
		if asm.Pending() != 0 {
			t.Errorf("%s: buffered calls must be discarded, %d still are", what, asm.Pending())
		}
	}
	if got := (&responses.ResponseError{Code: "failed"}).Error(); got != "failed" {
		t.Errorf("a *ResponseError without a Detail reads as its code alone: got %q", got)
	}
}

func TestPreviewBounded(t *testing.T) {
	if responses.MaxPreviewChars != 64_000 || responses.MaxPendingCalls != 8 || responses.MaxArgumentChars != 16_000 {
		t.Errorf("the bounds: MaxPreviewChars %d, MaxPendingCalls %d, MaxArgumentChars %d; want 64000, 8, 16000",
			responses.MaxPreviewChars, responses.MaxPendingCalls, responses.MaxArgumentChars)
	}
	for _, c := range []struct {
		chars int
		ok    bool
		rune  string
	}{{64_000, true, "a"}, {64_001, false, "a"}, {64_000, true, "é"}, {64_001, false, "é"}, {64_000, true, "😀"}} {
		first, second := strings.Repeat(c.rune, 40_000), strings.Repeat(c.rune, c.chars-40_000)
		rec := &recorder{}
		got := feed(newAssembly(t, rec), []any{created("resp_1"), textDelta(first, "output_text"), textDelta(second, "refusal")})
		what := fmt.Sprintf("%d characters %q of text and refusal", c.chars, c.rune)
		if c.ok {
			if got.err != nil {
				t.Errorf("%s are within the 64,000 bound (characters, not bytes): got %v", what, got)
			}
			if len(rec.reports) != 2 || rec.reports[0] != [2]string{"text", first} || rec.reports[1] != [2]string{"refusal", second} {
				t.Errorf("%s: each delta is reported as (kind, delta): got %d reports %.80q", what, len(rec.reports), rec.reports)
			}
		} else {
			if got.code != "preview_limit" {
				t.Errorf("%s are one past the 64,000 bound: got %v, want failure preview_limit", what, got)
			}
			if len(rec.reports) != 1 {
				t.Errorf("%s: the delta that crosses the bound is not reported (%d reports)", what, len(rec.reports))
			}
		}
		// every delta counts, however small
		many := []any{created("resp_1")}
		for i := 0; i < c.chars/100; i++ {
			many = append(many, textDelta(strings.Repeat(c.rune, 100), "output_text"))
		}
		many = append(many, textDelta(strings.Repeat(c.rune, c.chars%100), "refusal"))
		want := "no decision"
		if !c.ok {
			want = fmt.Sprintf("failure preview_limit at event %d", len(many)-1)
		}
		if got := feed(newAssembly(t, nil), many).String(); got != want {
			t.Errorf("%s in 100-character deltas: got %s, want %s", what, got, want)
		}
	}
}

func TestArgumentBounds(t *testing.T) {
	for _, c := range []struct {
		size int
		ok   bool
		rune string
	}{{16_000, true, "p"}, {16_001, false, "p"}, {16_000, true, "é"}, {16_001, false, "é"}} {
		body := `{"path": "` + strings.Repeat(c.rune, c.size-12) + `"}`
		runes := []rune(body)
		want := "a decision at event"
		if !c.ok {
			want = "failure argument_limit"
		}
		final := []any{callItem("fc_1", "call_1", "read", body, "completed")}
		rec := &recorder{}
		split := []any{created("resp_1"), added(callItem("fc_1", "call_1", "read", "", "in_progress")), delta("fc_1", string(runes[:9000])), delta("fc_1", string(runes[9000:]))}
		feed(responses.NewAssembly(toolSpecs(t), rec.report), split)
		if reports := rec.kinds("arguments"); c.ok && (len(reports) != 2 || !regexp.MustCompile(`\b9000\b`).MatchString(reports[0]) ||
			!regexp.MustCompile(fmt.Sprintf(`\b%d\b`, c.size)).MatchString(reports[1])) {
			t.Errorf("%d characters %q in two deltas: each report gives the characters buffered so far (9000, then %d): %q", c.size, c.rune, c.size, reports)
		}
		for how, evs := range map[string][]any{
			"in deltas": {created("resp_1"), added(callItem("fc_1", "call_1", "read", "", "in_progress")),
				delta("fc_1", string(runes[:9000])), delta("fc_1", string(runes[9000:])), completed(final, "resp_1", "completed")},
			"in the added item": {created("resp_1"), added(callItem("fc_1", "call_1", "read", body, "in_progress")), completed(final, "resp_1", "completed")},
			"half in the added item": {created("resp_1"), added(callItem("fc_1", "call_1", "read", string(runes[:8000]), "in_progress")),
				delta("fc_1", string(runes[8000:])), completed(final, "resp_1", "completed")},
		} {
			if got := feed(newAssembly(t, nil), evs).String(); !strings.HasPrefix(got, want) {
				t.Errorf("%d characters %q of arguments %s: got %s, want %s", c.size, c.rune, how, got, want)
			}
		}
		if c.ok { // the bound is per call: two calls of that size each stay within it
			two := []any{created("resp_1"), added(callItem("fc_1", "call_1", "read", "", "in_progress")), added(callItem("fc_2", "call_2", "read", "", "in_progress")),
				delta("fc_1", body), delta("fc_2", body),
				completed([]any{callItem("fc_1", "call_1", "read", body, "completed"), callItem("fc_2", "call_2", "read", body, "completed")}, "resp_1", "completed")}
			if got := feed(newAssembly(t, nil), two); got.decision == nil {
				t.Errorf("two calls of %d characters each: got %v", c.size, got)
			}
		}
	}
}

func TestArgumentDeltaNeedsKnownItem(t *testing.T) {
	expectFailure(t, []any{created("resp_1"), delta("fc_9", `{"path": "a.py"}`)}, "unknown_item", "a delta for an item never added")
	expectFailure(t, []any{created("resp_1"), added(messageItem()), delta("msg_1", "{}")}, "unknown_item", "a delta for a message item")
	one := []any{created("resp_1"), added(callItem("fc_1", "call_1", "read", "", "in_progress")), delta("fc_1", `{"path": `)}
	expectFailure(t, append(append([]any{}, one...), delta("fc_9", `"a.py"}`)), "unknown_item", "a delta for an unknown item while one call is pending")
	two := append(append([]any{}, one...), added(callItem("fc_2", "call_2", "read", "", "in_progress")), delta("fc_2", `{"path": `))
	expectFailure(t, append(two, delta("fc_9", `"b.py"}`)), "unknown_item", "a delta for an unknown item while two calls are pending")
	expectFailure(t, append(append([]any{}, one...), with(delta("fc_9", ""), "item_id", absent)), "unknown_item", "a delta naming no item")
}

func TestDoneArgumentsMatchStream(t *testing.T) {
	paris, lisbon := `{"path": "paris.py"}`, `{"path": "lisbon.py"}`
	stream := []any{created("resp_1"), added(callItem("fc_1", "call_1", "read", "", "in_progress")), delta("fc_1", `{"path": `), delta("fc_1", `"paris.py"}`),
		added(callItem("fc_2", "call_2", "read", "", "in_progress")), delta("fc_2", lisbon)}
	final := completed([]any{callItem("fc_1", "call_1", "read", paris, "completed"), callItem("fc_2", "call_2", "read", lisbon, "completed")}, "resp_1", "completed")
	plus := func(extra ...any) []any { return append(append([]any{}, stream...), extra...) }

	asm := newAssembly(t, nil)
	matching := plus(done("fc_1", paris), done("fc_2", lisbon), itemDone(callItem("fc_1", "call_1", "read", paris, "completed")),
		itemDone(with(callItem("fc_2", "call_2", "read", lisbon, "completed"), "arguments", absent)))
	for _, event := range matching {
		if got, err := asm.Accept(encode(event)); got != nil || err != nil {
			t.Fatalf("a done event or a finished item stating exactly the fragments is progress: %s gave (%v, %v)", show(event), got, err)
		}
	}
	if got, err := asm.Accept(encode(final)); err != nil || got == nil || len(got.ToolCalls) != 2 || got.ToolCalls[0].Arguments["path"] != "paris.py" || got.ToolCalls[1].Arguments["path"] != "lisbon.py" {
		t.Errorf("after matching done events the response completes as streamed: got (%+v, %v)", got, err)
	}

	noArguments := with(done("fc_2", lisbon), "arguments", absent)
	for what, c := range map[string]struct {
		events []any
		want   string
	}{
		// the final arguments are the authority, checked against the fragments: any difference fails
		"a fragment lost":               {append(append(append([]any{}, stream[:3]...), stream[4:]...), done("fc_1", paris)), "call_mismatch"},
		"a fragment more":               {plus(delta("fc_2", " "), done("fc_2", lisbon)), "call_mismatch"},
		"another call's arguments":      {plus(done("fc_1", lisbon)), "call_mismatch"},
		"no fragment at all":            {[]any{created("resp_1"), added(callItem("fc_1", "call_1", "read", "", "in_progress")), done("fc_1", paris)}, "call_mismatch"},
		"a fragment after the done":     {plus(done("fc_2", lisbon), delta("fc_2", "")), "call_mismatch"},
		"the done event twice":          {plus(done("fc_2", lisbon), done("fc_2", lisbon)), "call_mismatch"},
		"a done without arguments":      {plus(noArguments), "malformed_event"},
		"a done with arguments null":    {plus(with(done("fc_2", lisbon), "arguments", nil)), "malformed_event"},
		"a done with an object":         {plus(with(done("fc_2", lisbon), "arguments", obj{"path": "lisbon.py"})), "malformed_event"},
		"a done for an item never seen": {plus(done("fc_9", paris)), "unknown_item"},
		// the finished item restates its call: the same call id, name and (when it says) arguments
		"a finished item, other arguments": {plus(done("fc_1", paris), itemDone(callItem("fc_1", "call_1", "read", lisbon, "completed"))), "call_mismatch"},
		"a finished item, arguments null":  {plus(itemDone(with(callItem("fc_1", "call_1", "read", "", "completed"), "arguments", nil))), "call_mismatch"},
		"a finished item, other call id":   {plus(itemDone(callItem("fc_2", "call_9", "read", lisbon, "completed"))), "call_mismatch"},
		"a finished item, other name":      {plus(itemDone(callItem("fc_2", "call_2", "edit", lisbon, "completed"))), "call_mismatch"},
		"a finished item never added":      {plus(itemDone(callItem("fc_9", "call_9", "read", lisbon, "completed"))), "unknown_item"},
		"a finished item, call id null":    {plus(itemDone(with(callItem("fc_2", "call_2", "read", lisbon, "completed"), "call_id", nil))), "malformed_event"},
	} {
		expectFailure(t, append(append([]any{}, c.events...), final), c.want, what)
		if got := feed(newAssembly(t, nil), append(append([]any{}, c.events...), final)); got.at >= len(c.events) {
			t.Errorf("%s: the disagreement fails at the done event or the fragment after it, not later (%v)", what, got)
		}
	}
}

func TestCallCountBounded(t *testing.T) {
	for _, c := range []struct {
		count int
		want  string
	}{{8, "a decision"}, {9, "failure call_limit"}} {
		evs := []any{created("resp_1"), added(messageItem())}
		var final []any
		for i := 0; i < c.count; i++ {
			args := fmt.Sprintf(`{"path": "f%d.py"}`, i)
			evs = append(evs, added(callItem(fmt.Sprintf("fc_%d", i), fmt.Sprintf("call_%d", i), "read", "", "in_progress")), delta(fmt.Sprintf("fc_%d", i), args))
			final = append(final, callItem(fmt.Sprintf("fc_%d", i), fmt.Sprintf("call_%d", i), "read", args, "completed"))
		}
		evs = append(evs, completed(final, "resp_1", "completed"))
		if got := feed(newAssembly(t, nil), evs).String(); !strings.HasPrefix(got, c.want) {
			t.Errorf("%d function calls (a message item beside them does not count): got %s, want %s", c.count, got, c.want)
		}
	}
}

func TestDuplicateItemRejected(t *testing.T) {
	evs := []any{created("resp_1"), added(callItem("fc_1", "call_1", "read", "", "in_progress")), delta("fc_1", `{"path": "a.py"}`),
		added(callItem("fc_1", "call_2", "read", "", "in_progress"))}
	expectFailure(t, evs, "duplicate_item", "a function-call item id added a second time")
	expectFailure(t, append(append([]any{}, evs[:3]...), done("fc_1", `{"path": "a.py"}`), evs[3]), "duplicate_item",
		"a function-call item id added again after its done event")
}

func TestTerminalMatchesStream(t *testing.T) {
	args := `{"path": "a.py"}`
	stream := []any{created("resp_1"), added(callItem("fc_1", "call_1", "read", "", "in_progress")), delta("fc_1", args),
		added(callItem("fc_2", "call_2", "read", "", "in_progress")), delta("fc_2", `{"path": "b.py"}`)}
	first := callItem("fc_1", "call_1", "read", args, "completed")
	second := callItem("fc_2", "call_2", "read", `{"path": "b.py"}`, "completed")
	got := feed(newAssembly(t, nil), append(append([]any{}, stream...), completed([]any{second, first}, "resp_1", "completed")))
	if got.decision == nil || len(got.decision.ToolCalls) != 2 || got.decision.ToolCalls[0].ID != "call_2" || got.decision.ToolCalls[1].ID != "call_1" {
		t.Errorf("the final output may list the calls in its own order, and the calls keep it: got %v %+v", got, got.decision)
	}
	for what, c := range map[string]struct {
		extra  []any
		output []any
		want   string
	}{
		"the arguments differ":                  {nil, []any{with(first, "arguments", `{"path": "c.py"}`), second}, "call_mismatch"},
		"the arguments differ by a space":       {nil, []any{with(first, "arguments", `{"path":"a.py"}`), second}, "call_mismatch"},
		"the name differs":                      {nil, []any{with(first, "name", "edit"), second}, "call_mismatch"},
		"the call id differs":                   {nil, []any{with(first, "call_id", "call_9"), second}, "call_mismatch"},
		"a call never streamed":                 {nil, []any{first, second, callItem("fc_3", "call_3", "read", args, "completed")}, "call_not_streamed"},
		"a streamed call left out":              {nil, []any{second}, "call_missing"},
		"the first streamed call left out":      {nil, []any{second, messageItem()}, "call_missing"},
		"the done event disagreed earlier":      {[]any{done("fc_1", `{"path": "c.py"}`)}, []any{first, second}, "call_mismatch"},
		"the finished item disagreed earlier":   {[]any{itemDone(with(first, "arguments", `{"path": "c.py"}`))}, []any{first, second}, "call_mismatch"},
		"a final call whose arguments are null": {nil, []any{with(first, "arguments", nil), second}, "malformed_event"},
	} {
		evs := append(append(append([]any{}, stream...), c.extra...), completed(c.output, "resp_1", "completed"))
		expectFailure(t, evs, c.want, what)
	}
}

func TestCallIdsUnique(t *testing.T) {
	for what, ids := range map[string][]string{"an empty call id": {""}, "a call id used twice": {"call_1", "call_1"}, "a repeated id after another": {"call_1", "call_2", "call_1"}} {
		evs := []any{created("resp_1")}
		var final []any
		for n, id := range ids {
			args := fmt.Sprintf(`{"path": "%d.py"}`, n)
			evs = append(evs, added(callItem(fmt.Sprintf("fc_%d", n), id, "read", "", "in_progress")), delta(fmt.Sprintf("fc_%d", n), args))
			final = append(final, callItem(fmt.Sprintf("fc_%d", n), id, "read", args, "completed"))
		}
		expectFailure(t, append(evs, completed(final, "resp_1", "completed")), "call_id", what)
	}
}

func TestArgumentsValidated(t *testing.T) {
	edit := `{"path": "a.py", "old": "x", "new": "y"}`
	for what, c := range map[string]struct {
		arguments, tool, want string
	}{
		"not JSON":                 {`{path: a.py}`, "edit", "bad_arguments"},
		"truncated":                {`{"path": "a.py", "old": "x", "new": "y"`, "edit", "bad_arguments"},
		"an array":                 {`["a.py", "x", "y"]`, "edit", "bad_arguments"},
		"a string":                 {`"a.py"`, "edit", "bad_arguments"},
		"empty":                    {``, "edit", "bad_arguments"},
		"a name missing":           {`{"path": "a.py", "old": "x"}`, "edit", "bad_arguments"},
		"a name too many":          {`{"path": "a.py", "old": "x", "new": "y", "mode": "w"}`, "edit", "bad_arguments"},
		"a name in another case":   {`{"path": "a.py", "old": "x", "NEW": "y"}`, "edit", "bad_arguments"},
		"a null value":             {`{"path": "a.py", "old": "x", "new": null}`, "edit", "bad_arguments"},
		"a number value":           {`{"path": "a.py", "old": "x", "new": 5}`, "edit", "bad_arguments"},
		"an object value":          {`{"path": "a.py", "old": "x", "new": {"text": "y"}}`, "edit", "bad_arguments"},
		"null for a bare tool":     {`null`, "ping", "bad_arguments"},
		"an array for a bare tool": {`[]`, "ping", "bad_arguments"},
		"a tool not exposed":       {edit, "write", "unknown_tool"},
		"a tool with no name":      {edit, "", "unknown_tool"},
	} {
		asm := responses.NewAssembly(append(toolSpecs(t), responses.ToolSpec{Name: "ping"}), nil)
		evs := oneCall(c.arguments, c.tool)
		got := feed(asm, evs)
		if got.code != c.want {
			t.Errorf("%s: arguments %q for the tool %q: got %v, want failure %s", what, c.arguments, c.tool, got, c.want)
		}
	}
	for _, c := range []struct {
		arguments, tool string
		want            map[string]string
	}{
		{edit, "edit", map[string]string{"path": "a.py", "old": "x", "new": "y"}},
		{` { "new" : "y" , "old" : "" , "path" : "a.py" } `, "edit", map[string]string{"path": "a.py", "old": "", "new": "y"}},
		{`{}`, "ping", map[string]string{}},
	} {
		got := feed(responses.NewAssembly(append(toolSpecs(t), responses.ToolSpec{Name: "ping"}), nil), oneCall(c.arguments, c.tool))
		if got.decision == nil || len(got.decision.ToolCalls) != 1 || !reflect.DeepEqual(got.decision.ToolCalls[0].Arguments, c.want) {
			t.Errorf("exactly the declared names, all strings (%q for %s): got %v %+v, want the arguments %q", c.arguments, c.tool, got, got.decision, c.want)
		}
	}
}

func TestUnsupportedItemsRejected(t *testing.T) {
	text := obj{"type": "output_text", "text": "Done.", "annotations": []any{}}
	refusal := obj{"type": "refusal", "refusal": "No."}
	for what, output := range map[string][]any{
		"a reasoning item":           {obj{"id": "rs_1", "type": "reasoning", "summary": []any{}}, messageItem(text)},
		"a web_search_call item":     {messageItem(text), obj{"id": "ws_1", "type": "web_search_call", "status": "completed"}},
		"an item that is no object":  {messageItem(text), "function_call"},
		"an item without a type":     {messageItem(text), obj{"id": "x_1"}},
		"an item whose type is null": {obj{"id": "x_1", "type": nil}},
		"an audio part":              {messageItem(text, obj{"type": "output_audio", "data": "UklGRg=="})},
		"a part that is no object":   {messageItem("Done.")},
	} {
		expectFailure(t, []any{created("resp_1"), completed(output, "resp_1", "completed")}, "unsupported_item", what)
	}
	for what, c := range map[string]struct {
		output                []any
		content, refusal      string
		wantCalls, wantReject bool
	}{
		"a refusal part":                           {[]any{messageItem(refusal)}, "", "No.", false, false},
		"text and refusal parts of two messages":   {[]any{messageItem(text, refusal), messageItem(with(text, "text", " Bye."), with(refusal, "refusal", " Sorry."))}, "Done. Bye.", "No. Sorry.", false, false},
		"an empty output":                          {[]any{}, "", "", false, false},
		"a text part without its text (absent)":    {[]any{messageItem(with(text, "text", absent))}, "", "", false, false},
		"a message with no parts, beside its text": {[]any{messageItem(), messageItem(text)}, "Done.", "", false, false},
	} {
		got := feed(newAssembly(t, nil), []any{created("resp_1"), completed(c.output, "resp_1", "completed")})
		if got.decision == nil {
			t.Errorf("%s: got %v, want a decision", what, got)
			continue
		}
		d := got.decision
		if d.Role != responses.RoleAssistant || d.Content != c.content || d.Refusal != c.refusal || len(d.ToolCalls) != 0 {
			t.Errorf("%s: got role %q, content %q, refusal %q, %d calls; want assistant, %q, %q, none", what, d.Role, d.Content, d.Refusal, len(d.ToolCalls), c.content, c.refusal)
		}
	}
}

func TestMalformedEvents(t *testing.T) {
	start := []any{created("resp_1")}
	for what, event := range map[string]any{
		"an event that is a list":                  []byte(`["response.output_text.delta"]`),
		"an event that is a string":                []byte(`"response.created"`),
		"an event that is null":                    []byte(`null`),
		"data that is not JSON":                    []byte(`{not json`),
		"empty data":                               []byte(``),
		"an event without a type":                  obj{"delta": "hi"},
		"a type that is no string":                 obj{"type": 7},
		"a type that is null":                      obj{"type": nil},
		"a type spelt Type only":                   obj{"Type": "response.in_progress"},
		"a delta that is null":                     obj{"type": "response.output_text.delta", "delta": nil},
		"a delta that is a number":                 obj{"type": "response.refusal.delta", "delta": 5},
		"an item that is no object":                obj{"type": "response.output_item.added", "item": "function_call"},
		"an added event without its item":          obj{"type": "response.output_item.added"},
		"an output that is null":                   completed(nil, "resp_1", "completed"),
		"an output that is an object":              obj{"type": "response.completed", "response": obj{"id": "resp_1", "status": "completed", "output": obj{}}},
		"a completed event without its response":   obj{"type": "response.completed"},
		"content that is no list":                  completed([]any{obj{"id": "msg_1", "type": "message", "role": "assistant", "content": "Done."}}, "resp_1", "completed"),
		"content that is null":                     completed([]any{with(messageItem(), "content", nil)}, "resp_1", "completed"),
		"a text part whose text is null":           completed([]any{messageItem(obj{"type": "output_text", "text": nil})}, "resp_1", "completed"),
		"a refusal part whose refusal is a number": completed([]any{messageItem(obj{"type": "refusal", "refusal": 1})}, "resp_1", "completed"),
		"a call's arguments that are null":         added(with(callItem("fc_1", "call_1", "read", "", "in_progress"), "arguments", nil)),
		"a call's call_id that is null":            added(with(callItem("fc_1", "call_1", "read", "", "in_progress"), "call_id", nil)),
		"a call's item id that is a number":        added(with(callItem("fc_1", "call_1", "read", "", "in_progress"), "id", 1)),
		"a delta whose item_id is null":            with(delta("fc_1", "x"), "item_id", nil),
	} {
		expectFailure(t, append(append([]any{}, start...), event), "malformed_event", what)
	}
	call := added(callItem("fc_1", "call_1", "read", "", "in_progress"))
	for what, event := range map[string]any{
		"a fragment that is null":                    with(delta("fc_1", ""), "delta", nil),
		"a finished call whose item id is a number":  itemDone(with(callItem("fc_1", "call_1", "read", "", "completed"), "id", 1)),
		"a finished call whose name is an object":    itemDone(with(callItem("fc_1", "call_1", "read", "", "completed"), "name", obj{})),
		"a final call whose call_id is null":         completed([]any{with(callItem("fc_1", "call_1", "read", "", "completed"), "call_id", nil)}, "resp_1", "completed"),
		"a done event whose item_id is a list":       with(done("fc_1", ""), "item_id", []any{"fc_1"}),
		"a completed event whose response is a list": obj{"type": "response.completed", "response": []any{}},
	} {
		expectFailure(t, []any{created("resp_1"), call, event}, "malformed_event", what+", for a buffered call")
	}
	// Progress of any kind, known or not yet known, changes nothing; an absent field reads as its
	// empty value, and a key in another case is another key.
	progress := []any{}
	for _, kind := range []string{"response.in_progress", "response.queued", "response.output_item.done", "response.content_part.added",
		"response.content_part.done", "response.output_text.done", "response.refusal.done", "response.output_text.annotation.added",
		"response.future_event", "Response.Completed", "response.completed "} {
		progress = append(progress, obj{"type": kind, "item_id": "x"})
	}
	progress = append(progress,
		added(obj{"id": "rs_1", "type": "reasoning"}),
		added(obj{"id": "msg_1", "type": "message", "content": nil}),
		obj{"type": "response.output_item.done", "item": "not an object"},
		obj{"type": "response.output_item.done", "item": obj{"id": "msg_1", "type": "message"}},
		obj{"type": "response.output_text.delta"},
		obj{"type": "response.output_text.delta", "delta": "hi", "DELTA": 7, "Delta": nil},
		obj{"type": "response.in_progress", "Response": obj{"id": "resp_other"}, "RESPONSE_ID": "resp_other"},
	)
	rec := &recorder{}
	if got := feed(newAssembly(t, rec), append(append([]any{}, start...), progress...)); got.err != nil || got.decision != nil {
		t.Errorf("progress events must be accepted as progress: got %v (%s)", got, describe(progress[min(got.at-1, len(progress)-1)]))
	}
	if want := [][2]string{{"text", ""}, {"text", "hi"}}; !reflect.DeepEqual(rec.reports, want) {
		t.Errorf("a delta without its delta field is an empty delta, and DELTA or Delta is not delta: reports %q, want %q", rec.reports, want)
	}
}
