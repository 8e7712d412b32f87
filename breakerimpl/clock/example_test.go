package clock_test

import (
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
