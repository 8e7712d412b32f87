// Package ratelimit caps the traffic a service accepts or sends, with three
// limiters, each a breakerimpl.Guard:
//
//   - TokenBucket: a rate with bursts (golang.org/x/time/rate underneath),
//     optionally waiting up to MaxWait for a token;
//   - SlidingWindow: at most Limit calls in any Window, estimated with the
//     sliding-window counter (the previous fixed window's count, weighted
//     by how much of it the sliding window still covers, plus the current
//     one's), which needs two counters instead of a log of timestamps;
//   - Concurrency: at most Max calls at once (tokens taken and given back).
//
// A refusal is ErrLimited, which matches breakerimpl.ErrRejected with
// errors.Is, so a breakerimpl.Pipeline reports it with Reason "rejected";
// RetryAfter says when to come back (an HTTP 429's Retry-After).
//
// Limiters read the time from an injectable clock.Clock, by default the
// coarse clock.Default(), so the token bucket costs a lock and no time.Now.
package ratelimit

import (
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// ErrLimited is returned when a limiter refuses a call. It matches
// breakerimpl.ErrRejected with errors.Is.
var ErrLimited error = limited{}

type limited struct{}

func (limited) Error() string { return "ratelimit: limit reached" }
func (limited) Unwrap() error { return breakerimpl.ErrRejected }

// EventKind says what happened.
type EventKind string

// Rejected: a call was refused (ErrLimited).
const Rejected EventKind = "rejected"

// Event is published to a limiter's OnEvent.
type Event struct {
	Name string
	Kind EventKind
}

// String describes the event on one line, for logs and %v, as in
// "limiter search: rejected".
func (e Event) String() string {
	if e.Name == "" {
		return "limiter: " + string(e.Kind)
	}
	return "limiter " + e.Name + ": " + string(e.Kind)
}

// Snapshot is the state of a limiter, for metrics.
type Snapshot struct {
	Name string
	// Kind is "token-bucket", "sliding-window" or "concurrency".
	Kind string
	// Limit is the tokens per second, the calls per window or the
	// concurrent calls allowed.
	Limit float64
	// Available is the tokens in the bucket, the calls the window still
	// allows, or the free slots.
	Available float64
	// Rejected counts the refusals since creation.
	Rejected uint64
}

// wallClock turns a clock's Nanotime into a time.Time without reading the
// wall clock each time (one time.Now costs about 40 ns on some machines).
type wallClock struct {
	clock clock.Clock
	base  time.Time // the wall time at Nanotime zero
}

func newWallClock(c clock.Clock) wallClock {
	if c == nil {
		c = clock.Default()
	}
	return wallClock{clock: c, base: c.Now().Add(-time.Duration(c.Nanotime()))}
}

func (w wallClock) now() time.Time { return w.base.Add(time.Duration(w.clock.Nanotime())) }

// retryAfterSeconds rounds d up to whole seconds, as Retry-After needs.
func retryAfterSeconds(d time.Duration) time.Duration {
	return (max(d, 1) + time.Second - 1).Truncate(time.Second)
}
