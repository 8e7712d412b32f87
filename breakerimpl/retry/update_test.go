package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
)

// Jitter draws the ceiling's last share at random; a negative one draws
// nothing.
func TestJitter(t *testing.T) {
	top := func(n int64) int64 { return n - 1 } // the largest draw
	zero := func(int64) int64 { return 0 }      // the smallest
	for _, tt := range []struct {
		jitter   float64
		rand     func(int64) int64
		min, max time.Duration
	}{
		{0, zero, 0, 0}, // full jitter by default
		{0, top, 100*time.Millisecond - 1, 100 * time.Millisecond},
		{1, zero, 0, 0},
		{0.5, zero, 50 * time.Millisecond, 50 * time.Millisecond},
		{0.5, top, 100*time.Millisecond - 1, 100 * time.Millisecond},
		{-1, zero, 100 * time.Millisecond, 100 * time.Millisecond},
		{-1, top, 100 * time.Millisecond, 100 * time.Millisecond},
	} {
		r := retry.New(retry.Settings{Backoff: 100 * time.Millisecond, Jitter: tt.jitter, Rand: tt.rand})
		if got := r.Backoff(1); got < tt.min || got > tt.max {
			t.Errorf("jitter %v: first wait %v, want in [%v, %v]", tt.jitter, got, tt.min, tt.max)
		}
	}
}

// Update changes the attempts and the backoff of a live Retry and keeps
// its counts.
func TestUpdateKeepsCounts(t *testing.T) {
	clk := clock.NewInstant(time.Time{})
	r := retry.New(retry.Settings{Name: "recs", MaxAttempts: 2, Backoff: 10 * time.Millisecond, Jitter: -1, Clock: clk})
	fail := func(context.Context) (int, error) { return 0, errors.New("503") }
	retry.Execute(context.Background(), r, fail)
	r.Update(func(s *retry.Settings) {
		s.MaxAttempts, s.Backoff = 4, 30*time.Millisecond
		s.Name = "ignored"
	})
	clk.ResetWaits()
	retry.Execute(context.Background(), r, fail)
	waits := clk.Waits()
	if len(waits) != 3 || waits[0] != 30*time.Millisecond || waits[1] != 60*time.Millisecond {
		t.Fatalf("waits after the update %v, want 3 from 30ms doubling", waits)
	}
	s := r.Snapshot()
	if s.Retries != 1+3 || s.GaveUp != 2 || s.MaxAttempts != 4 || s.Name != "recs" {
		t.Fatalf("snapshot %+v, want the counts of both calls, 4 attempts, the old name", s)
	}
	if got := r.Settings(); got.MaxAttempts != 4 || got.Backoff != 30*time.Millisecond || got.Jitter != -1 {
		t.Fatalf("settings %+v", got)
	}
}
