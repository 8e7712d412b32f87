package circuitbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

func ExampleExecute() {
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Name: "payments",
		Rule: circuitbreaker.ConsecutiveFailures{Threshold: 2},
	})
	charge := func(context.Context) (string, error) { return "", errors.New("503 from payments") }
	for range 3 {
		_, err := circuitbreaker.Execute(context.Background(), cb, charge)
		fmt.Println(cb.State(), err)
	}
	// Output:
	// closed 503 from payments
	// open 503 from payments
	// open breakerimpl: circuit breaker is open
}

// The two-step form, for work that cannot be wrapped in a function.
func ExampleBreaker_Allow() {
	cb := circuitbreaker.New(circuitbreaker.Settings{})
	permit, err := cb.Allow(context.Background())
	if err != nil {
		fmt.Println("rejected:", err) // errors.Is(err, circuitbreaker.ErrOpen) ...
		return
	}
	var workErr error // ... the work ...
	permit.Done(workErr)
	fmt.Println(cb.State())
	// Output: closed
}

// Hystrix's rule and recovery, with the change of state observed.
func ExampleNew() {
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Name:         "search",
		Rule:         circuitbreaker.ErrorRate{Window: 10 * time.Second, Buckets: 10, MinRequests: 4, Percent: 50},
		OpenDuration: 5 * time.Second,
		Clock:        clk,
		OnStateChange: func(e circuitbreaker.StateChange) {
			fmt.Printf("%s: %s -> %s (%s, %d of %d failed)\n", e.Name, e.From, e.To, e.Reason, e.Counts.Failures, e.Counts.Requests)
		},
	})
	for _, fail := range []bool{false, false, true, true} {
		circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) {
			if fail {
				return 0, errors.New("timeout")
			}
			return 1, nil
		})
	}
	clk.Advance(5 * time.Second)
	fmt.Println(cb.State())
	// Output:
	// search: closed -> open (tripped, 2 of 4 failed)
	// search: open -> half-open (open-elapsed, 0 of 0 failed)
	// half-open
}
