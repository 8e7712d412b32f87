package ratelimit

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
)

// ConcurrencySettings configures a Concurrency limiter.
//
// Name names the limiter in events and snapshots. It may be empty.
//
// Max is how many calls may hold a token at once. Zero or less refuses
// every call.
//
// RetryAfter is what RetryAfter returns (a concurrency limit cannot know
// when a token comes back). Zero or less means one second.
//
// OnEvent is called on every refusal, on the caller's goroutine. Nil means
// no one is told.
type ConcurrencySettings struct {
	Name       string
	Max        int
	RetryAfter time.Duration
	OnEvent    func(Event)
}

// Concurrency is a concurrency token limiter: a call takes a token and
// gives it back when done; with Max tokens out, calls are refused at once.
// It is the server-side twin of a bulkhead, answering 429 rather than 503.
// Make one with NewConcurrency; it is safe for concurrent use.
type Concurrency struct {
	inUse      atomic.Int64
	_          [56]byte // keep the hot counter on its own cache line
	name       string
	max        int64
	retryAfter time.Duration
	onEvent    func(Event)
	rejected   atomic.Uint64
}

// NewConcurrency returns a Concurrency limiter with every token free.
func NewConcurrency(s ConcurrencySettings) *Concurrency {
	if s.RetryAfter <= 0 {
		s.RetryAfter = time.Second
	}
	return &Concurrency{name: s.Name, max: int64(max(s.Max, 0)), retryAfter: retryAfterSeconds(s.RetryAfter), onEvent: s.OnEvent}
}

// Allow takes a token or refuses with ErrLimited. When it admits, call
// Done on the returned permit exactly once, when the call has finished.
func (c *Concurrency) Allow(context.Context) (breakerimpl.Permit, error) {
	for {
		n := c.inUse.Load()
		if n >= c.max {
			break
		}
		if c.inUse.CompareAndSwap(n, n+1) {
			return breakerimpl.NewPermit(c, 0, 0), nil
		}
	}
	c.rejected.Add(1)
	if c.onEvent != nil {
		c.onEvent(Event{Name: c.name, Kind: Rejected})
	}
	return breakerimpl.Permit{}, ErrLimited
}

// Done gives the token back; use Permit.Done rather than calling it
// directly.
func (c *Concurrency) Done(breakerimpl.Permit, error) { c.inUse.Add(-1) }

// RetryAfter returns ConcurrencySettings.RetryAfter.
func (c *Concurrency) RetryAfter() time.Duration { return c.retryAfter }

// Snapshot returns the limiter's state now.
func (c *Concurrency) Snapshot() Snapshot {
	return Snapshot{
		Name: c.name, Kind: "concurrency", Limit: float64(c.max),
		Available: float64(c.max - c.inUse.Load()), Rejected: c.rejected.Load(),
	}
}
