package ratelimit

import (
	"context"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// TokenSettings configures a TokenBucket.
//
// Name names the limiter in events and snapshots. It may be empty.
//
// Rate is how many tokens are added per second; each call takes one. Zero
// or less refuses every call (rate.Limiter with a zero limit). Use
// rate.Inf for no limit.
//
// Burst is how many tokens the bucket holds: the calls that may come at
// once after a quiet spell. Zero or less means 1.
//
// MaxWait is how long a call may wait for a token. Zero or less: a call
// with no token is refused at once. Above zero: a call waits if its token
// comes within MaxWait (it is reserved for it), and is refused at once
// otherwise.
//
// OnEvent is called on every refusal, on the caller's goroutine. Nil means
// no one is told.
//
// Clock is the time source. Nil means clock.Default(); tests pass a
// *clock.Fake.
type TokenSettings struct {
	Name    string
	Rate    rate.Limit
	Burst   int
	MaxWait time.Duration
	OnEvent func(Event)
	Clock   clock.Clock
}

// TokenBucket is a token-bucket rate limiter over a *rate.Limiter. Make one
// with NewTokenBucket; it is safe for concurrent use.
type TokenBucket struct {
	name     string
	lim      *rate.Limiter
	maxWait  time.Duration
	onEvent  func(Event)
	wall     wallClock
	rejected atomic.Uint64
}

// NewTokenBucket returns a full TokenBucket with the given settings.
func NewTokenBucket(s TokenSettings) *TokenBucket {
	if s.Burst <= 0 {
		s.Burst = 1
	}
	return &TokenBucket{
		name:    s.Name,
		lim:     rate.NewLimiter(max(s.Rate, 0), s.Burst),
		maxWait: max(s.MaxWait, 0),
		onEvent: s.OnEvent,
		wall:    newWallClock(s.Clock),
	}
}

// Limiter returns the rate.Limiter underneath, to change its rate or
// burst at run time (SetLimit, SetBurst).
func (t *TokenBucket) Limiter() *rate.Limiter { return t.lim }

// Allow takes a token, waiting up to MaxWait for it, or refuses with
// ErrLimited (or ctx's error if ctx ends while waiting). The permit's Done
// does nothing: tokens are not given back.
func (t *TokenBucket) Allow(ctx context.Context) (breakerimpl.Permit, error) {
	now := t.wall.now()
	if t.lim.AllowN(now, 1) {
		return breakerimpl.Permit{}, nil
	}
	if t.maxWait > 0 {
		r := t.lim.ReserveN(now, 1)
		if d := r.DelayFrom(now); r.OK() && d <= t.maxWait {
			if err := clock.Sleep(ctx, t.wall.clock, d); err != nil {
				r.CancelAt(t.wall.now())
				return breakerimpl.Permit{}, err
			}
			return breakerimpl.Permit{}, nil
		}
		r.CancelAt(now)
	}
	t.rejected.Add(1)
	if t.onEvent != nil {
		t.onEvent(Event{Name: t.name, Kind: Rejected})
	}
	return breakerimpl.Permit{}, ErrLimited
}

// Done does nothing; it is there for breakerimpl.Guard.
func (t *TokenBucket) Done(breakerimpl.Permit, error) {}

// RetryAfter returns how long until a token is free, in whole seconds, at
// least one.
func (t *TokenBucket) RetryAfter() time.Duration {
	now := t.wall.now()
	r := t.lim.ReserveN(now, 1)
	defer r.CancelAt(now)
	if !r.OK() {
		return time.Second
	}
	return retryAfterSeconds(r.DelayFrom(now))
}

// Snapshot returns the bucket's state now.
func (t *TokenBucket) Snapshot() Snapshot {
	return Snapshot{
		Name: t.name, Kind: "token-bucket", Limit: float64(t.lim.Limit()),
		Available: t.lim.TokensAt(t.wall.now()), Rejected: t.rejected.Load(),
	}
}
