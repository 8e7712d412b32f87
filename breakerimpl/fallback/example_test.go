package fallback_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
)

var errDown = errors.New("db down")

func ExampleCache() {
	clk := clock.NewFake(time.Time{})
	prices := fallback.NewCache[string, int](fallback.CacheSettings{Name: "last-price", MaxStaleness: time.Minute, Clock: clk})
	prices.Remember("apple", 120)
	clk.Advance(30 * time.Second)
	res, err := prices.Recover(context.Background(), "apple", errDown)
	fmt.Println(res.Value, res.Source, res.Age, err)
	clk.Advance(time.Minute)
	_, err = prices.Recover(context.Background(), "apple", errDown)
	fmt.Println(errors.Is(err, fallback.ErrTooStale))
	// Output:
	// 120 last-price 30s <nil>
	// true
}

func ExampleStatic() {
	p := breakerimpl.Pipeline[struct{}, []string]{
		Fallback: fallback.Static[struct{}, []string]{Name: "no-recommendations", Value: nil},
	}
	res, err := p.Execute(context.Background(), struct{}{}, func(context.Context) ([]string, error) { return nil, errDown })
	fmt.Println(res.Source, res.Reason, err)
	// Output: no-recommendations error <nil>
}

func ExampleFunc() {
	simplified := fallback.Func[int, string]{
		Name: "generic-greeting",
		Fn: func(ctx context.Context, userID int, err error) (string, error) {
			return "Hello!", nil // instead of the personalised greeting
		},
	}
	res, _ := simplified.Recover(context.Background(), 7, errDown)
	fmt.Println(res.Value, res.Source)
	// Output: Hello! generic-greeting
}

func ExampleChain() {
	clk := clock.NewFake(time.Time{})
	chain := fallback.Chain[string, string]{
		fallback.NewCache[string, string](fallback.CacheSettings{Clock: clk}),
		fallback.Static[string, string]{Name: "default", Value: "n/a"},
	}
	p := breakerimpl.Pipeline[string, string]{Fallback: chain}
	fail := func(context.Context) (string, error) { return "", errDown }
	p.Execute(context.Background(), "a", func(context.Context) (string, error) { return "fresh a", nil })
	for _, key := range []string{"a", "b"} {
		res, err := p.Execute(context.Background(), key, fail)
		fmt.Println(key, res.Value, res.Source, err)
	}
	// Output:
	// a fresh a cache <nil>
	// b n/a default <nil>
}
