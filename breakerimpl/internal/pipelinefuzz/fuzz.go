// Package pipelinefuzz fuzzes breakerimpl.Pipeline composed of the real
// policies. It holds the one fuzz body that Go's native fuzzing
// (FuzzPipeline) and go-fuzz (Fuzz, with the gofuzz build tag) share; it
// is a package of its own because the body imports every policy, and the
// policies import breakerimpl.
package pipelinefuzz

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/internal/fuzzbytes"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// countingGuard wraps a guard and counts what it admits, refuses and is
// told.
type countingGuard struct {
	g                       breakerimpl.Guard
	asked, refused, settled int
}

func (c *countingGuard) Allow(ctx context.Context) (breakerimpl.Permit, error) {
	c.asked++
	p, err := c.g.Allow(ctx)
	if err != nil {
		c.refused++
		return p, err
	}
	return breakerimpl.NewPermit(c, p.ID(), p.Start()), nil
}

// Done passes the end on with the wrapped guard's own permit, rebuilt from
// the id and start it gave.
func (c *countingGuard) Done(p breakerimpl.Permit, err error) {
	c.settled++
	c.g.Done(breakerimpl.NewPermit(c.g, p.ID(), p.Start()), err)
}

func (c *countingGuard) open() int { return c.asked - c.refused - c.settled }

var errAttempt = errors.New("pipelinefuzz: attempt failed")

type outcome byte

const (
	succeed outcome = iota
	fail
	failPermanently
	hang // past the timeout
	panicking
	outcomes
)

