package ratelimit_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func admitted(t *testing.T, g breakerimpl.Guard) bool {
	t.Helper()
	p, err := g.Allow(context.Background())
	if err != nil {
		if err != ratelimit.ErrLimited || !errors.Is(err, breakerimpl.ErrRejected) || breakerimpl.ReasonOf(err) != breakerimpl.ReasonRejected {
			t.Fatalf("refusal %v, want ErrLimited (reason rejected)", err)
		}
		return false
	}
	p.Done(nil)
	return true
}

func TestTokenBucket(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	var events int
	tb := ratelimit.NewTokenBucket(ratelimit.TokenSettings{
		Name: "api", Rate: 10, Burst: 2, Clock: clk, OnEvent: func(ratelimit.Event) { events++ },
	})
	if !admitted(t, tb) || !admitted(t, tb) || admitted(t, tb) {
		t.Fatal("want the burst of 2, then a refusal")
	}
	if d := tb.RetryAfter(); d != time.Second {
		t.Fatalf("RetryAfter %v, want 100 ms rounded up to 1s", d)
	}
	clk.Advance(99 * time.Millisecond)
	if admitted(t, tb) {
		t.Fatal("a token after 99 ms at 10/s")
	}
	clk.Advance(time.Millisecond)
	if !admitted(t, tb) {
		t.Fatal("no token after 100 ms at 10/s")
	}
	if s := tb.Snapshot(); s.Rejected != 2 || events != 2 || s.Limit != 10 || s.Kind != "token-bucket" {
		t.Fatalf("snapshot %+v, %d events", s, events)
	}
}

func TestTokenBucketMaxWait(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	tb := ratelimit.NewTokenBucket(ratelimit.TokenSettings{Rate: 10, Burst: 1, MaxWait: 150 * time.Millisecond, Clock: clk})
	admitted(t, tb)
	done := make(chan error)
	go func() {
		_, err := tb.Allow(context.Background())
		done <- err
	}()
	for clk.Timers() == 0 {
		runtime.Gosched()
	}
	// The waiter holds the token of t=100ms; the next, at 200 ms, is more
	// than 150 ms away: refused at once.
	if admitted(t, tb) {
		t.Fatal("admitted a call whose token is 200 ms away")
	}
	clk.Advance(100 * time.Millisecond)
	if err := <-done; err != nil {
		t.Fatalf("waiter: %v, want its token after 100 ms", err)
	}
}

func TestSlidingWindow(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	w := ratelimit.NewSlidingWindow(ratelimit.WindowSettings{Limit: 10, Window: time.Second, Clock: clk})
	count := func() (n int) {
		for admitted(t, w) {
			n++
		}
		return n
	}
	if n := count(); n != 10 {
		t.Fatalf("%d admitted in an empty window, want 10", n)
	}
	clk.Advance(1500 * time.Millisecond) // half of the previous window's 10 still count
	if n := count(); n != 5 {
		t.Fatalf("%d admitted half way into the next window, want 5", n)
	}
	if d := w.RetryAfter(); d != time.Second {
		t.Fatalf("RetryAfter %v", d)
	}
	clk.Advance(2 * time.Second) // both fixed windows empty
	if n := count(); n != 10 {
		t.Fatalf("%d admitted after a quiet spell, want 10", n)
	}
}

// Over random traffic, no fixed window admits more than Limit calls, and
// no sliding window more than twice Limit (the counter's worst case: a
// burst at the end of one fixed window and at the start of the next).
func TestSlidingWindowNeverAdmitsTooMany(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	clk := clock.NewFake(time.Time{})
	const limit, window = 20, int64(time.Second)
	w := ratelimit.NewSlidingWindow(ratelimit.WindowSettings{Limit: limit, Window: time.Second, Clock: clk})
	var times []int64
	for range 20000 {
		clk.Advance(time.Duration(rng.Int64N(int64(30 * time.Millisecond))))
		if admitted(t, w) {
			now := clk.Nanotime()
			times = append(times, now)
			fixed, sliding := 0, 0
			for _, at := range times {
				if at/window == now/window {
					fixed++
				}
				if at > now-window {
					sliding++
				}
			}
			if fixed > limit || sliding > 2*limit {
				t.Fatalf("at %v: %d in the fixed window, %d in the sliding one; limit %d", time.Duration(now), fixed, sliding, limit)
			}
		}
	}
}

func TestConcurrency(t *testing.T) {
	c := ratelimit.NewConcurrency(ratelimit.ConcurrencySettings{Max: 2})
	ctx := context.Background()
	p1, _ := c.Allow(ctx)
	p2, _ := c.Allow(ctx)
	if _, err := c.Allow(ctx); err != ratelimit.ErrLimited {
		t.Fatalf("third token: %v, want ErrLimited", err)
	}
	p1.Done(nil)
	if !admitted(t, c) {
		t.Fatal("token not given back")
	}
	p2.Done(nil)
	if s := c.Snapshot(); s.Available != 2 || s.Rejected != 1 || c.RetryAfter() != time.Second {
		t.Fatalf("snapshot %+v", s)
	}
}
