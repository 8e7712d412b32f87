package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
)

// window runs one window against a dependency that serves capacity calls
// at once in 10 ms and queues the rest: k calls in flight take
// 10 ms · max(1, k/capacity). It fills the limit (or inFlight calls, if
// fewer) and returns how many were admitted.
func window(a *ratelimit.Adaptive, clk *clock.Fake, capacity, inFlight int) int {
	ctx := context.Background()
	var permits []interface{ Done(error) }
	for i := 0; i < inFlight; i++ {
		p, err := a.Allow(ctx)
		if err != nil {
			break
		}
		permits = append(permits, p)
	}
	k := len(permits)
	clk.Advance(time.Duration(float64(10*time.Millisecond) * max(1, float64(k)/float64(capacity))))
	for _, p := range permits {
		p.Done(nil)
	}
	return k
}

// The limit settles near what the dependency serves without queueing
// beyond the tolerance, comes down when the dependency gets slower, stays
// put while the callers do not use it, and refuses calls over it.
func TestAdaptiveFollowsLatency(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	a := ratelimit.NewAdaptive(ratelimit.AdaptiveSettings{InitialLimit: 4, MaxLimit: 200, Window: 10 * time.Millisecond, MinSamples: 2, Clock: clk})
	for range 300 {
		window(a, clk, 8, 1000)
	}
	if l := a.Limit(); l < 8 || l > 24 {
		base, recent := a.Latencies()
		t.Fatalf("limit %d against a dependency that takes 8 at once, want 8..24 (latency %v, baseline %v)", l, recent, base)
	}
	healthy := a.Limit()
	for range 300 {
		window(a, clk, 2, 1000) // the dependency slows: 2 at once
	}
	if l := a.Limit(); l > healthy*2/3 {
		t.Fatalf("limit %d after the dependency slowed to 2 at once, was %d", l, healthy)
	}
	slow := a.Limit()
	for range 300 {
		window(a, clk, 1000, 1) // fast again, but one call at a time
	}
	if l := a.Limit(); l > slow+1 {
		t.Fatalf("limit grew from %d to %d with one call in flight", slow, l)
	}
	var held []interface{ Done(error) }
	for range a.Limit() {
		p, err := a.Allow(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	if _, err := a.Allow(context.Background()); !errors.Is(err, ratelimit.ErrLimited) || a.Snapshot().Rejected == 0 || a.Snapshot().Kind != "adaptive" {
		t.Fatalf("over the limit: %v, %+v", err, a.Snapshot())
	}
	for _, p := range held {
		p.Done(nil)
	}
}
