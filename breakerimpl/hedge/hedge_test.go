package hedge_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/hedge"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errDown = errors.New("down")

type outcome struct {
	v   string
	err error
}

// execute starts hedge.Execute and returns its result channel, once the
// hedge's timer is armed.
func execute(t *testing.T, clk *clock.Fake, h *hedge.Hedge, fn func(context.Context) (string, error)) <-chan outcome {
	t.Helper()
	done := make(chan outcome, 1)
	go func() {
		v, err := hedge.Execute(context.Background(), h, fn)
		done <- outcome{v, err}
	}()
	for clk.Timers() == 0 {
		runtime.Gosched()
	}
	return done
}

func TestAFastAnswerSendsNoHedge(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	h := hedge.New(hedge.Settings{Delay: time.Second, Clock: clk})
	v, err := hedge.Execute(context.Background(), h, func(context.Context) (string, error) { return "fast", nil })
	if v != "fast" || err != nil {
		t.Fatalf("got %q, %v", v, err)
	}
	if s := h.Snapshot(); s.Hedges != 0 || s.Calls != 1 {
		t.Fatalf("snapshot %+v, want one call and no hedge", s)
	}
}

func TestTheHedgeWinsAndThePrimaryIsCancelledAndWaitedFor(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	var events []hedge.Event
	h := hedge.New(hedge.Settings{Name: "search", Delay: 50 * time.Millisecond, Clock: clk,
		OnEvent: func(e hedge.Event) { events = append(events, e) }})
	var n atomic.Int32
	var primaryReturned atomic.Bool
	done := execute(t, clk, h, func(ctx context.Context) (string, error) {
		if n.Add(1) == 1 {
			<-ctx.Done() // the primary hangs until cancelled
			time.Sleep(time.Millisecond)
			primaryReturned.Store(true)
			return "", ctx.Err()
		}
		return "hedge", nil
	})
	clk.Advance(50 * time.Millisecond)
	got := <-done
	if got.v != "hedge" || got.err != nil {
		t.Fatalf("got %+v, want the hedge's answer", got)
	}
	if !primaryReturned.Load() {
		t.Fatal("Execute returned before the cancelled primary did")
	}
	if s := h.Snapshot(); s.Hedges != 1 || s.HedgeWins != 1 || len(events) != 1 || events[0].Attempt != 1 {
		t.Fatalf("snapshot %+v, events %+v", s, events)
	}
}

func TestFailures(t *testing.T) {
	t.Run("primary fails before the delay: no hedge", func(t *testing.T) {
		clk := clock.NewFake(time.Time{})
		h := hedge.New(hedge.Settings{Delay: time.Second, Clock: clk})
		_, err := hedge.Execute(context.Background(), h, func(context.Context) (string, error) { return "", errDown })
		if err != errDown || h.Snapshot().Hedges != 0 {
			t.Fatalf("err %v, %d hedges; want the error and none", err, h.Snapshot().Hedges)
		}
	})
	t.Run("all fail: the first failure", func(t *testing.T) {
		clk := clock.NewFake(time.Time{})
		h := hedge.New(hedge.Settings{Delay: time.Second, MaxHedges: 2, Clock: clk})
		var n atomic.Int32
		release := make(chan struct{})
		errSecond := errors.New("second")
		done := execute(t, clk, h, func(ctx context.Context) (string, error) {
			switch n.Add(1) {
			case 1:
				<-release
				return "", errDown
			case 2:
				return "", errSecond
			}
			return "", errors.New("unexpected third attempt")
		})
		clk.Advance(time.Second) // the hedge fails at once; the primary still runs
		for n.Load() < 2 {
			runtime.Gosched()
		}
		close(release)
		if got := <-done; got.err != errSecond {
			t.Fatalf("got %+v, want the first failure to arrive", got)
		}
	})
}

func TestPanicInAnAttemptIsRaisedOnTheCaller(t *testing.T) {
	h := hedge.New(hedge.Settings{Clock: clock.NewFake(time.Time{})})
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want boom", r)
		}
	}()
	hedge.Execute(context.Background(), h, func(context.Context) (int, error) { panic("boom") })
}

