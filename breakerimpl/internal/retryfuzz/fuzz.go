// Package retryfuzz fuzzes the retry schedule and the retry budget of the
// retry package on random calls. It holds the one fuzz body that Go's
// native fuzzing (FuzzSchedule) and go-fuzz (Fuzz, with the gofuzz build
// tag) share.
package retryfuzz

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/internal/fuzzbytes"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
)

var errFuzz = errors.New("fuzz: attempt failed")

// fuzzSchedule runs calls decoded from data through one Retry and checks,
// for every call, the rules of the schedule: no more attempts than
// MaxAttempts; each wait within its full-jitter range or, for an error
// with a Retry-After, exactly that when it is longer; no attempt begun
// after MaxElapsed; no retry after a success or a permanent error; the
// call's result is its last attempt's. Across calls, the budget's rule
// holds over the exact window ending at every retry. It panics on a
// violation and returns 1 when the input made retries.
func fuzzSchedule(data []byte) int {
	in := fuzzbytes.Input(data)
	clk := clock.NewInstant(time.Time{})
	maxAttempts := 1 + int(in.Next()%8)
	backoff := (time.Duration(in.Next()) + 1) * time.Millisecond
	maxBackoff := backoff * time.Duration(1+in.Next()%64)
	multiplier := 1 + float64(in.Next()%40)/10
	maxElapsed := time.Duration(in.Next()) * 50 * time.Millisecond
	ratio := 0.05 + float64(in.Next()%50)/100
	minRetries := int(in.Next() % 4)
	window := (time.Duration(in.Next()%30) + 1) * time.Second
	buckets := 1 + int(in.Next()%16)
	seed := uint64(in.Next())
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	minSetting := minRetries
	if minSetting == 0 {
		minSetting = -1
	}
	budget := retry.NewBudget(retry.BudgetSettings{Ratio: ratio, MinRetries: minSetting, Window: window, Buckets: buckets, Clock: clk})
	r := retry.New(retry.Settings{
		MaxAttempts: maxAttempts, Backoff: backoff, MaxBackoff: maxBackoff, Multiplier: multiplier,
		MaxElapsed: maxElapsed, Budget: budget, Rand: rng.Int64N, Clock: clk,
	})
	w := int64(window) / int64(buckets) * int64(buckets)
	var calls, retries []int64
	// count drops from ts (in order of time) what is older than the window
	// ending at now, and returns how many are left.
	count := func(ts *[]int64, now int64) int {
		for len(*ts) > 0 && (*ts)[0] <= now-w {
			*ts = (*ts)[1:]
		}
		return len(*ts)
	}

	retried := 0
	for len(in) > 0 {
		clk.Advance(time.Duration(in.Next()) * 10 * time.Millisecond)
		var starts []int64
		var errs []error
		var last error
		v, err := retry.Execute(context.Background(), r, func(context.Context) (int, error) {
			now := clk.Nanotime()
			if len(starts) > 0 {
				// The budget counts a retry when it allows it, as the attempt
				// before ends: attempts here take no time.
				at := starts[len(starts)-1]
				retries = append(retries, at)
				if got, limit := float64(count(&retries, at)), ratio*float64(count(&calls, at))+float64(minRetries); got > limit {
					panic(fmt.Sprintf("%v retries in the window ending at %v, budget %v", got, time.Duration(at), limit))
				}
			} else {
				calls = append(calls, now)
			}
			starts = append(starts, now)
			b := in.Next()
			switch {
			case b < 64:
				last = nil
			case b < 96:
				last = retry.After(errFuzz, time.Duration(b-64)*100*time.Millisecond)
			case b < 104:
				last = retry.Permanent(errFuzz)
			default:
				last = errFuzz
			}
			errs = append(errs, last)
			return len(starts), last
		})
		waits := clk.Waits()
		clk.ResetWaits()

		n := len(starts)
		if n > maxAttempts {
			panic(fmt.Sprintf("%d attempts, at most %d allowed", n, maxAttempts))
		}
		if err != last || v != n {
			panic(fmt.Sprintf("call ended with %v, %d; its last attempt gave %v, %d", err, v, last, n))
		}
		for i, e := range errs[:n-1] {
			if e == nil || errors.Is(e, errFuzz) && !retry.DefaultRetryable(e) {
				panic(fmt.Sprintf("attempt %d followed attempt %d, which ended with %v", i+2, i+1, e))
			}
		}
		if maxElapsed > 0 && starts[n-1]-starts[0] > int64(maxElapsed) {
			panic(fmt.Sprintf("last attempt began %v after the first, MaxElapsed %v", time.Duration(starts[n-1]-starts[0]), maxElapsed))
		}
		if len(waits) > n-1 {
			panic(fmt.Sprintf("%d waits for %d attempts", len(waits), n))
		}
		for i, wait := range waits {
			attempt := i + 1
			ceiling := min(float64(maxBackoff), float64(backoff)*pow(multiplier, attempt-1))
			after, hasAfter := retry.RetryAfter(errs[i])
			switch {
			case wait < 0:
				panic(fmt.Sprintf("negative wait %v", wait))
			case hasAfter && after >= time.Duration(ceiling):
				if wait != after {
					panic(fmt.Sprintf("wait %v after a Retry-After of %v", wait, after))
				}
			case hasAfter && wait < after:
				panic(fmt.Sprintf("wait %v shorter than the Retry-After %v", wait, after))
			case !hasAfter && float64(wait) >= max(ceiling, 1):
				panic(fmt.Sprintf("wait %v after attempt %d, jitter range [0, %v)", wait, attempt, time.Duration(ceiling)))
			}
			if got := starts[i+1] - starts[i]; got != int64(wait) {
				panic(fmt.Sprintf("attempt %d began %v after the one before, the wait was %v", attempt+1, time.Duration(got), wait))
			}
		}
		retried += n - 1
	}
	if retried > 0 {
		return 1
	}
	return 0
}

func pow(x float64, n int) float64 {
	p := 1.0
	for range n {
		p *= x
		if p > 1e30 {
			break
		}
	}
	return p
}
