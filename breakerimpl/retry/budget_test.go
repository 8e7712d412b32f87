package retry_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
)

func TestBudgetAllowsARatioOfCalls(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	budget := retry.NewBudget(retry.BudgetSettings{Ratio: 0.1, MinRetries: 2, Window: 10 * time.Second, Clock: clk})
	r := retry.New(retry.Settings{Budget: budget, MaxAttempts: 10, Rand: func(int64) int64 { return 0 }, Clock: clk})
	ctx := context.Background()
	retryOnce := func() bool {
		a := r.Begin(ctx)
		_, err := r.Next(ctx, a, errDown)
		return err == nil
	}
	allowed := 0
	for range 100 {
		if retryOnce() {
			allowed++
		}
	}
	// 100 calls allow 0.1 × 100 + 2 = 12 retries.
	if allowed != 12 {
		t.Fatalf("%d retries in 100 failing calls, want 12", allowed)
	}
	if s := budget.Snapshot(); s.Calls != 100 || s.Retries != 12 || s.Rejected != 88 {
		t.Fatalf("snapshot %+v", s)
	}
	clk.Advance(11 * time.Second) // everything ages out
	if s := budget.Snapshot(); s.Calls != 0 || s.Retries != 0 {
		t.Fatalf("after the window: %+v", s)
	}
	if !retryOnce() || !retryOnce() || retryOnce() {
		t.Fatal("after the window: want MinRetries retries again, and no more")
	}
}

// TestBudgetNeverExceeded is the budget's rule as a property: over random
// traffic, at every retry it allows, the retries of the exact window ending
// then (it included) are at most Ratio × the calls of that window plus
// MinRetries.
func TestBudgetNeverExceeded(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 7))
		clk := clock.NewFake(time.Time{})
		window := time.Duration(1+rng.IntN(20)) * time.Second
		buckets := 1 + rng.IntN(20)
		ratio := 0.05 + rng.Float64()/2
		minRetries := rng.IntN(4)
		setting := minRetries
		if setting == 0 {
			setting = -1 // zero would mean the default
		}
		budget := retry.NewBudget(retry.BudgetSettings{Ratio: ratio, MinRetries: setting, Window: window, Buckets: buckets, Clock: clk})
		r := retry.New(retry.Settings{Budget: budget, MaxAttempts: 1 << 20, Rand: func(int64) int64 { return 0 }, Clock: clk})
		w := int64(window) / int64(buckets) * int64(buckets) // the window the budget keeps
		floor := float64(minRetries)
		var calls, retries []int64
		inWindow := func(ts []int64, now int64) (n int) {
			for _, t := range ts {
				if t > now-w && t <= now {
					n++
				}
			}
			return n
		}
		allowed, denied := 0, 0
		ctx := context.Background()
		for range 3000 {
			clk.Advance(time.Duration(rng.Int64N(int64(window) / 20)))
			now := clk.Nanotime()
			a := r.Begin(ctx)
			calls = append(calls, now)
			for n := rng.IntN(4); n > 0; n-- { // a burst of failures
				var err error
				if a, err = r.Next(ctx, a, errDown); err != nil {
					denied++
					break
				}
				allowed++
				retries = append(retries, now)
				if got, limit := float64(inWindow(retries, now)), ratio*float64(inWindow(calls, now))+floor; got > limit {
					t.Fatalf("seed %d: %v retries in the window ending at %v, budget %v", seed, got, time.Duration(now), limit)
				}
			}
		}
		if allowed == 0 || denied == 0 {
			t.Fatalf("seed %d: %d retries allowed, %d denied; the traffic does not test the budget", seed, allowed, denied)
		}
	}
}