func TestHedgesAreSpacedByTheDelayUpToTheMax(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	h := hedge.New(hedge.Settings{Delay: 10 * time.Millisecond, MaxHedges: 2, Clock: clk})
	var sent atomic.Int32
	release := make(chan struct{})
	done := execute(t, clk, h, func(ctx context.Context) (string, error) {
		sent.Add(1)
		<-release
		return "", errDown
	})
	waitSent := func(n int32) {
		for sent.Load() < n {
			runtime.Gosched()
		}
	}
	waitSent(1)
	clk.Advance(9 * time.Millisecond)
	if sent.Load() != 1 {
		t.Fatal("hedged before the delay")
	}
	clk.Advance(time.Millisecond)
	waitSent(2)
	clk.Advance(10 * time.Millisecond)
	waitSent(3)
	clk.Advance(time.Hour)
	if n := sent.Load(); n != 3 {
		t.Fatalf("%d attempts, want 3", n)
	}
	if s := h.Snapshot(); s.Hedges != 2 {
		t.Fatalf("snapshot %+v", s)
	}
	close(release)
	if got := <-done; got.err != errDown {
		t.Fatalf("got %+v", got)
	}
}

// TestStress hedges many concurrent calls with random latencies on the
// real clock under -race: every call gets an answer, and once they have,
// no attempt's goroutine is left.
func TestStress(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := hedge.New(hedge.Settings{Delay: 200 * time.Microsecond, MaxHedges: 2, Clock: clock.Real()})
	var running atomic.Int32
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 200 {
				latency := time.Duration(rng.IntN(600)) * time.Microsecond
				fail := rng.IntN(4) == 0
				var live atomic.Int32 // this call's attempts
				_, err := hedge.Execute(context.Background(), h, func(ctx context.Context) (int, error) {
					running.Add(1)
					live.Add(1)
					defer running.Add(-1)
					defer live.Add(-1)
					select {
					case <-time.After(latency):
					case <-ctx.Done():
						return 0, ctx.Err()
					}
					if fail {
						return 0, errDown
					}
					return 1, nil
				})
				if err != nil && err != errDown {
					t.Errorf("err %v", err)
				}
				if n := live.Load(); n != 0 {
					t.Errorf("%d attempts of a call still running after it returned", n)
				}
			}
		}()
	}
	wg.Wait()
	if n := running.Load(); n != 0 {
		t.Fatalf("%d attempts still running after every call returned", n)
	}
	if s := h.Snapshot(); s.Hedges == 0 || s.HedgeWins == 0 {
		t.Fatalf("snapshot %+v: the stress sent no hedge or none won", s)
	}
}

// One budget for retries and hedges: a Retry and a Hedge of the same calls
// share a retry.Budget of 50 %, so the hedges sent are half the calls, and
// once the hedges have used the budget a retry is refused too.
func TestBudgetSharedWithRetry(t *testing.T) {
	clk := clock.NewInstant(time.Time{})
	budget := retry.NewBudget(retry.BudgetSettings{Ratio: 0.5, MinRetries: -1, Window: time.Hour, Clock: clk})
	r := retry.New(retry.Settings{Name: "recs", MaxAttempts: 2, Budget: budget, Clock: clk})
	h := hedge.New(hedge.Settings{Name: "recs", Delay: time.Millisecond, Budget: budget, CallsCounted: true, Clock: clk})
	p := breakerimpl.Pipeline[struct{}, int]{Retry: r, Hedge: h}
	slowFirst := func(ctx context.Context) (int, error) {
		select {
		case <-ctx.Done(): // a hedge answered
			return 0, ctx.Err()
		case <-time.After(5 * time.Millisecond):
			return 1, nil
		}
	}
	for i := range 10 {
		if _, err := p.Execute(context.Background(), struct{}{}, slowFirst); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if s := h.Snapshot(); s.Hedges != 5 || s.Denied != 5 {
		t.Fatalf("hedges %+v; want 5 sent and 5 refused: half of 10 calls", s)
	}
	if _, err := p.Execute(context.Background(), struct{}{}, func(context.Context) (int, error) { return 0, errors.New("down") }); err == nil {
		t.Fatal("a failing call succeeded")
	}
	if s := r.Snapshot(); s.BudgetDenied != 1 || s.Retries != 0 {
		t.Fatalf("retry %+v; want its retry refused, the budget spent on hedges", s)
	}
}
