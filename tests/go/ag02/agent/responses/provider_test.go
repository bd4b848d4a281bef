package responses_test

// The boundary the loop awaits: retries around opening only, one stream consumed and closed
// (sections 2.5 and 2.6), driven by a scripted Opener whose streams replay authored sequences.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"tinyllm/agent/responses"
)

func TestCompleteReturnsTheDecision(t *testing.T) {
	sc := newScript(replay(t, "single_call"))
	rec := &recorder{}
	caller := append([]responses.Message(nil), history...)
	decision, err := newProvider(sc, rec, nil).Complete(context.Background(), caller, toolSpecs(t))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if want := load(t, "single_call").Expect.Message; !sameJSON(messageForm(decision), want) {
		t.Errorf("Complete returns the validated decision:\n got  %s\n want %s", show(messageForm(decision)), show(want))
	}
	if sc.requestCount() != 1 {
		t.Fatalf("one request, got %d", sc.requestCount())
	}
	sent := sc.request(1)
	input, _ := sent["input"].([]any)
	var tools []any
	for _, tool := range sent["tools"].([]any) {
		tools = append(tools, tool.(map[string]any)["name"])
	}
	if sent["stream"] != true || sent["store"] != false || sent["model"] != model || sent["max_output_tokens"] != 2048.0 ||
		len(input) != 1 || input[0].(map[string]any)["content"] != history[0].Content || !sameJSON(tools, []string{"read", "edit"}) {
		t.Errorf("the request is BuildRequest's (model, the history, the tools, MaxOutputTokens): got %s", show(sent))
	}
	if log := sc.logged(); len(log) < 2 || log[len(log)-1] != "close" || log[len(log)-2] != "event response.completed" || strings.Count(strings.Join(log, "|"), "close") != 1 {
		t.Errorf("the stream is closed once, after its last event, before Complete returns: %q", log)
	}
	if len(rec.sleeps) != 0 {
		t.Errorf("no wait without a failure: %v", rec.sleeps)
	}
	if len(rec.kinds("arguments")) != 3 {
		t.Errorf("argument progress reaches the Report observer: %q", rec.reports)
	}
	if !reflect.DeepEqual(caller, history) {
		t.Errorf("Complete must not change the caller's history: %+v", caller)
	}
	// One Provider, eight Completes at once: each has its own stream, assembly and decision.
	streams, specs, want := make(chan *replayStream, 8), toolSpecs(t), load(t, "single_call").Expect.Message
	for i := 0; i < 8; i++ {
		streams <- replay(t, "single_call")
	}
	opener := responses.OpenerFunc(func(ctx context.Context, req *responses.Request) (responses.Stream, error) {
		s := <-streams
		s.ctx = ctx
		return s, nil
	})
	shared := &responses.Provider{Opener: opener, Model: model}
	concurrent := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() {
			got, err := shared.Complete(context.Background(), history, specs)
			if err == nil && !sameJSON(messageForm(got), want) {
				err = fmt.Errorf("another decision: %s", show(messageForm(got)))
			}
			concurrent <- err
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-concurrent; err != nil {
			t.Errorf("eight Completes at once on one Provider: %v", err)
		}
	}

	// A history the API would refuse is refused before anything is sent.
	sc = newScript(replay(t, "text_only"))
	bad := []responses.Message{{Role: responses.RoleTool, Content: "?", ToolCallID: "call_9"}}
	if _, err := newProvider(sc, &recorder{}, nil).Complete(context.Background(), bad, toolSpecs(t)); !errors.Is(err, responses.ErrBadHistory) || sc.requestCount() != 0 {
		t.Errorf("a history BuildRequest refuses: got %v after %d opening attempts; want its ErrBadHistory error, nothing opened", err, sc.requestCount())
	}
	// A Provider with only its Opener and Model: nothing reported, the package's Sleep, math/rand.
	bare := &responses.Provider{Opener: newScript(replay(t, "text_only")), Model: model}
	if got, err := bare.Complete(context.Background(), history, toolSpecs(t)); err != nil || got.Content != "The bug is in add(): it subtracts." {
		t.Errorf("a Provider without Report, Sleep and Random: got (%+v, %v)", got, err)
	}
}

