package cache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

func TestLastKnownGood(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	c := newOnClock[int, string]("cache", 2, 10*time.Second, clk)
	ctx := context.Background()

	if _, err := c.Recover(ctx, 1, nil); !errors.Is(err, ErrMiss) {
		t.Fatalf("empty cache: %v", err)
	}
	c.Remember(1, "one")
	clk.Advance(4 * time.Second)
	res, err := c.Recover(ctx, 1, nil)
	if err != nil || res.Value != "one" || res.Source != "cache" || res.Age != 4*time.Second {
		t.Fatalf("Recover = %+v, %v", res, err)
	}
	c.Remember(1, "uno") // newer copy, age restarts
	if res, _ := c.Recover(ctx, 1, nil); res.Value != "uno" || res.Age != 0 {
		t.Errorf("after Remember: %+v", res)
	}
	clk.Advance(11 * time.Second)
	if _, err := c.Recover(ctx, 1, nil); !errors.Is(err, ErrStale) {
		t.Errorf("11s old copy with 10s max staleness: %v", err)
	}
	c.Remember(2, "two")
	c.Remember(3, "three") // evicts the least recently used, 1
	if _, _, ok := c.Peek(1); ok {
		t.Error("LRU did not evict")
	}
	if st := c.Stats(); st.Entries != 2 || st.Hits != 2 || st.Misses != 1 || st.Stale != 1 || st.MaxStaleness != 10000 {
		t.Errorf("stats %+v", st)
	}
}
