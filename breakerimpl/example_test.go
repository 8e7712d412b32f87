package breakerimpl_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/hedge"
)

type item struct{ Name string }

// A database read protected by a breaker, with the last value read for the
// same id served while the database is failing. A service puts Source,
// Reason, Age and the breaker's state in its response headers.
func ExamplePipeline_Execute() {
	clk := clock.NewFake(time.Time{}) // a real service leaves Clock nil
	breaker := circuitbreaker.New(circuitbreaker.Settings{
		Name:  "items-db",
		Rule:  circuitbreaker.ConsecutiveFailures{Threshold: 1},
		Clock: clk,
	})
	reads := breakerimpl.Pipeline[string, item]{
		Breaker:  breaker,
		Fallback: fallback.NewCache[string, item](fallback.CacheSettings{MaxStaleness: time.Minute, Clock: clk}),
	}
	dbUp := true
	getItem := func(id string) func(context.Context) (item, error) {
		return func(ctx context.Context) (item, error) {
			if !dbUp {
				return item{}, errors.New("connection refused")
			}
			return item{Name: "item " + id}, nil
		}
	}

	for _, step := range []struct {
		up      bool
		advance time.Duration
	}{{true, 0}, {false, 2 * time.Second}, {false, time.Second}} {
		dbUp = step.up
		clk.Advance(step.advance)
		res, err := reads.Execute(context.Background(), "42", getItem("42"))
		fmt.Printf("value=%q source=%s reason=%s age=%v breaker=%s err=%v\n",
			res.Value.Name, res.Source, res.Reason, res.Age, breaker.State(), err)
	}
	// Output:
	// value="item 42" source=primary reason=none age=0s breaker=closed err=<nil>
	// value="item 42" source=cache reason=error age=2s breaker=open err=<nil>
	// value="item 42" source=cache reason=open age=3s breaker=open err=<nil>
}

func ExampleReasonOf() {
	fmt.Println(breakerimpl.ReasonOf(breakerimpl.ErrOpen), breakerimpl.ReasonOf(context.DeadlineExceeded))
	// Output: open timeout
}

// A Guard used by hand: the two-step form for work that cannot be wrapped
// in a function.
func ExamplePermit_Done() {
	var g breakerimpl.Guard = circuitbreaker.New(circuitbreaker.Settings{})
	permit, err := g.Allow(context.Background())
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	// ... do the work ...
	permit.Done(nil)
	fmt.Println("done")
	// Output: done
}

func ExampleRun() {
	cb := circuitbreaker.New(circuitbreaker.Settings{})
	n, err := breakerimpl.Run(context.Background(), cb, func(context.Context) (int, error) { return 42, nil })
	fmt.Println(n, err)
	// Output: 42 <nil>
}

// Hedged runs a call under any Hedger (hedge.Hedge is one): the first
// replica hangs, the attempt sent after 5 ms answers, and the first is
// cancelled through its context.
func ExampleHedged() {
	h := hedge.New(hedge.Settings{Name: "profile", Delay: 5 * time.Millisecond})
	var attempts atomic.Int32
	v, err := breakerimpl.Hedged(context.Background(), h, func(ctx context.Context) (string, error) {
		if attempts.Add(1) == 1 {
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "profile from replica 2", nil
	})
	fmt.Println(v, err)
	// Output: profile from replica 2 <nil>
}
