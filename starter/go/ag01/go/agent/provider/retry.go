package provider

import (
	"context"
	"time"

	"tinyllm/agent/types"
)

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
	panic(`TODO ag01 §2.3: the wait after failure n`)
}

// Retryable reports whether the same request could succeed if sent again: 408, 429, 500, 502, 503
// and 504, a stream cut before [DONE], a server_error event, a refused, reset or timed-out
// connection, a body that ended early. Another status, another stream error, a cancelled or expired
// ctx (the caller gave up) are not.
func Retryable(err error) bool {
	panic(`TODO ag01 §2.3: which failures a retry could cure`)
}

// WithRetry wraps p so that failures before the first content delta are retried under pol: hold
// the deltas back until the first content delta (usage may come before it), retry a failure that
// comes before that point (an error ChatStream returns, or an ErrorDelta), and from then on pass
// everything through, a later ErrorDelta included. MaxAttempts counts every attempt; the waits go
// through pol.Sleep; a Retry-After longer than MaxRetryAfter is not waited for.
func WithRetry(p types.Provider, pol RetryPolicy) types.Provider {
	panic(`TODO ag01 §2.3: the retrying provider`)
}
