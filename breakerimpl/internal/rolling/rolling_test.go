package rolling

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// A step of a script: advance the clock, then add to a slot (n 0: no add).
type step struct {
	advance time.Duration
	slot    int
	n       int64
}

// TestWindow runs scripts on a window of 4 buckets of 1 s and compares the
// buckets, newest first, and the position in the live bucket with what the
// rolling-window rule says.
func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		name   string
		steps  []step
		ages   []Counts // Reduce's buckets, newest first
		into   time.Duration
		sumAll Counts
	}{
		{
			name: "empty",
			ages: []Counts{{}, {}, {}, {}},
		},
		{
			name:   "one bucket, three slots",
			steps:  []step{{0, 0, 1}, {100 * time.Millisecond, 1, 2}, {100 * time.Millisecond, 2, 3}, {0, 0, 4}},
			ages:   []Counts{{5, 2, 3}, {}, {}, {}},
			into:   200 * time.Millisecond,
			sumAll: Counts{5, 2, 3},
		},
		{
			name:   "a bucket ends at its width, not before",
			steps:  []step{{999 * time.Millisecond, 0, 1}, {time.Millisecond, 0, 10}},
			ages:   []Counts{{10}, {1}, {}, {}},
			sumAll: Counts{11},
		},
		{
			name:   "buckets skipped while idle are empty",
			steps:  []step{{0, 0, 1}, {2500 * time.Millisecond, 0, 2}},
			ages:   []Counts{{2}, {}, {1}, {}},
			into:   500 * time.Millisecond,
			sumAll: Counts{3},
		},
		{
			name:   "the oldest bucket drops out after a window",
			steps:  []step{{0, 0, 1}, {time.Second, 0, 2}, {time.Second, 0, 3}, {time.Second, 0, 4}, {time.Second, 0, 5}},
			ages:   []Counts{{5}, {4}, {3}, {2}},
			sumAll: Counts{14},
		},
		{
			name:  "a window of silence empties it",
			steps: []step{{0, 1, 7}, {time.Second, 1, 7}, {time.Hour + 300*time.Millisecond, 0, 0}},
			ages:  []Counts{{}, {}, {}, {}},
			into:  300 * time.Millisecond,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Time{})
			w := New(clk, 4*time.Second, 4)
			for _, s := range tc.steps {
				clk.Advance(s.advance)
				if s.n != 0 {
					w.Add(s.slot, s.n)
				}
			}
			var ages []Counts
			into := w.Reduce(func(age int, c Counts) {
				if age != len(ages) {
					t.Fatalf("age %d after %d buckets", age, len(ages))
				}
				ages = append(ages, c)
			})
			if !slices.Equal(ages, tc.ages) || into != tc.into {
				t.Errorf("buckets %v, %v into the live one; want %v, %v", ages, into, tc.ages, tc.into)
			}
			if got := w.Sum(); got != tc.sumAll {
				t.Errorf("sum %v, want %v", got, tc.sumAll)
			}
		})
	}
}

// The buckets are aligned on the moment the window was made, not on
// multiples of their width.
func TestWindowAlignedOnItsStart(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	clk.Advance(1700 * time.Millisecond)
	w := New(clk, 2*time.Second, 2)
	w.Add(0, 1)
	clk.Advance(999 * time.Millisecond)
	w.Add(0, 1)
	if got := w.Reduce(func(int, Counts) {}); got != 999*time.Millisecond {
		t.Fatalf("%v into the live bucket, want 999ms", got)
	}
	clk.Advance(time.Millisecond)
	w.Add(0, 1)
	var live Counts
	w.Reduce(func(age int, c Counts) {
		if age == 0 {
			live = c
		}
	})
	if live != (Counts{1}) || w.Sum() != (Counts{3}) {
		t.Fatalf("live bucket %v, window %v; want {1}, {3}", live, w.Sum())
	}
}

// TestWindowConcurrentAdds adds from many goroutines, on a clock that
// moves only within one bucket, and finds every count (run with -race).
func TestWindowConcurrentAdds(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	w := New(clk, 10*time.Second, 10)
	const workers, each = 8, 2000
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				w.Add((g+i)%Slots, 1)
			}
		}()
	}
	wg.Wait()
	sum := w.Sum()
	if total := sum[0] + sum[1] + sum[2]; total != workers*each {
		t.Fatalf("window %v holds %d counts, want %d", sum, total, workers*each)
	}
}

