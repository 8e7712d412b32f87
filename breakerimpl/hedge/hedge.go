// Package hedge cuts the tail latency of idempotent calls: when an attempt
// has not answered after Settings.Delay, it sends one more (up to
// MaxHedges more), and the first to succeed wins. The others are cancelled
// through their context and waited for, so no goroutine outlives the call.
//
// Set Delay near the dependency's 95th-percentile latency: then about one
// call in twenty sends a second attempt, and a call stuck behind a slow
// replica or a lost packet is answered by the hedge. Hedge only calls that
// are safe to make twice.
//
// A Hedge is a breakerimpl.Hedger, so it goes in a breakerimpl.Pipeline,
// innermost: inside the retry (a retry makes a new hedged attempt) and the
// bulkhead (which holds one slot for the call and its hedges).
package hedge

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
)

// DefaultDelay is the Delay of Settings that leave it zero.
const DefaultDelay = 100 * time.Millisecond

// Settings configures a Hedge. The zero value sends one hedge after
// DefaultDelay.
//
// Name names the hedge in events and snapshots. It may be empty.
//
// Delay is how long an attempt may go unanswered before the next is sent;
// each further hedge waits as long again. Zero or less means DefaultDelay.
//
// MaxHedges is how many attempts may be sent beyond the first. Zero or
// less means 1.
//
// OnEvent is called when a hedge is sent, on the caller's goroutine. Nil
// means no one is told.
//
// Clock times the delays. Nil means clock.Default(); tests pass a
// *clock.Fake.
type Settings struct {
	Name      string
	Delay     time.Duration
	MaxHedges int
	OnEvent   func(Event)
	Clock     clock.Clock
	// Budget, if set, caps the hedges: each hedge takes an extra attempt
	// from it (retry.Budget.TakeExtra), and a hedge it refuses is not
	// sent (the call waits for the attempts running). Give the same
	// Budget to the Retry of the same calls, so that retries and hedges
	// together add at most its Ratio to the traffic. The hedge counts each
	// call in it (Budget.CountCall) unless CallsCounted says a Retry
	// sharing it does already.
	Budget       *retry.Budget
	CallsCounted bool
}

// Event is published to Settings.OnEvent when a hedge is sent.
type Event struct {
	Name    string
	Attempt int // the attempt sent, from 1 for the first hedge
}

// String describes the event on one line, for logs and %v, as in "hedge
// recs: hedge 1 sent".
func (e Event) String() string {
	name := ""
	if e.Name != "" {
		name = " " + e.Name
	}
	return fmt.Sprintf("hedge%s: hedge %d sent", name, e.Attempt)
}

// Snapshot is the state of a Hedge, for metrics.
type Snapshot struct {
	Name      string
	Delay     time.Duration
	MaxHedges int
	Calls     uint64 // calls made, since creation
	Hedges    uint64 // hedges sent
	HedgeWins uint64 // calls a hedge answered first
	Denied    uint64 // hedges the budget refused
}

// Hedge runs hedged calls. Make one with New; it is safe for concurrent
// use.
type Hedge struct {
	name      string
	delay     time.Duration
	maxHedges int
	onEvent   func(Event)
	clock     clock.Clock

	budget                      *retry.Budget
	countCalls                  bool
	calls, hedges, wins, denied atomic.Uint64
}

// New returns a Hedge with the given settings (see Settings for the
// defaults of zero fields).
func New(s Settings) *Hedge {
	if s.Delay <= 0 {
		s.Delay = DefaultDelay
	}
	if s.MaxHedges <= 0 {
		s.MaxHedges = 1
	}
	if s.Clock == nil {
		s.Clock = clock.Default()
	}
	return &Hedge{name: s.Name, delay: s.Delay, maxHedges: s.MaxHedges, onEvent: s.OnEvent, clock: s.Clock,
		budget: s.Budget, countCalls: s.Budget != nil && !s.CallsCounted}
}

// MaxAttempts returns 1 + MaxHedges.
func (h *Hedge) MaxAttempts() int { return 1 + h.maxHedges }

type result struct {
	i   int
	err error
}

// Do calls attempt(ctx, 0) and, each time Delay passes with no attempt
// answered, attempt(ctx, i) for the next i, each on its own goroutine,
// until one succeeds or MaxAttempts are running. It returns the i of the
// first success after cancelling the context the others run with and
// waiting for every one of them to return.
//
// A failed attempt does not end the call while another is running; when
// all have failed, Do returns the first failure (no more hedges are sent:
// retrying is the retry's work). A panic in an attempt is returned as a
// *breakerimpl.PanicError once the others have returned. If ctx ends
// before the call does, no hedge is sent after that, and the attempts'
// errors (presumably ctx's) are returned.
func (h *Hedge) Do(ctx context.Context, attempt func(ctx context.Context, i int) error) (winner int, err error) {
	h.calls.Add(1)
	if h.countCalls {
		h.budget.CountCall()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan result, h.MaxAttempts())
	start := func(i int) {
		go func() {
			finished := false
			defer func() {
				if !finished {
					r := recover()
					if r == nil {
						r = "runtime.Goexit"
					}
					results <- result{i, breakerimpl.NewPanicError(r)}
				}
			}()
			err := attempt(ctx, i)
			finished = true
			results <- result{i, err}
		}()
	}

	start(0)
	sent, running := 1, 1
	timer := h.clock.NewTimer(h.delay)
	defer timer.Stop()
	var firstErr error
	for {
		select {
		case r := <-results:
			running--
			_, panicked := r.err.(*breakerimpl.PanicError)
			if r.err == nil || panicked {
				cancel()
				for ; running > 0; running-- {
					<-results
				}
				if r.err == nil && r.i > 0 {
					h.wins.Add(1)
				}
				return r.i, r.err
			}
			if firstErr == nil {
				firstErr = r.err
			}
			if running == 0 {
				return 0, firstErr
			}
		case <-timer.C():
			if sent == h.MaxAttempts() || ctx.Err() != nil {
				continue
			}
			if h.budget != nil && !h.budget.TakeExtra() {
				h.denied.Add(1)
				continue // no more hedges for this call
			}
			start(sent)
			h.hedges.Add(1)
			if h.onEvent != nil {
				h.onEvent(Event{Name: h.name, Attempt: sent})
			}
			sent++
			running++
			if sent < h.MaxAttempts() {
				timer.Reset(h.delay)
			}
		}
	}
}

// Snapshot returns the hedge's counts now.
func (h *Hedge) Snapshot() Snapshot {
	return Snapshot{
		Name: h.name, Delay: h.delay, MaxHedges: h.maxHedges,
		Calls: h.calls.Load(), Hedges: h.hedges.Load(), HedgeWins: h.wins.Load(), Denied: h.denied.Load(),
	}
}

// Execute runs fn hedged by h and returns the first successful result, or
// an attempt's error. A panic in an attempt is raised again on the
// caller's goroutine once every attempt has returned.
func Execute[T any](ctx context.Context, h *Hedge, fn func(context.Context) (T, error)) (T, error) {
	v, err := breakerimpl.Hedged(ctx, h, fn)
	if pe, ok := err.(*breakerimpl.PanicError); ok {
		panic(pe.Value)
	}
	return v, err
}
