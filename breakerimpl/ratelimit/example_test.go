package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
)

func ExampleNewTokenBucket() {
	lim := ratelimit.NewTokenBucket(ratelimit.TokenSettings{Name: "search", Rate: 100, Burst: 3})
	for i := range 4 {
		_, err := lim.Allow(context.Background())
		fmt.Println(i, err)
	}
	// Output:
	// 0 <nil>
	// 1 <nil>
	// 2 <nil>
	// 3 ratelimit: limit reached
}

func ExampleNewSlidingWindow() {
	lim := ratelimit.NewSlidingWindow(ratelimit.WindowSettings{Limit: 2, Window: time.Minute})
	for range 3 {
		_, err := lim.Allow(context.Background())
		fmt.Println(err)
	}
	// Output:
	// <nil>
	// <nil>
	// ratelimit: limit reached
}

func ExampleNewConcurrency() {
	lim := ratelimit.NewConcurrency(ratelimit.ConcurrencySettings{Max: 1})
	p, _ := lim.Allow(context.Background())
	_, err := lim.Allow(context.Background())
	fmt.Println(err)
	p.Done(nil)
	_, err = lim.Allow(context.Background())
	fmt.Println(err)
	// Output:
	// ratelimit: limit reached
	// <nil>
}