func TestFailedStreamNotRetried(t *testing.T) {
	for _, name := range []string{"done_then_failed", "cut_after_last_argument", "reset_mid_arguments", "valid_then_malformed", "output_limit", "reasoning_item"} {
		stream, spare := replay(t, name), replay(t, "single_call")
		sc := newScript(stream, spare)
		rec := &recorder{}
		_, err := complete(t, newProvider(sc, rec, nil))
		if want := load(t, name).Expect.Failure; failureCode(err) != want {
			t.Errorf("%s: got %v, want failure %s", name, err, want)
		}
		taken, closed, after := stream.counts()
		spareTaken, _, _ := spare.counts()
		if sc.requestCount() != 1 || spareTaken != 0 || len(rec.sleeps) != 0 {
			t.Errorf("%s: %d requests, %d waits, %d events of a second stream; a stream, once acquired, is never retried", name, sc.requestCount(), len(rec.sleeps), spareTaken)
		}
		if closed != 1 || after != 0 {
			t.Errorf("%s: the acquired stream was closed %d times (want once), Next called %d times after (want none); %d events taken", name, closed, after, taken)
		}
	}
}

func TestOpeningRetryBoundary(t *testing.T) {
	// Exercise 3: the same network failure, first while opening, then moved into iteration.
	noAnswer := &responses.OpenError{Message: "connection reset by peer", Err: errReset}
	opening := newScript(noAnswer, replay(t, "text_only"))
	rec := &recorder{}
	decision, err := complete(t, newProvider(opening, rec, nil))
	if err != nil || decision.Content != "The bug is in add(): it subtracts." {
		t.Errorf("a failed opening is retried: got (%+v, %v)", decision, err)
	}
	if opening.requestCount() != 2 || len(rec.sleeps) != 1 {
		t.Errorf("one retry: %d requests, %d waits", opening.requestCount(), len(rec.sleeps))
	} else if !reflect.DeepEqual(opening.request(1), opening.request(2)) {
		t.Errorf("the retry sends the same request:\n %s\n %s", show(opening.request(1)), show(opening.request(2)))
	}

	broken := newStream(events(t, "text_only")[:3], "reset")
	iteration := newScript(broken, replay(t, "text_only"))
	rec = &recorder{}
	_, err = complete(t, newProvider(iteration, rec, nil))
	if !errors.Is(err, errReset) {
		t.Errorf("the failure in the middle of the stream reaches the caller (errors.Is finds it): got %v", err)
	}
	if _, closed, _ := broken.counts(); iteration.requestCount() != 1 || len(rec.sleeps) != 0 || closed != 1 {
		t.Errorf("a failure after the stream was acquired is not retried: %d requests, waits %v; the stream closed %d times (want once)", iteration.requestCount(), rec.sleeps, closed)
	}

	empty := newScript(newStream(nil, "eof"), replay(t, "text_only"))
	_, err = complete(t, newProvider(empty, &recorder{}, nil))
	if code(err) != "stream_ended" || empty.requestCount() != 1 {
		t.Errorf("an empty acquired stream is a *ResponseError stream_ended, not retried: got %v after %d requests", err, empty.requestCount())
	}
}

