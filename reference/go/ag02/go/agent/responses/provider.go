package responses

// course: begin imports
import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"
)

// course: end imports

// The retry policy of opening a stream: at most MaxAttempts attempts in all, the wait before
// attempt n+1 being BaseDelay * 2^(n-1), scaled by a random factor in [1-Jitter, 1+Jitter].
const (
	MaxAttempts = 3
	BaseDelay   = 250 * time.Millisecond
	Jitter      = 0.10
)

// Retryable says whether a failure to open may be tried again: no answer at all (an *OpenError of
// Status 0), or a server error (500 to 599). Any other status is an answer about the request or
// the account (401 a bad key, 429 a rate or a quota) that an immediate retry would only repeat;
// an error that is no *OpenError (a bug, a cancelled context) is not retried either.
func Retryable(err error) bool {
	// course: begin Retryable
	var failure *OpenError
	return errors.As(err, &failure) && (failure.Status == 0 || 500 <= failure.Status && failure.Status <= 599)
	// course: end Retryable
}

// Provider turns the portable history into one validated assistant decision per Complete. It holds
// no state of a call: several goroutines may use one Provider at once.
type Provider struct {
	Opener Opener
	Model  string
	Report Report // observes progress; nil shows nothing
	// Sleep waits between opening attempts; nil is the package's Sleep. Tests inject their own.
	Sleep func(ctx context.Context, d time.Duration) error
	// Random draws each wait's jitter, in [0, 1); nil draws from math/rand/v2. Tests inject their own.
	Random interface{ Float64() float64 }
}

// Sleep waits d, or until ctx is done, when it returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Complete sends one request built by BuildRequest (with MaxOutputTokens) and returns the
// decision of its response: the Message an Assembly releases at response.completed.
//
// Only opening is retried, and only while Retryable: before attempt n+1 it reports ("retry", ...)
// and waits through Sleep (a wait that fails, because ctx is done, ends Complete with its error);
// when the attempts run out, or a failure may not be retried, that failure is returned as it came.
// Once a stream is acquired nothing is retried: a stream that ends without response.completed is
// a *ResponseError "stream_ended", and a failure of the stream or of the assembly is returned as
// it is. The stream is closed exactly once before Complete returns, however it returns; when
// closing fails, Complete returns no decision and an error that holds the close error.
func (p *Provider) Complete(ctx context.Context, history []Message, tools []ToolSpec) (decision Message, err error) {
	// course: begin Provider_Complete
	request, err := BuildRequest(history, tools, p.Model, MaxOutputTokens)
	if err != nil {
		return Message{}, err
	}
	stream, err := p.open(ctx, request)
	if err != nil {
		return Message{}, err
	}
	// From here on nothing is retried: the stream may already have shown text or buffered calls.
	defer func() {
		// The decision waits for this; if closing fails, the decision never reaches the loop.
		if closeErr := stream.Close(); closeErr != nil {
			decision, err = Message{}, errors.Join(err, closeErr)
		}
	}()
	return p.consume(stream, tools)
	// course: end Provider_Complete
}

// course: begin helpers

// open acquires a stream, in at most MaxAttempts attempts with jittered exponential waits.
func (p *Provider) open(ctx context.Context, request *Request) (Stream, error) {
	sleep, report := p.Sleep, p.Report
	if sleep == nil {
		sleep = Sleep
	}
	if report == nil {
		report = func(string, string) {}
	}
	for failures := 1; ; failures++ {
		stream, err := p.Opener.Open(ctx, request)
		if err == nil {
			return stream, nil
		}
		if failures == MaxAttempts || !Retryable(err) {
			return nil, err
		}
		delay := time.Duration(float64(BaseDelay<<(failures-1)) * (1 - Jitter + 2*Jitter*p.random()))
		report("retry", fmt.Sprintf("opening failed (%v); attempt %d of %d in %.2f s", err, failures+1, MaxAttempts, delay.Seconds()))
		if err := sleep(ctx, delay); err != nil {
			return nil, err
		}
	}
}

func (p *Provider) random() float64 {
	if p.Random != nil {
		return p.Random.Float64()
	}
	return rand.Float64()
}

// consume feeds events to the assembly until it releases a decision; a stream that just stops is a failure.
func (p *Provider) consume(stream Stream, tools []ToolSpec) (Message, error) {
	assembly := NewAssembly(tools, p.Report)
	for {
		data, err := stream.Next()
		if err == io.EOF {
			return Message{}, &ResponseError{Code: "stream_ended", Detail: "the stream ended without response.completed"}
		}
		if err != nil {
			return Message{}, err
		}
		decision, err := assembly.Accept(data)
		if err != nil {
			return Message{}, err
		}
		if decision != nil {
			return *decision, nil
		}
	}
}

// course: end helpers
