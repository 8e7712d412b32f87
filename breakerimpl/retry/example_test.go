package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/retry"
)

func ExampleExecute() {
	budget := retry.NewBudget(retry.BudgetSettings{Ratio: 0.1}) // one per dependency
	r := retry.New(retry.Settings{
		Name:        "inventory",
		MaxAttempts: 3,
		Backoff:     time.Millisecond,
		MaxElapsed:  time.Second,
		Budget:      budget,
	})
	calls := 0
	v, err := retry.Execute(context.Background(), r, func(context.Context) (string, error) {
		if calls++; calls < 3 {
			return "", errors.New("connection reset")
		}
		return "in stock", nil
	})
	fmt.Println(v, err, calls, r.Snapshot().Retries)
	// Output: in stock <nil> 3 2
}

// A dependency that says when to come back: the wait is at least that.
func ExampleAfter() {
	err := retry.After(errors.New("429 Too Many Requests"), 2*time.Second)
	d, ok := retry.RetryAfter(fmt.Errorf("search: %w", err))
	fmt.Println(d, ok)
	// Output: 2s true
}

func ExamplePermanent() {
	err := retry.Permanent(errors.New("400 Bad Request"))
	fmt.Println(retry.DefaultRetryable(err))
	// Output: false
}