func TestRetrySchedule(t *testing.T) {
	for _, at := range []float64{0, 0.5, 0.999} {
		failures := []any{&responses.OpenError{Message: "connection refused", Err: syscall.ECONNREFUSED},
			&responses.OpenError{Status: 503, Message: "overloaded"}, &responses.OpenError{Status: 502, Message: "bad gateway"}}
		sc := newScript(failures...)
		rng := &fixedRandom{at: at}
		rec := &recorder{}
		_, err := complete(t, newProvider(sc, rec, rng))
		if err != failures[2] {
			t.Errorf("after three failed openings the last failure is returned as it came: got %v", err)
		}
		if sc.requestCount() != 3 {
			t.Errorf("at most three opening attempts: got %d", sc.requestCount())
		}
		factor := 0.9 + 0.2*at
		want := []time.Duration{time.Duration(float64(250*time.Millisecond) * factor), time.Duration(float64(500*time.Millisecond) * factor)}
		if len(rec.sleeps) != 2 || math.Abs(float64(rec.sleeps[0]-want[0])) > 1e3 || math.Abs(float64(rec.sleeps[1]-want[1])) > 1e3 {
			t.Errorf("random draw %v: waits 250ms then 500ms, scaled by 0.9 + 0.2 x the draw: got %v, want %v", at, rec.sleeps, want)
		}
		if rng.draws != 2 {
			t.Errorf("one draw from the injected Random per wait: got %d draws", rng.draws)
		}
		if retries := rec.kinds("retry"); len(retries) != 2 {
			t.Errorf("each retry is reported as (\"retry\", ...): %q", rec.reports)
		}
		ok := newScript(&responses.OpenError{Message: "refused"}, &responses.OpenError{Status: 500}, replay(t, "text_only"))
		rec = &recorder{}
		if got, err := complete(t, newProvider(ok, rec, &fixedRandom{at: at})); err != nil || !strings.HasPrefix(got.Content, "The bug") {
			t.Errorf("the third attempt may still open the stream: got (%+v, %v)", got, err)
		}
		if ok.requestCount() != 3 || len(rec.sleeps) != 2 {
			t.Errorf("3 requests, 2 waits: got %d, %v", ok.requestCount(), rec.sleeps)
		}
	}

	// The package's Sleep waits, and stops early when the context is done.
	if err := responses.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep(ctx, 1ms) with a live context: got %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	began := time.Now()
	if err := responses.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) || time.Since(began) > 10*time.Second {
		t.Errorf("Sleep with a cancelled context returns its error at once: got %v after %v", err, time.Since(began))
	}
	// A wait that fails ends Complete with its error: no attempt after it.
	for what, sleep := range map[string]func(context.Context, time.Duration) error{
		"the package's Sleep, the context cancelled while opening": nil,
		"an injected Sleep that fails":                             func(context.Context, time.Duration) error { return errWaitFailed },
	} {
		ctx, cancel := context.WithCancel(context.Background())
		attempts := 0
		opener := responses.OpenerFunc(func(context.Context, *responses.Request) (responses.Stream, error) {
			attempts++
			cancel() // the caller gives up while the first attempt fails
			return nil, &responses.OpenError{Message: "connection refused"}
		})
		p := &responses.Provider{Opener: opener, Model: model, Sleep: sleep}
		began := time.Now()
		_, err := p.Complete(ctx, history, toolSpecs(t))
		if !errors.Is(err, context.Canceled) && !errors.Is(err, errWaitFailed) || attempts != 1 || time.Since(began) > 10*time.Second {
			t.Errorf("%s: got %v after %d attempts and %v; want the wait's error, one attempt, at once", what, err, attempts, time.Since(began))
		}
		cancel()
	}
}

var errWaitFailed = errors.New("the wait failed")

