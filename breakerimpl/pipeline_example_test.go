package breakerimpl_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

type price struct{ Cents int }

// A call to a downstream service protected by a timeout, retries within a
// budget, a circuit breaker and a bulkhead, with the last good answer
// served from a cache when the call fails. Build the policies once per
// dependency and share them.
func ExamplePipeline_resilientClient() {
	prices := breakerimpl.Pipeline[string, price]{
		Fallback: fallback.NewCache[string, price](fallback.CacheSettings{MaxStaleness: 10 * time.Minute}),
		Breaker:  circuitbreaker.New(circuitbreaker.Settings{Name: "pricing"}),
		Bulkhead: bulkhead.New(bulkhead.Settings{Name: "pricing", MaxConcurrent: 20, MaxWait: 10 * time.Millisecond}),
		Timeout:  timeout.New(timeout.Settings{Name: "pricing", Timeout: 300 * time.Millisecond}),
		Retry: retry.New(retry.Settings{
			Name: "pricing", MaxAttempts: 3, Backoff: time.Millisecond,
			Budget: retry.NewBudget(retry.BudgetSettings{Ratio: 0.1}),
		}),
	}
	up := true
	getPrice := func(ctx context.Context) (price, error) { // an HTTP call in a real service
		if !up {
			return price{}, errors.New("connection refused")
		}
		return price{Cents: 1299}, nil
	}
	for _, state := range []bool{true, false} {
		up = state
		res, err := prices.Execute(context.Background(), "sku-42", getPrice)
		fmt.Println(res.Value.Cents, res.Source, res.Reason, err)
	}
	// Output:
	// 1299 primary none <nil>
	// 1299 cache error <nil>
}
