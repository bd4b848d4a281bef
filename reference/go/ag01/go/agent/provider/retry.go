package provider

// course: begin imports
import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"syscall"
	"time"

	"tinyllm/agent/types"
)

// course: end imports

// RetryPolicy says how often and how patiently to retry. A zero field takes its default.
type RetryPolicy struct {
	MaxAttempts   int           // counts the first attempt; default 3
	Initial       time.Duration // the first wait; default 500ms
	Max           time.Duration // the cap on a computed wait; default 30s
	Multiplier    float64       // default 2
	MaxRetryAfter time.Duration // a server asking for a longer wait is not retried; default 60s
	// Sleep waits d or until ctx is done (then it returns ctx's error); default a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Delay is the wait after failure n (1 after the first attempt failed): the server's Retry-After
// when err carries one (an *APIError, found with errors.As), else min(Max, Initial * Multiplier^(n-1)).
func (p RetryPolicy) Delay(n int, err error) time.Duration {
	// course: begin RetryPolicy_Delay
	p = p.withDefaults()
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
		return apiErr.RetryAfter // the server knows when its capacity comes back
	}
	d := float64(p.Initial) * math.Pow(p.Multiplier, float64(n-1))
	if d >= float64(p.Max) {
		return p.Max
	}
	return time.Duration(d)
	// course: end RetryPolicy_Delay
}

// Retryable reports whether the same request could succeed if sent again: 408, 429, 500, 502, 503
// and 504, a stream cut before [DONE], a server_error event, a refused, reset or timed-out
// connection, a body that ended early. Another status, another stream error, a cancelled or expired
// ctx (the caller gave up) are not.
func Retryable(err error) bool {
	// course: begin Retryable
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		switch apiErr.Status {
		case 408, 429, 500, 502, 503, 504:
			return true
		}
		return false // any other status fails the same way every time
	}
	var streamErr *StreamError
	if errors.As(err, &streamErr) {
		return streamErr.Type == "server_error"
	}
	if errors.Is(err, ErrNoDone) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return true // a body or a connection that ended early
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
	// course: end Retryable
}

// WithRetry wraps p so that failures before the first content delta are retried under pol: hold
// the deltas back until the first content delta (usage may come before it), retry a failure that
// comes before that point (an error ChatStream returns, or an ErrorDelta), and from then on pass
// everything through, a later ErrorDelta included. MaxAttempts counts every attempt; the waits go
// through pol.Sleep, and a wait cut short by ctx returns ctx's error; a Retry-After longer than
// MaxRetryAfter is not waited for. A failed attempt's channel is read until it closes before the
// wait and the next attempt (its producer has closed the connection by then, however late); the
// returned channel closes only after the inner one has; and once ctx is cancelled the returned
// channel closes while the inner one is read to its end, so that no producer is left blocked.
func WithRetry(p types.Provider, pol RetryPolicy) types.Provider {
	// course: begin WithRetry
	return &retrying{inner: p, pol: pol.withDefaults()}
	// course: end WithRetry
}

// course: begin helpers
func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 3
	}
	if p.Initial <= 0 {
		p.Initial = 500 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 30 * time.Second
	}
	if p.Multiplier <= 0 {
		p.Multiplier = 2
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 60 * time.Second
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	return p
}

// retrying retries up to the commitment boundary, the first content delta. Until then the caller
// has seen nothing, so the whole request can be sent again; after it the caller holds text that a
// second attempt would repeat, so every later delta, a failure included, passes through.
type retrying struct {
	inner types.Provider
	pol   RetryPolicy
}

func (r *retrying) ChatStream(ctx context.Context, msgs []types.Message, tools []types.ToolDef, opts ...types.CallOption) (<-chan types.Delta, error) {
	for attempt := 1; ; attempt++ {
		ch, err := r.inner.ChatStream(ctx, msgs, tools, opts...)
		var held []types.Delta
		if err == nil {
			held = holdUntilCommitted(ch)
			if last, ok := lastDelta(held).(types.ErrorDelta); ok {
				err = last.Err
			}
		}
		if err == nil || !r.shouldRetry(ctx, attempt, err) {
			if ch == nil {
				return nil, err // there is no stream: the failure goes back as it came
			}
			return replay(ctx, held, ch), nil
		}
		if ch != nil {
			drain(ch) // its producer closes the body before the channel: the connection is gone before we wait
		}
		if err := r.pol.Sleep(ctx, r.pol.Delay(attempt, err)); err != nil {
			return nil, err // the caller gave up while we waited
		}
	}
}

func (r *retrying) shouldRetry(ctx context.Context, attempt int, err error) bool {
	if attempt >= r.pol.MaxAttempts || ctx.Err() != nil || !Retryable(err) {
		return false
	}
	// a server that asks for a longer wait than we accept gets its error back now
	var apiErr *APIError
	return !errors.As(err, &apiErr) || apiErr.RetryAfter <= r.pol.MaxRetryAfter
}

// holdUntilCommitted reads deltas up to the first content delta, DoneDelta or ErrorDelta, that one
// included, or until ch closes.
func holdUntilCommitted(ch <-chan types.Delta) []types.Delta {
	var held []types.Delta
	for d := range ch {
		held = append(held, d)
		switch d.(type) {
		case types.DoneDelta, types.ErrorDelta:
			return held
		}
		if types.IsContent(d) {
			return held
		}
	}
	return held
}

func lastDelta(ds []types.Delta) types.Delta {
	if len(ds) == 0 {
		return nil
	}
	return ds[len(ds)-1]
}

// replay sends the held deltas, then the rest of ch, on a new channel it closes at the end or
// when ctx is cancelled.
func replay(ctx context.Context, held []types.Delta, ch <-chan types.Delta) <-chan types.Delta {
	out := make(chan types.Delta)
	go func() {
		defer close(out)
		defer drain(ch) // never leave the inner producer blocked on a send nobody takes
		for _, d := range held {
			select {
			case out <- d:
			case <-ctx.Done():
				return
			}
		}
		for d := range ch {
			select {
			case out <- d:
			case <-ctx.Done():
				return // the inner producer sees ctx too, and closes ch by itself
			}
		}
	}()
	return out
}

// drain reads ch until its producer closes it.
func drain(ch <-chan types.Delta) {
	for range ch {
	}
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// course: end helpers