func TestJitterSpreadsWaits(t *testing.T) {
	for _, source := range []string{"seeded", "the default"} {
		seen := map[time.Duration]bool{}
		for seed := uint64(0); seed < 20; seed++ {
			sc := newScript(&responses.OpenError{Message: "refused"}, replay(t, "text_only"))
			rec := &recorder{}
			p := &responses.Provider{Opener: sc, Model: model, Report: rec.report, Sleep: rec.sleep}
			if source == "seeded" {
				p.Random = rand.New(rand.NewPCG(seed, 2*seed+1))
			}
			if _, err := p.Complete(context.Background(), history, toolSpecs(t)); err != nil || len(rec.sleeps) != 1 {
				t.Fatalf("%s random source, seed %d: one wait and a decision, got waits %v and %v", source, seed, rec.sleeps, err)
			}
			wait := rec.sleeps[0]
			if wait < 225*time.Millisecond || wait > 275*time.Millisecond {
				t.Errorf("%s random source: the first wait stays within 250ms ± 10%%: %v", source, wait)
			}
			seen[wait] = true
		}
		if len(seen) <= 10 {
			t.Errorf("%s random source: waits differ from one draw to the next, got only %d values over 20", source, len(seen))
		}
	}
}

func TestRetryClassification(t *testing.T) {
	for _, c := range []struct {
		status  int
		retried bool
	}{{0, true}, {500, true}, {502, true}, {503, true}, {599, true},
		{400, false}, {401, false}, {403, false}, {404, false}, {408, false}, {409, false}, {429, false}, {499, false}, {600, false}, {302, false}, {201, false}} {
		failure := &responses.OpenError{Status: c.status, Message: fmt.Sprintf("status %d", c.status)}
		if got := responses.Retryable(failure); got != c.retried {
			t.Errorf("Retryable(an *OpenError of status %d) = %v, want %v", c.status, got, c.retried)
		}
		if got := responses.Retryable(fmt.Errorf("opening: %w", failure)); got != c.retried {
			t.Errorf("Retryable(a wrapped *OpenError of status %d) = %v, want %v (errors.As)", c.status, got, c.retried)
		}
		sc := newScript(failure, replay(t, "text_only"))
		rec := &recorder{}
		_, err := complete(t, newProvider(sc, rec, nil))
		if c.retried {
			if err != nil || sc.requestCount() != 2 {
				t.Errorf("status %d: retried once, got %d requests and %v", c.status, sc.requestCount(), err)
			}
		} else if err != failure || sc.requestCount() != 1 || len(rec.sleeps) != 0 {
			t.Errorf("status %d is not retried: got %v after %d requests and waits %v; want the failure as it came, at once", c.status, err, sc.requestCount(), rec.sleeps)
		}
	}
	for what, err := range map[string]error{"nil": nil, "a plain error": errors.New("HTTP 503"), "context.Canceled": context.Canceled,
		"a *ResponseError": &responses.ResponseError{Code: "transport"}} {
		if responses.Retryable(err) {
			t.Errorf("Retryable(%s) = true: only an *OpenError may be retried", what)
		}
	}
}

func TestOtherErrorsPropagate(t *testing.T) {
	for what, bug := range map[string]error{
		"an error that is no *OpenError": errors.New("bug in the transport"),
		"the context's error":            context.Canceled,
		"a *ResponseError":               &responses.ResponseError{Code: "transport", Detail: "scripted"},
	} {
		sc := newScript(bug, replay(t, "text_only"))
		rec := &recorder{}
		if _, err := complete(t, newProvider(sc, rec, nil)); err != bug {
			t.Errorf("%s, returned while opening, propagates unchanged: got %v", what, err)
		}
		if sc.requestCount() != 1 || len(rec.sleeps) != 0 {
			t.Errorf("%s is never retried: %d requests, waits %v", what, sc.requestCount(), rec.sleeps)
		}
	}
}

