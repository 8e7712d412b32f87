package clock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

func ExampleFake() {
	f := clock.NewFake(time.Time{})
	f.AfterFunc(time.Second, func() { fmt.Println("fired at", time.Duration(f.Nanotime())) })
	f.Advance(3 * time.Second)
	fmt.Println("now", time.Duration(f.Nanotime()))
	// Output:
	// fired at 1s
	// now 3s
}

func ExampleDefault() {
	c := clock.Default()
	start := c.Nanotime() // one atomic load
	_ = c.Nanotime() - start
	fmt.Println(c.Resolution())
	// Output: 1ms
}

func ExampleInstant() {
	c := clock.NewInstant(time.Time{})
	t := c.NewTimer(2 * time.Second) // a backoff: over before NewTimer returns
	<-t.C()
	c.NewTimer(500 * time.Millisecond)
	fmt.Println(c.Waits(), time.Duration(c.Nanotime()))
	// Output: [2s 500ms] 2.5s
}

// Sleep waits on any Clock, and gives up when the context ends: here a
// backoff on an Instant clock, which ends every wait at once, then one cut
// short.
func ExampleSleep() {
	c := clock.NewInstant(time.Time{})
	fmt.Println(clock.Sleep(context.Background(), c, time.Minute), time.Duration(c.Nanotime()))

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the caller gave up
	fmt.Println(clock.Sleep(ctx, clock.NewFake(time.Time{}), time.Hour))
	// Output:
	// <nil> 1m0s
	// context canceled
}
