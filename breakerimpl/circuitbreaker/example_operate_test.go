package circuitbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// Google SRE client-side throttling: no open state, a growing share of
// calls rejected locally as the backend fails, never more than
// MaxRejectRate (by default 0.9).
func ExampleAdaptive() {
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule:  circuitbreaker.Adaptive{K: 2},
		Rand:  rand.New(rand.NewPCG(1, 1)).Float64, // seeded for the example
		Clock: clock.NewFake(time.Time{}),
	})
	rejected := 0
	for range 1000 {
		_, err := circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) {
			return 0, errors.New("overloaded") // the backend accepts nothing
		})
		if errors.Is(err, circuitbreaker.ErrThrottled) {
			rejected++
		}
	}
	c := cb.Counts()
	fmt.Printf("%v; %d of 1000 calls rejected without reaching the backend\n", cb.State(), rejected)
	fmt.Printf("next call rejected with probability %.3f\n", circuitbreaker.Adaptive{K: 2}.RejectProbability(c))
	// Output:
	// closed; 881 of 1000 calls rejected without reaching the backend
	// next call rejected with probability 0.900
}

func ExampleAdaptive_RejectProbability() {
	rule := circuitbreaker.Adaptive{K: 2}
	for _, accepted := range []uint64{100, 50, 25, 0} {
		p := rule.RejectProbability(circuitbreaker.Counts{Requests: 100, Successes: accepted})
		fmt.Printf("%3d of 100 accepted: reject %.2f\n", accepted, p)
	}
	// Output:
	// 100 of 100 accepted: reject 0.00
	//  50 of 100 accepted: reject 0.00
	//  25 of 100 accepted: reject 0.45
	//   0 of 100 accepted: reject 0.90
}

// An open duration that doubles while the dependency stays down, up to a
// minute, spread by ±20 %.
func ExampleSettings_backoff() {
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule:            circuitbreaker.ConsecutiveFailures{Threshold: 1},
		OpenDuration:    10 * time.Second,
		MaxOpenDuration: time.Minute,
		OpenJitter:      0.2,
		Rand:            func() float64 { return 0.5 }, // no jitter drawn, for the example
		Clock:           clk,
		OnStateChange: func(e circuitbreaker.StateChange) {
			if e.To == circuitbreaker.Open {
				fmt.Println("open for", e.OpenFor)
			}
		},
	})
	fail := func(context.Context) (int, error) { return 0, errors.New("down") }
	circuitbreaker.Execute(context.Background(), cb, fail)
	for range 4 {
		clk.Advance(cb.RetryAfter())
		circuitbreaker.Execute(context.Background(), cb, fail) // the probe fails
	}
	// Output:
	// open for 10s
	// open for 20s
	// open for 40s
	// open for 1m0s
	// open for 1m0s
}

// The degrade switch: an operator opens the breaker during an incident and
// hands it back afterwards.
func ExampleBreaker_ForceOpen() {
	cb := circuitbreaker.New(circuitbreaker.Settings{Name: "db", Clock: clock.NewFake(time.Time{})})
	cb.ForceOpen("INC-1234: failover in progress")
	_, err := circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) { return 1, nil })
	s := cb.Snapshot()
	fmt.Println(err)
	fmt.Println(s.State, s.Override, s.OverrideReason)
	cb.ResumeAutomatic("failover done")
	fmt.Println(cb.State(), "- probes decide")
	// Output:
	// breakerimpl: circuit breaker is open
	// open forced-open INC-1234: failover in progress
	// half-open - probes decide
}

func ExampleBreaker_ForceClosed() {
	cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, Clock: clock.NewFake(time.Time{})})
	cb.ForceClosed("the errors are expected during the migration")
	for range 3 {
		circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) { return 0, errors.New("migrating") })
	}
	fmt.Println(cb.State(), cb.Counts().ConsecutiveFailures)
	cb.ResumeAutomatic("")
	fmt.Println(cb.State())
	// Output:
	// closed 3
	// closed
}

// Settings change under load; the counts stay.
func ExampleBreaker_Update() {
	cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 10}, Clock: clock.NewFake(time.Time{})})
	for range 3 {
		circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) { return 0, errors.New("down") })
	}
	cb.Update(func(s *circuitbreaker.Settings) {
		s.Rule = circuitbreaker.ConsecutiveFailures{Threshold: 4}
		s.OpenDuration = time.Minute
	})
	fmt.Println(cb.Counts().ConsecutiveFailures, cb.Settings().OpenDuration)
	circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) { return 0, errors.New("down") })
	fmt.Println(cb.State())
	// Output:
	// 3 1m0s
	// open
}

func ExampleBreaker_Snapshot() {
	cb := circuitbreaker.New(circuitbreaker.Settings{Name: "db", Clock: clock.NewFake(time.Time{})})
	ctx := context.Background()
	circuitbreaker.Execute(ctx, cb, func(context.Context) (int, error) { return 1, nil })
	circuitbreaker.Execute(ctx, cb, func(context.Context) (int, error) { return 0, errors.New("down") })
	circuitbreaker.Execute(ctx, cb, func(context.Context) (int, error) { return 0, context.Canceled })
	s := cb.Snapshot()
	fmt.Println(s.State, s.Requests, s.Successes, s.Failures, s.Ignored, s.Rejections)
	// Output: closed 3 1 1 1 0
}

func ExampleBreaker_RetryAfter() {
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, OpenDuration: 30 * time.Second, Clock: clk})
	circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) { return 0, errors.New("down") })
	clk.Advance(10 * time.Second)
	fmt.Println(cb.RetryAfter())
	// Output: 20s
}

func ExampleLogStateChanges() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // stable output for the example
			}
			return a
		},
	}))
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Name: "db", Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, OpenDuration: time.Second,
		Clock: clock.NewFake(time.Time{}), OnStateChange: circuitbreaker.LogStateChanges(logger),
	})
	circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) { return 0, errors.New("down") })
	// Output:
	// level=WARN msg="circuit breaker state change" breaker=db from=closed to=open reason=tripped override=automatic generation=1 requests=0 successes=0 failures=0 rejected=0 consecutive_failures=1 open_for=1s
}

func ExampleErrorRate() {
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ErrorRate{
			Window:      time.Minute, // judged over the last minute,
			Buckets:     60,          // rolling a second at a time
			MinRequests: 10,          // never on fewer than 10 calls
			Percent:     25,          // trips at 25 % failures
		},
		SlowCallThreshold: 250 * time.Millisecond, // a call slower than this is a failure
		Clock:             clock.NewFake(time.Time{}),
		OnStateChange: func(e circuitbreaker.StateChange) {
			fmt.Println(e.To, "after", e.Counts.Failures, "failures in", e.Counts.Requests, "calls")
		},
	})
	for i := range 10 {
		circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) {
			if i%4 == 1 {
				return 0, errors.New("down")
			}
			return 1, nil
		})
	}
	// Output: open after 3 failures in 10 calls
}

func ExampleConsecutiveFailures() {
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule:              circuitbreaker.ConsecutiveFailures{Threshold: 3},
		HalfOpenProbes:    2, // two trial calls at a time once the open duration ends
		HalfOpenSuccesses: 2, // both must succeed to close
		Clock:             clock.NewFake(time.Time{}),
	})
	for range 3 {
		circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) { return 0, errors.New("down") })
	}
	fmt.Println(cb.State())
	// Output: open
}