// TestWindowTurnsUnderLoad moves the clock across buckets while goroutines
// add: every count lands in some bucket of the window, which is wider than
// the test, so none drops out, and the buckets add up to the totals.
func TestWindowTurnsUnderLoad(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	w := New(clk, time.Hour, 100)
	const workers, each = 4, 5000
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				w.Add(0, 1)
			}
		}()
	}
	for range 50 {
		clk.Advance(10 * time.Second)
	}
	wg.Wait()
	if got := w.Sum()[0]; got != workers*each {
		t.Fatalf("window holds %d, want %d", got, workers*each)
	}
	var buckets int64
	w.Reduce(func(_ int, c Counts) { buckets += c[0] })
	if buckets != workers*each {
		t.Fatalf("buckets add up to %d, want %d", buckets, workers*each)
	}
}

// Windows made one after another over the same totals each count from
// the totals as they were when it was made, and Add returns the total.
func TestWindowsOverSharedTotals(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	var totals Totals
	first := Over(&totals, clk, 4*time.Second, 4)
	first.Add(0, 5)
	first.Add(1, 2)
	second := Over(&totals, clk, 4*time.Second, 4)
	if got := second.Add(0, 1); got != 6 {
		t.Fatalf("Add returned %d, want the total, 6", got)
	}
	if got := second.Sum(); got != (Counts{1, 0, 0}) {
		t.Fatalf("second window %v, want only what came after it was made", got)
	}
	if got := first.Sum(); got != (Counts{6, 2, 0}) {
		t.Fatalf("first window %v, want everything counted in the totals", got)
	}
	if got := totals.Load(); got != (Counts{6, 2, 0}) {
		t.Fatalf("totals %v", got)
	}
}

// countingClock counts the readings of a Fake.
type countingClock struct {
	*clock.Fake
	reads int
}

func (c *countingClock) Nanotime() int64 { c.reads++; return c.Fake.Nanotime() }

// Add reads the clock once, to set the timer, and then no more until the
// timer marks the live bucket due: the Add that finds it due turns the
// ring, with one reading. A window only read and counted in its totals
// directly sets no timer.
func TestAddReadsTheClockOnlyWhenABucketEnds(t *testing.T) {
	clk := &countingClock{Fake: clock.NewFake(time.Time{})}
	w := New(clk, 4*time.Second, 4)
	if n := clk.Timers(); n != 0 {
		t.Fatalf("a new window set %d timers, want none before the first Add", n)
	}
	clk.reads = 0
	for range 1000 {
		w.Add(0, 1)
	}
	if clk.reads != 1 || clk.Timers() != 1 {
		t.Fatalf("1000 adds within a bucket read the clock %d times and set %d timers, want 1 and 1", clk.reads, clk.Timers())
	}
	clk.reads = 0
	clk.Advance(time.Second) // the timer marks the bucket due
	w.Add(0, 5)
	if clk.reads != 1 {
		t.Fatalf("the add after the bucket ended read the clock %d times, want once, to turn", clk.reads)
	}
	var ages []Counts
	w.Reduce(func(_ int, c Counts) { ages = append(ages, c) })
	if want := []Counts{{5}, {1000}, {}, {}}; !slices.Equal(ages, want) {
		t.Fatalf("buckets %v, want %v", ages, want)
	}

	var totals Totals
	read := Over(&totals, clk, 4*time.Second, 4)
	for range 10 {
		read.Sum()
		totals[0].Add(1)
		clk.Advance(time.Second)
	}
	// Ten seconds on, the live bucket is empty and the three before it
	// hold one each.
	if got := read.Sum(); got != (Counts{3}) {
		t.Fatalf("window counted in its totals after each Sum: %v, want {3}", got)
	}
	// w's timer fired on the way, and w had no Add since to set another.
	if n := clk.Timers(); n != 0 {
		t.Fatalf("%d timers left: the window only read set some", n)
	}
}

// A Sum or Reduce that turns the ring before the timer fires leaves Add
// attributing counts right: the timer, late for the new live bucket, marks
// the window due anyway, and the Add that finds it due sets it for the
// new live bucket's end.
func TestAddAfterAReadTurnedTheRing(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	w := New(clk, 4*time.Second, 4)
	w.Add(0, 1)                          // bucket 0; the timer is for 1 s
	clk.Advance(1500 * time.Millisecond) // the timer fires at 1 s
	w.Sum()                              // turns to bucket 1
	w.Add(0, 2)                          // due: sets the timer for 2 s
	clk.Advance(time.Second)             // 2.5 s: it fires
	w.Add(0, 4)                          // bucket 2
	var ages []Counts
	w.Reduce(func(_ int, c Counts) { ages = append(ages, c) })
	if want := []Counts{{4}, {2}, {1}, {}}; !slices.Equal(ages, want) {
		t.Fatalf("buckets %v, want %v", ages, want)
	}
}
