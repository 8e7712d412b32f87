package circuitbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// TestAdaptiveMatchesTheFormula runs an adaptive breaker in front of a
// simulated backend that fails with a known probability, one call every
// 10 ms on a fake clock, and keeps its own record of every call. Before
// each call it computes the formula, min(0.9, max(0, (requests − 5 −
// K·accepts) / (requests + 1))), from that record over the window (the
// live 1 s bucket and the nine before it), and sums these probabilities:
// that sum is the number of rejections the formula predicts. The breaker's rejections must
// match it within four standard deviations of a sum of Bernoulli draws
// (√Σp(1−p)), plus one for rounding; the draws come from a seeded source,
// so the run is the same every time.
func TestAdaptiveMatchesTheFormula(t *testing.T) {
	const (
		k      = 2.0
		step   = 10 * time.Millisecond
		bucket = time.Second
		calls  = 20_000
	)
	for _, tc := range []struct {
		failRate      float64
		minRejectRate float64 // sanity bounds on the measured rate
		maxRejectRate float64
	}{
		{failRate: 0, maxRejectRate: 0},
		{failRate: 0.3, maxRejectRate: 0.01},                    // accepts 70 % > 1/K: nearly nothing rejected
		{failRate: 0.6, minRejectRate: 0.8, maxRejectRate: 0.9}, // accepts 40 % < 1/K
		{failRate: 0.9, minRejectRate: 0.5, maxRejectRate: 0.9},
		{failRate: 1, minRejectRate: 0.85, maxRejectRate: 0.9}, // the cap
	} {
		t.Run(fmt.Sprintf("fail=%.1f", tc.failRate), func(t *testing.T) {
			clk := clock.NewFake(time.Time{})
			cb := circuitbreaker.New(circuitbreaker.Settings{
				Rule:  circuitbreaker.Adaptive{K: k, Window: 10 * bucket, Buckets: 10},
				Rand:  rand.New(rand.NewPCG(1, 2)).Float64,
				Clock: clk,
			})
			backend := rand.New(rand.NewPCG(3, 4))
			type record struct {
				bucket             int64
				accepted, rejected bool
			}
			var history []record
			var predicted, variance float64
			rejected := 0
			for i := range calls {
				clk.Advance(step)
				now := int64(i+1) * int64(step) / int64(bucket)
				for len(history) > 0 && history[0].bucket <= now-10 {
					history = history[1:]
				}
				var requests, accepts float64
				for _, r := range history {
					{
						requests++
						if r.accepted {
							accepts++
						}
					}
				}
				p := min(0.9, max(0, (requests-5-k*accepts)/(requests+1)))
				predicted += p
				variance += p * (1 - p)
				fails := backend.Float64() < tc.failRate
				_, err := circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) {
					if fails {
						return 0, errDown
					}
					return 1, nil
				})
				rec := record{bucket: now, accepted: err == nil}
				switch {
				case errors.Is(err, circuitbreaker.ErrThrottled):
					rejected++
					rec.rejected = true
				case err != nil && !errors.Is(err, errDown):
					t.Fatalf("call %d: %v", i, err)
				}
				history = append(history, rec)
			}
			tolerance := 4*math.Sqrt(variance) + 1
			rate := float64(rejected) / calls
			t.Logf("fail rate %.1f: %d rejections, formula predicts %.1f ± %.1f (rate %.3f)", tc.failRate, rejected, predicted, tolerance, rate)
			if math.Abs(float64(rejected)-predicted) > tolerance {
				t.Errorf("%d rejections, the formula predicts %.1f ± %.1f", rejected, predicted, tolerance)
			}
			if rate < tc.minRejectRate || rate > tc.maxRejectRate {
				t.Errorf("rejection rate %.3f outside [%v, %v]", rate, tc.minRejectRate, tc.maxRejectRate)
			}
			if got := cb.State(); got != circuitbreaker.Closed {
				t.Errorf("adaptive breaker is %v, want always closed", got)
			}
		})
	}
}

