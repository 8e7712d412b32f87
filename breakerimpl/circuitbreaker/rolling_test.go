package circuitbreaker

import (
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// A success reads the clock only once a bucket has ended: a timer sets due
// at the bucket's end, and the turn of the buckets (by the success that
// finds due set, or by anything else that reads the clock) clears it until
// the next end. A due flag left set would cost every success a clock read.
func TestRollingIsDueOnlyAtBucketEnds(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	w := newRolling(clk, 10*time.Second, 10, newCounter())
	check := func(when string, want bool) {
		t.Helper()
		if got := w.due.Load(); got != want {
			t.Fatalf("%s: due %v, want %v", when, got, want)
		}
	}
	w.Success()
	check("within the first bucket", false)
	clk.Advance(time.Second)
	check("at the first bucket's end", true)
	w.Success()
	check("after a success turned the buckets", false)
	clk.Advance(999 * time.Millisecond)
	check("within the second bucket", false)
	clk.Advance(time.Millisecond)
	check("at the second bucket's end", true)
	if c := w.Counts(); c.Successes != 2 {
		t.Fatalf("window counts %+v, want 2 successes", c)
	}
	check("after Counts turned the buckets", false)
	clk.Advance(time.Minute)
	w.Success()
	check("after a success turned the buckets past a whole window", false)
	clk.Advance(time.Second)
	check("at the end of the bucket after that", true)
}