func TestStreamClosedAlways(t *testing.T) {
	for _, c := range []struct{ what, name string }{
		{"success", "single_call"}, {"an assembly failure", "valid_then_malformed"}, {"a transport failure", "reset_mid_arguments"},
		{"an end without completion", "cut_after_last_argument"}, {"a provider failure", "done_then_failed"},
	} {
		stream := replay(t, c.name)
		sc := newScript(stream)
		_, err := complete(t, newProvider(sc, &recorder{}, nil))
		if (err == nil) != (c.what == "success") {
			t.Errorf("%s: Complete gave %v", c.what, err)
		}
		if _, closed, after := stream.counts(); closed != 1 || after != 0 {
			t.Errorf("%s: the stream was closed %d times (want exactly once), Next called %d times after Close", c.what, closed, after)
		}
		if log := sc.logged(); log[len(log)-1] != "close" {
			t.Errorf("%s: the close is the last thing done with the stream: %q", c.what, log)
		}
		noGoroutineLeft(t, c.what)
	}

	// The caller gives up while the model is still thinking.
	stream := replay(t, "single_call")
	stream.stallAfter = 3
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-stream.stalling
		cancel()
	}()
	_, err := newProvider(newScript(stream), &recorder{}, nil).Complete(ctx, history, toolSpecs(t))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled Complete returns an error that holds the context's: got %v", err)
	}
	if _, closed, _ := stream.counts(); closed != 1 {
		t.Errorf("a cancelled Complete still closes the stream once: closed %d times", closed)
	}
	noGoroutineLeft(t, "a cancelled Complete")

	// A failure to close stops the decision reaching the loop; it never hides a failure either.
	closeErr := errors.New("close failed")
	for _, c := range []struct{ name, want string }{{"single_call", ""}, {"valid_then_malformed", "bad_arguments"}} {
		stream := replay(t, c.name)
		stream.closeErr = closeErr
		decision, err := complete(t, newProvider(newScript(stream), &recorder{}, nil))
		if !errors.Is(err, closeErr) || code(err) != c.want || !reflect.DeepEqual(decision, responses.Message{}) {
			t.Errorf("%s, Close failing: got (%+v, %v); want no decision and an error that holds the close error%s", c.name, decision, err,
				map[bool]string{true: "", false: " and the failure " + c.want}[c.want == ""])
		}
	}
}

func TestBatchValidatedBeforeExecution(t *testing.T) {
	// Exercise 2, through the loop: a valid edit beside a malformed one executes nothing; fixed, both run.
	tools := toolSpecs(t)
	files := map[string]string{"calculator.py": "def add(a, b):\n    return a - b\n", "test_calculator.py": "assert add(2, 3) == 1\n"}
	ws := newWorkspace(files)
	_, err := runLoop(context.Background(), newProvider(newScript(replay(t, "valid_then_malformed")), &recorder{}, nil), history, tools, ws.execute)
	if code(err) != "bad_arguments" {
		t.Errorf("the malformed second call fails the response: got %v", err)
	}
	if len(ws.executed) != 0 || !reflect.DeepEqual(ws.files, files) {
		t.Errorf("no call of a refused batch runs, not even the valid first: ran %+v", ws.executed)
	}
	sc := newScript(replay(t, "valid_then_valid"), replay(t, "demo_answer"))
	answer, err := runLoop(context.Background(), newProvider(sc, &recorder{}, nil), append([]responses.Message(nil), history...), tools, ws.execute)
	var ran []string
	for _, c := range ws.executed {
		ran = append(ran, c.ID)
	}
	if err != nil || !reflect.DeepEqual(ran, []string{"call_edit_1", "call_edit_2"}) {
		t.Errorf("both calls run, in order: ran %q (%v)", ran, err)
	}
	if !strings.HasSuffix(ws.files["calculator.py"], "return a + b\n") || answer.Content != "add() now returns a + b." {
		t.Errorf("the first edit applied and the loop ends with the answer: %q, %+v", ws.files["calculator.py"], answer)
	}
	var outputs []any
	input, _ := sc.request(2)["input"].([]any)
	for _, item := range input {
		if m, _ := item.(map[string]any); m["type"] == "function_call_output" {
			outputs = append(outputs, m["call_id"])
		}
	}
	if !sameJSON(outputs, []string{"call_edit_1", "call_edit_2"}) {
		t.Errorf("the results go back by call id: %v", outputs)
	}
}