func TestAdaptiveRejectProbability(t *testing.T) {
	for _, tc := range []struct {
		rule circuitbreaker.Adaptive
		c    circuitbreaker.Counts
		want float64
	}{
		{circuitbreaker.Adaptive{}, circuitbreaker.Counts{}, 0},
		{circuitbreaker.Adaptive{}, circuitbreaker.Counts{Requests: 10, Successes: 5}, 0},
		// go-zero's protection: a few failures reject nothing.
		{circuitbreaker.Adaptive{}, circuitbreaker.Counts{Requests: 1}, 0},
		{circuitbreaker.Adaptive{}, circuitbreaker.Counts{Requests: 3}, 0},
		{circuitbreaker.Adaptive{}, circuitbreaker.Counts{Requests: 5}, 0},
		{circuitbreaker.Adaptive{}, circuitbreaker.Counts{Requests: 9}, 4.0 / 10},
		{circuitbreaker.Adaptive{}, circuitbreaker.Counts{Requests: 20, Successes: 4}, 7.0 / 21},
		{circuitbreaker.Adaptive{Protection: 2}, circuitbreaker.Counts{Requests: 3}, 1.0 / 4},
		// Without it, the book's formula.
		{circuitbreaker.Adaptive{Protection: -1}, circuitbreaker.Counts{Requests: 1}, 0.5},
		{circuitbreaker.Adaptive{Protection: -1}, circuitbreaker.Counts{Requests: 10, Successes: 4}, 2.0 / 11},
		{circuitbreaker.Adaptive{K: 1.5, Protection: -1}, circuitbreaker.Counts{Requests: 99, Successes: 20}, 69.0 / 100},
		// The cap, by default 0.9.
		{circuitbreaker.Adaptive{}, circuitbreaker.Counts{Requests: 1000}, 0.9},
		{circuitbreaker.Adaptive{MaxRejectRate: 0.5}, circuitbreaker.Counts{Requests: 1000}, 0.5},
		{circuitbreaker.Adaptive{MaxRejectRate: 2}, circuitbreaker.Counts{Requests: 999}, 994.0 / 1000},
	} {
		got := tc.rule.RejectProbability(tc.c)
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%+v with %v: %v, want %v", tc.rule, tc.c, got, tc.want)
		}
	}
}

// TestAdaptiveProtectionAndCap drives a breaker whose draws always reject
// when the probability is above zero (Rand 0) or only above 0.95, and
// checks that the throttle rejects nothing after a handful of failures and
// lets a call through at a draw above the cap however many failed.
func TestAdaptiveProtectionAndCap(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures int
		draw     float64
		rejected bool
	}{
		{"one failure", 1, 0, false},
		{"three failures", 3, 0, false},
		{"five failures", 5, 0, false},
		{"six failures", 6, 0, true},
		{"a draw above the cap", 1000, 0.95, false},
		{"a draw below the cap", 1000, 0.85, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Time{})
			cb := circuitbreaker.New(circuitbreaker.Settings{
				Rule: circuitbreaker.Adaptive{}, Rand: func() float64 { return 1 }, Clock: clk,
			})
			for range tc.failures {
				p, err := cb.Allow(context.Background())
				if err != nil {
					t.Fatalf("with draws of 1 nothing is rejected: %v", err)
				}
				p.Done(errDown)
			}
			cb.Update(func(s *circuitbreaker.Settings) { s.Rand = func() float64 { return tc.draw } })
			_, err := cb.Allow(context.Background())
			if got := errors.Is(err, circuitbreaker.ErrThrottled); got != tc.rejected {
				t.Fatalf("after %d failures, a draw of %v: %v, want rejected %v", tc.failures, tc.draw, err, tc.rejected)
			}
		})
	}
}

func TestAdaptiveForcedClosedNeverThrottles(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.Adaptive{}, Rand: func() float64 { return 0 }, Clock: clk,
	})
	for range 6 {
		circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) { return 0, errDown })
	}
	// Six requests, no accepts: p = 1/7, and the draw of 0 rejects.
	if _, err := cb.Allow(context.Background()); !errors.Is(err, circuitbreaker.ErrThrottled) || !errors.Is(err, breakerimpl.ErrRejected) {
		t.Fatalf("after six failures: %v, want ErrThrottled (an ErrRejected)", err)
	}
	if r := breakerimpl.ReasonOf(circuitbreaker.ErrThrottled); r != breakerimpl.ReasonRejected {
		t.Fatalf("reason %v, want rejected", r)
	}
	cb.ForceClosed("let everything through")
	for range 10 {
		p, err := cb.Allow(context.Background())
		if err != nil {
			t.Fatalf("forced closed: %v", err)
		}
		p.Done(errDown)
	}
	if c := cb.Counts(); c.Failures != 16 || c.Rejected != 1 || c.Requests != 17 {
		t.Fatalf("counts %+v, want 16 failures and 1 rejection kept", c)
	}
}
