package bulkhead_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSemaphoreRejectsAtOnceAboveTheLimit(t *testing.T) {
	var events []bulkhead.Event
	b := bulkhead.New(bulkhead.Settings{
		Name: "db", MaxConcurrent: 2, Clock: clock.NewFake(time.Time{}),
		OnEvent: func(e bulkhead.Event) { events = append(events, e) },
	})
	ctx := context.Background()
	p1, err1 := b.Allow(ctx)
	p2, err2 := b.Allow(ctx)
	if err1 != nil || err2 != nil {
		t.Fatalf("first two calls refused: %v, %v", err1, err2)
	}
	_, err := b.Allow(ctx)
	if err != bulkhead.ErrFull || !errors.Is(err, breakerimpl.ErrRejected) || breakerimpl.ReasonOf(err) != breakerimpl.ReasonRejected {
		t.Fatalf("third call: err %v, want ErrFull, a breakerimpl.ErrRejected with reason rejected", err)
	}
	if len(events) != 1 || events[0].Kind != bulkhead.Rejected || events[0].Snapshot.InFlight != 2 || events[0].Name != "db" {
		t.Fatalf("events %+v, want one rejection seen with 2 in flight", events)
	}
	p1.Done(nil)
	p3, err := b.Allow(ctx)
	if err != nil {
		t.Fatalf("after a release: %v, want a slot", err)
	}
	p2.Done(errors.New("any error gives the slot back too"))
	p3.Done(nil)
	want := bulkhead.Snapshot{Name: "db", MaxConcurrent: 2, Rejected: 1}
	if got := b.Snapshot(); got != want {
		t.Fatalf("snapshot %+v, want %+v", got, want)
	}
}

// queued starts a caller that waits in b's queue and returns the channel
// its result arrives on, once it is queued.
func queued(t *testing.T, b *bulkhead.Bulkhead, ctx context.Context) <-chan error {
	t.Helper()
	before := b.Snapshot().Waiting
	done := make(chan error, 1)
	go func() {
		p, err := b.Allow(ctx)
		if err == nil {
			defer p.Done(nil)
		}
		done <- err
	}()
	for b.Snapshot().Waiting == before {
		runtime.Gosched()
	}
	return done
}

func TestQueueWaitsAtMostMaxWait(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	b := bulkhead.New(bulkhead.Settings{MaxConcurrent: 1, MaxWait: 100 * time.Millisecond, Clock: clk})
	hold, err := b.Allow(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Done(nil)
	done := queued(t, b, context.Background())
	for clk.Timers() == 0 { // the waiter arms its timer after queueing
		runtime.Gosched()
	}
	clk.Advance(100*time.Millisecond - time.Nanosecond)
	select {
	case err := <-done:
		t.Fatalf("gave up before MaxWait: %v", err)
	case <-time.After(10 * time.Millisecond):
	}
	clk.Advance(time.Nanosecond)
	if err := <-done; err != bulkhead.ErrWaitTimeout || breakerimpl.ReasonOf(err) != breakerimpl.ReasonRejected {
		t.Fatalf("err %v, want ErrWaitTimeout (reason rejected)", err)
	}
	if s := b.Snapshot(); s.Waiting != 0 || s.TimedOut != 1 || s.InFlight != 1 {
		t.Fatalf("snapshot %+v, want nobody waiting, one timeout, one in flight", s)
	}
}

func TestQueueHandsSlotsOverInArrivalOrder(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	b := bulkhead.New(bulkhead.Settings{MaxConcurrent: 1, MaxWait: time.Second, MaxQueue: 2, Clock: clk})
	hold, _ := b.Allow(context.Background())

	var order []int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 2 {
		before := b.Snapshot().Waiting
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := b.Allow(context.Background())
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			p.Done(nil)
		}()
		for b.Snapshot().Waiting == before {
			runtime.Gosched()
		}
	}
	if _, err := b.Allow(context.Background()); err != bulkhead.ErrFull {
		t.Fatalf("with the queue full: %v, want ErrFull at once", err)
	}
	hold.Done(nil)
	wg.Wait()
	if len(order) != 2 || order[0] != 0 || order[1] != 1 {
		t.Fatalf("served in order %v, want [0 1]", order)
	}
	if s := b.Snapshot(); s.InFlight != 0 || s.Waiting != 0 {
		t.Fatalf("snapshot %+v, want empty", s)
	}
}