// fuzzPipeline runs calls decoded from data through a Pipeline of a
// concurrency limiter, a breaker, a bulkhead, a timeout and a retry with a
// budget, with or without a static fallback, and checks after every call:
// each guard was told the end of every call it admitted, exactly once; a
// guard inside one that refused was not asked; no more attempts ran than
// MaxAttempts, none after a success, a permanent failure or a panic; the
// result is the primary's value when the last attempt succeeded, and
// otherwise the fallback's with the Reason of what happened (rejected,
// open, timeout, panic, error), or that error (a panic raised again) with
// no fallback. It panics on a violation and returns 1 when the input made
// a call fail.
func fuzzPipeline(data []byte) int {
	in := fuzzbytes.Input(data)
	clk := clock.NewInstant(time.Time{})
	maxAttempts := 1 + int(in.Next()%4)
	withFallback := in.Next()%4 != 0
	limiter := &countingGuard{g: ratelimit.NewConcurrency(ratelimit.ConcurrencySettings{Max: 1 + int(in.Next()%2)})}
	breaker := &countingGuard{g: circuitbreaker.New(circuitbreaker.Settings{
		Rule:         circuitbreaker.ConsecutiveFailures{Threshold: 1 + int(in.Next()%4)},
		OpenDuration: time.Duration(1+in.Next()%8) * time.Second,
		Clock:        clk,
	})}
	bh := bulkhead.New(bulkhead.Settings{MaxConcurrent: 1 + int(in.Next()%2), Clock: clk})
	bulk := &countingGuard{g: bh}
	p := breakerimpl.Pipeline[int, int]{
		Limiter:  limiter,
		Breaker:  breaker,
		Bulkhead: bulk,
		Timeout:  timeout.New(timeout.Settings{Timeout: time.Second, Slack: -1, Clock: clk}),
		Retry: retry.New(retry.Settings{
			MaxAttempts: maxAttempts, Backoff: 10 * time.Millisecond, Clock: clk,
			Rand:   func(n int64) int64 { return n / 2 },
			Budget: retry.NewBudget(retry.BudgetSettings{Ratio: 0.5, Clock: clk}),
		}),
	}
	if withFallback {
		p.Fallback = fallback.Static[int, int]{Name: "static", Value: -1}
	}
	var heldLimit, heldBulk []breakerimpl.Permit // slots taken outside the pipeline

	failed := 0
	for call := 0; len(in) > 0; call++ {
		op := in.Next()
		clk.Advance(time.Duration(op%16) * 100 * time.Millisecond)
		switch op >> 4 {
		case 0: // take a slot of the limiter or the bulkhead from outside
			if pm, err := limiter.g.Allow(context.Background()); err == nil {
				heldLimit = append(heldLimit, pm)
			}
			continue
		case 1:
			if pm, err := bh.Allow(context.Background()); err == nil {
				heldBulk = append(heldBulk, pm)
			}
			continue
		case 2: // give them back
			for _, pm := range append(heldLimit, heldBulk...) {
				pm.Done(nil)
			}
			heldLimit, heldBulk = nil, nil
			continue
		}

		before := [3]countingGuard{*limiter, *breaker, *bulk}
		var attempts []outcome
		var res breakerimpl.Result[int]
		var err error
		var raised any
		func() {
			defer func() { raised = recover() }()
			res, err = p.Execute(context.Background(), call, func(ctx context.Context) (int, error) {
				o := outcome(in.Next() % byte(outcomes))
				attempts = append(attempts, o)
				switch o {
				case succeed:
					return call, nil
				case failPermanently:
					return 0, retry.Permanent(errAttempt)
				case hang:
					clk.Advance(2 * time.Second)
					<-ctx.Done()
					return 0, ctx.Err()
				case panicking:
					panic(errAttempt)
				}
				return 0, errAttempt
			})
		}()

		// Every guard was told the end of each call it admitted.
		for _, g := range []*countingGuard{limiter, breaker, bulk} {
			if g.open() != 0 {
				panic(fmt.Sprintf("call %d: a guard admitted %d calls it was not told the end of", call, g.open()))
			}
		}
		asked := func(i int, g *countingGuard) bool { return g.asked > before[i].asked }
		refused := func(i int, g *countingGuard) bool { return g.refused > before[i].refused }
		var want breakerimpl.Reason
		switch {
		case refused(0, limiter):
			want = breakerimpl.ReasonRejected
			if asked(1, breaker) || asked(2, bulk) || len(attempts) > 0 {
				panic(fmt.Sprintf("call %d: the limiter refused, yet the policies inside it ran", call))
			}
		case refused(1, breaker):
			want = breakerimpl.ReasonOpen // one probe at a time: a lone caller never finds half-open full
			if asked(2, bulk) || len(attempts) > 0 {
				panic(fmt.Sprintf("call %d: the breaker refused, yet the policies inside it ran", call))
			}
		case refused(2, bulk):
			want = breakerimpl.ReasonRejected
			if len(attempts) > 0 {
				panic(fmt.Sprintf("call %d: the bulkhead refused, yet fn ran", call))
			}
		default:
			if len(attempts) == 0 || len(attempts) > maxAttempts {
				panic(fmt.Sprintf("call %d: %d attempts, want 1 to %d", call, len(attempts), maxAttempts))
			}
			for i, o := range attempts[:len(attempts)-1] {
				if o == succeed || o == failPermanently || o == panicking {
					panic(fmt.Sprintf("call %d: attempt %d ran after an attempt that ended with outcome %d", call, i+2, o))
				}
			}
			switch attempts[len(attempts)-1] {
			case succeed:
				want = breakerimpl.ReasonNone
			case hang:
				want = breakerimpl.ReasonTimeout
			case panicking:
				want = breakerimpl.ReasonPanic
			default:
				want = breakerimpl.ReasonError
			}
		}
		if want != breakerimpl.ReasonNone {
			failed++
		}
		switch {
		case want == breakerimpl.ReasonNone:
			if raised != nil || err != nil || res.Value != call || res.Source != breakerimpl.SourcePrimary || res.Reason != want {
				panic(fmt.Sprintf("call %d succeeded, yet got %+v, %v, panic %v", call, res, err, raised))
			}
		case withFallback:
			if raised != nil || err != nil || res.Value != -1 || res.Source != "static" || res.Reason != want {
				panic(fmt.Sprintf("call %d failed (%v), yet got %+v, %v, panic %v; want the fallback", call, want, res, err, raised))
			}
		case want == breakerimpl.ReasonPanic:
			if raised != errAttempt {
				panic(fmt.Sprintf("call %d panicked with no fallback, yet raised %v (result %+v, %v)", call, raised, res, err))
			}
		default:
			if raised != nil || err == nil || res.Reason != want || breakerimpl.ReasonOf(err) != want {
				panic(fmt.Sprintf("call %d failed (%v) with no fallback, yet got %+v, %v, panic %v", call, want, res, err, raised))
			}
		}
		if s := bh.Snapshot(); s.InFlight != len(heldBulk) {
			panic(fmt.Sprintf("call %d: %d bulkhead slots taken, %d held outside", call, s.InFlight, len(heldBulk)))
		}
	}
	for _, pm := range append(heldLimit, heldBulk...) {
		pm.Done(nil)
	}
	if failed > 0 {
		return 1
	}
	return 0
}
