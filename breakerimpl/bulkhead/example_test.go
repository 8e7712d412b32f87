package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
)

// The semaphore form: at most two calls at once, the third turned away.
func ExampleNew() {
	b := bulkhead.New(bulkhead.Settings{Name: "reports", MaxConcurrent: 2})
	ctx := context.Background()
	var permits []breakerimpl.Permit
	for i := range 3 {
		p, err := b.Allow(ctx)
		if err != nil {
			fmt.Println(i, err, errors.Is(err, breakerimpl.ErrRejected))
			continue
		}
		permits = append(permits, p)
	}
	for _, p := range permits {
		p.Done(nil)
	}
	fmt.Printf("%+v\n", b.Snapshot())
	// Output:
	// 2 bulkhead: full true
	// {Name:reports MaxConcurrent:2 MaxWait:0s InFlight:0 Waiting:0 Rejected:1 TimedOut:0}
}

// The queued form: a caller waits up to 50 ms for a slot.
func ExampleExecute() {
	b := bulkhead.New(bulkhead.Settings{MaxConcurrent: 1, MaxWait: 50 * time.Millisecond})
	n, err := bulkhead.Execute(context.Background(), b, func(context.Context) (int, error) { return 42, nil })
	fmt.Println(n, err)
	// Output: 42 <nil>
}