func TestQueuedCallerWhoseContextEndsLeavesNoSlotBehind(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	b := bulkhead.New(bulkhead.Settings{MaxConcurrent: 1, MaxWait: time.Hour, Clock: clk})
	hold, _ := b.Allow(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	done := queued(t, b, ctx)
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	hold.Done(nil)
	if s := b.Snapshot(); s.InFlight != 0 || s.Waiting != 0 || s.TimedOut != 0 {
		t.Fatalf("snapshot %+v, want empty", s)
	}
}

func TestExecuteReleasesOnPanic(t *testing.T) {
	b := bulkhead.New(bulkhead.Settings{MaxConcurrent: 1})
	func() {
		defer func() { recover() }()
		bulkhead.Execute(context.Background(), b, func(context.Context) (int, error) { panic("boom") })
	}()
	if n, err := bulkhead.Execute(context.Background(), b, func(context.Context) (int, error) { return 7, nil }); n != 7 || err != nil {
		t.Fatalf("after a panic: %d, %v; want the slot back", n, err)
	}
}

// TestStress runs many goroutines through both forms under -race: no more
// than MaxConcurrent calls ever run at once, no queued caller is served
// after MaxWait, none is turned away before it, and no slot is lost.
func TestStress(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxWait time.Duration
	}{{"semaphore", 0}, {"queue", 2 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			const limit = 3
			b := bulkhead.New(bulkhead.Settings{MaxConcurrent: limit, MaxWait: tc.maxWait, MaxQueue: 8, Clock: clock.Real()})
			var running, peak, served, refused atomic.Int64
			// A granted caller may be scheduled a little after its grant; a
			// wait beyond this bound means it was served past its maximum.
			const schedulingSlack = 250 * time.Millisecond
			var wg sync.WaitGroup
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 300 {
						start := time.Now()
						p, err := b.Allow(context.Background())
						waited := time.Since(start)
						switch {
						case err == nil:
							if tc.maxWait > 0 && waited > tc.maxWait+schedulingSlack {
								t.Errorf("served after waiting %v, max %v", waited, tc.maxWait)
							}
							n := running.Add(1)
							for {
								m := peak.Load()
								if n <= m || peak.CompareAndSwap(m, n) {
									break
								}
							}
							runtime.Gosched()
							running.Add(-1)
							served.Add(1)
							p.Done(nil)
						case err == bulkhead.ErrWaitTimeout && waited < tc.maxWait:
							t.Errorf("gave up after %v, before MaxWait %v", waited, tc.maxWait)
						case errors.Is(err, breakerimpl.ErrRejected):
							refused.Add(1)
						default:
							t.Errorf("unexpected error %v", err)
						}
					}
				}()
			}
			wg.Wait()
			if p := peak.Load(); p > limit || p == 0 {
				t.Fatalf("peak concurrency %d, want 1..%d", p, limit)
			}
			if s := b.Snapshot(); s.InFlight != 0 || s.Waiting != 0 || uint64(refused.Load()) != s.Rejected+s.TimedOut {
				t.Fatalf("snapshot %+v after %d refusals, want every slot back and every refusal counted", s, refused.Load())
			}
			t.Logf("served %d, refused %d", served.Load(), refused.Load())
		})
	}
}

// TestLimitsChangedUnderLoad changes the slots, the wait and the queue
// while callers come and go (as a policy file reloaded under load does):
// no more calls run at once than the largest limit set, no slot is lost,
// and no queued caller is left behind when the slots are raised.
func TestLimitsChangedUnderLoad(t *testing.T) {
	defer goleak.VerifyNone(t)
	const most = 4
	b := bulkhead.New(bulkhead.Settings{MaxConcurrent: 1, MaxWait: time.Millisecond, Clock: clock.Real()})
	var running, peak atomic.Int64
	stop := make(chan struct{})
	var tuner sync.WaitGroup
	tuner.Add(1)
	go func() {
		defer tuner.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			b.SetMaxConcurrent(1 + i%most)
			b.SetMaxWait(time.Duration(i%3) * time.Millisecond)
			b.SetMaxQueue(i % 5)
			runtime.Gosched()
		}
	}()
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 300 {
				p, err := b.Allow(context.Background())
				if err != nil {
					if !errors.Is(err, breakerimpl.ErrRejected) {
						t.Errorf("unexpected error %v", err)
					}
					continue
				}
				n := running.Add(1)
				for {
					m := peak.Load()
					if n <= m || peak.CompareAndSwap(m, n) {
						break
					}
				}
				runtime.Gosched()
				running.Add(-1)
				p.Done(nil)
			}
		}()
	}
	wg.Wait()
	close(stop)
	tuner.Wait()
	if p := peak.Load(); p > most || p == 0 {
		t.Fatalf("peak concurrency %d, want 1..%d", p, most)
	}
	if s := b.Snapshot(); s.InFlight != 0 || s.Waiting != 0 {
		t.Fatalf("snapshot %+v, want every slot back and nobody waiting", s)
	}
}
