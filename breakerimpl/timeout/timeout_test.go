package timeout_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitForCancel is work that runs until its context is done.
func waitForCancel(ctx context.Context) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// run starts timeout.Execute(ctx, tm, fn) and returns its result channel.
func run(ctx context.Context, tm *timeout.Timeout, fn func(context.Context) (int, error)) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := timeout.Execute(ctx, tm, fn)
		done <- err
	}()
	return done
}

func TestWorkIsCancelledAtTheDeadlineAndWaitedFor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		parent func() (context.Context, context.CancelFunc)
	}{
		{"background parent", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }},
		{"cancellable parent", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Time{})
			var events []timeout.Event
			tm := timeout.New(timeout.Settings{
				Name: "search", Timeout: time.Second, Slack: -1, Clock: clk,
				OnEvent: func(e timeout.Event) { events = append(events, e) },
			})
			parent, cancel := tc.parent()
			defer cancel()
			started, returned := make(chan struct{}), make(chan struct{})
			done := run(parent, tm, func(ctx context.Context) (int, error) {
				defer close(returned)
				close(started)
				return waitForCancel(ctx)
			})
			<-started
			clk.Advance(time.Second - time.Nanosecond)
			select {
			case err := <-done:
				t.Fatalf("returned before the deadline: %v", err)
			case <-time.After(10 * time.Millisecond):
			}
			clk.Advance(time.Nanosecond)
			err := <-done
			select {
			case <-returned:
			default:
				t.Fatal("Execute returned before the work did")
			}
			if !errors.Is(err, timeout.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) ||
				breakerimpl.ReasonOf(err) != breakerimpl.ReasonTimeout {
				t.Fatalf("err %v, want ErrTimeout, a DeadlineExceeded with reason timeout", err)
			}
			if s := tm.Snapshot(); s.TimedOut != 1 || len(events) != 1 || events[0].Name != "search" {
				t.Fatalf("snapshot %+v, events %+v; want one timeout seen", s, events)
			}
		})
	}
}

func TestSuccessAndOtherErrorsPassThrough(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	tm := timeout.New(timeout.Settings{Timeout: time.Second, Clock: clk})
	errNotFound := errors.New("not found")
	ctx := context.Background()
	if v, err := timeout.Execute(ctx, tm, func(context.Context) (int, error) { return 3, nil }); v != 3 || err != nil {
		t.Fatalf("got %d, %v", v, err)
	}
	if _, err := timeout.Execute(ctx, tm, func(context.Context) (int, error) { return 0, errNotFound }); err != errNotFound {
		t.Fatalf("got %v, want the error untouched", err)
	}
	late := func(ctx context.Context) (int, error) { clk.Advance(2 * time.Second); return 4, nil }
	if v, err := timeout.Execute(ctx, tm, late); v != 4 || err != nil {
		t.Fatalf("late success: %d, %v; a result that arrived is a success", v, err)
	}
	if tm.Snapshot().TimedOut != 0 {
		t.Fatal("counted a timeout")
	}
}

func TestParentCancellationIsNotATimeout(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	tm := timeout.New(timeout.Settings{Timeout: time.Second, Clock: clk})
	parent, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := run(parent, tm, func(ctx context.Context) (int, error) {
		ch := ctx.Done()
		close(started)
		<-ch
		return 0, ctx.Err()
	})
	<-started
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	clk.Advance(time.Hour)
	if tm.Snapshot().TimedOut != 0 {
		t.Fatal("counted a timeout")
	}
}

func TestCallsStartingWithinSlackShareADeadline(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	tm := timeout.New(timeout.Settings{Timeout: time.Second, Slack: 10 * time.Millisecond, Clock: clk})
	start := clk.Now()
	deadline := func() time.Duration {
		dl, ok := tm.Begin(context.Background()).Deadline()
		if !ok {
			t.Fatal("no deadline")
		}
		return dl.Sub(start)
	}
	first := deadline()
	clk.Advance(4 * time.Millisecond)
	second := deadline()
	clk.Advance(7 * time.Millisecond)
	third := deadline()
	want := time.Second + 10*time.Millisecond
	if first != want || second != want || third != 11*time.Millisecond+want {
		t.Fatalf("deadlines %v %v %v, want %v, %v, %v", first, second, third, want, want, 11*time.Millisecond+want)
	}
	if n := clk.Timers(); n != 2 {
		t.Fatalf("%d timers for three calls, want two", n)
	}
	clk.Advance(2 * time.Second)
}

// The context obeys the context.Context contract: Err is nil exactly until
// Done is closed, values come from the parent, and the earlier deadline
// wins.
func TestCallContextContract(t *testing.T) {
	type key struct{}
	clk := clock.NewFake(time.Time{})
	tm := timeout.New(timeout.Settings{Timeout: time.Second, Slack: -1, Clock: clk})
	parentDeadline := clk.Now().Add(500 * time.Millisecond)
	cancellable, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	defer cancel()
	withDeadline, cancel2 := context.WithDeadline(context.Background(), parentDeadline)
	defer cancel2()

	for name, parent := range map[string]context.Context{
		"background":  context.WithValue(context.Background(), key{}, "v"),
		"cancellable": cancellable,
	} {
		ctx := tm.Begin(parent)
		if ctx.Value(key{}) != "v" {
			t.Errorf("%s: value lost", name)
		}
		if ctx.Err() != nil {
			t.Errorf("%s: Err %v before the deadline", name, ctx.Err())
		}
		done := ctx.Done()
		select {
		case <-done:
			t.Errorf("%s: done before the deadline", name)
		default:
		}
		clk.Advance(time.Second)
		select {
		case <-done:
		default:
			t.Errorf("%s: not done at the deadline", name)
		}
		if ctx.Err() != context.DeadlineExceeded {
			t.Errorf("%s: Err %v after the deadline, want DeadlineExceeded", name, ctx.Err())
		}
		if ctx := tm.Begin(parent); ctx.Err() != nil {
			t.Errorf("%s: a new call is born expired: %v", name, ctx.Err())
		}
	}
	if dl, _ := tm.Begin(withDeadline).Deadline(); !dl.Equal(parentDeadline) {
		t.Errorf("deadline %v, want the parent's earlier %v", dl, parentDeadline)
	}
	clk.Advance(time.Hour)
}

// A context derived from the call's (as net/http does) ends with it, and
// leaves no goroutine behind.
func TestDerivedContextsEndAtTheDeadline(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := clock.NewFake(time.Time{})
	tm := timeout.New(timeout.Settings{Timeout: time.Second, Clock: clk})
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, p := range []context.Context{context.Background(), parent} {
		child, cancelChild := context.WithCancel(tm.Begin(p))
		clk.Advance(2 * time.Second)
		select {
		case <-child.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("derived context not done after the deadline")
		}
		cancelChild()
		for runtime.NumGoroutine() > 3 {
			runtime.Gosched()
		}
	}
}

// A context the work waited on is let go when the call ends, so a parent
// that lives long does not hold every call until its deadline.
func TestEndReleasesAWaitedContext(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	tm := timeout.New(timeout.Settings{Timeout: time.Second, Clock: clk})
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	var kept context.Context
	_, err := timeout.Execute(parent, tm, func(ctx context.Context) (int, error) {
		kept = ctx
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		default:
			return 1, nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-kept.Done():
	default:
		t.Fatal("a waited context is still open after the call ended")
	}
	if kept.Err() != context.Canceled {
		t.Fatalf("Err %v after the call, want context.Canceled", kept.Err())
	}
	clk.Advance(2 * time.Second) // the deadline passing later is harmless
	if kept.Err() != context.Canceled || tm.Snapshot().TimedOut != 0 {
		t.Fatalf("Err %v, timeouts %d after the deadline; want Canceled and none", kept.Err(), tm.Snapshot().TimedOut)
	}
}

// Calls with cancellable parents get contexts of their own, never one
// another call had: each keeps its parent's values and cancellation after
// many more calls, from many goroutines, have begun and ended.
func TestEveryCallGetsAContextOfItsOwn(t *testing.T) {
	type key struct{}
	clk := clock.NewFake(time.Time{})
	tm := timeout.New(timeout.Settings{Timeout: time.Second, Clock: clk})
	const goroutines, calls = 4, 300
	type call struct {
		ctx    context.Context
		cancel context.CancelFunc
		id     int
	}
	kept := make([][]call, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				id := g*calls + i
				parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, id))
				ctx := tm.Begin(parent)
				if err := tm.End(ctx, nil); err != nil {
					t.Error(err)
				}
				kept[g] = append(kept[g], call{ctx, cancel, id})
			}
		}()
	}
	wg.Wait()
	seen := make(map[context.Context]bool)
	for _, cs := range kept {
		for _, c := range cs {
			if seen[c.ctx] {
				t.Fatalf("call %d got a context another call had", c.id)
			}
			seen[c.ctx] = true
			if got := c.ctx.Value(key{}); got != c.id {
				t.Fatalf("call %d's context carries the value of call %v", c.id, got)
			}
		}
	}
	// Cancelling one parent ends that call's context and no other.
	victim := kept[1][7]
	victim.cancel()
	for _, cs := range kept {
		for _, c := range cs {
			if want := c.id == victim.id; (c.ctx.Err() != nil) != want {
				t.Fatalf("call %d: Err %v after cancelling the parent of call %d", c.id, c.ctx.Err(), victim.id)
			}
			c.cancel()
		}
	}
	clk.Advance(2 * time.Second)
}

// In Abandon mode a call is answered at its deadline while its work runs
// on; the abandoned calls still running are counted, and past
// MaxAbandoned new calls are refused at once; a call whose work returns in
// time is answered with the work's result; a panic reaches the caller.
func TestAbandonAnswersAtTheDeadlineAndBoundsAbandonedWork(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	tm := timeout.New(timeout.Settings{Timeout: time.Second, Slack: -1, Clock: clk, Mode: timeout.Abandon, MaxAbandoned: 2})
	release := make(chan struct{})
	stuck := func(context.Context) (int, error) { <-release; return 7, nil } // heeds no context
	for i := range 2 {
		done := run(context.Background(), tm, stuck)
		waitUntil(t, func() bool { return clk.Timers() > 0 })
		clk.Advance(time.Second)
		if err := <-done; !errors.Is(err, timeout.ErrTimeout) {
			t.Fatalf("call %d: %v, want ErrTimeout at the deadline", i, err)
		}
	}
	if s := tm.Snapshot(); s.Abandoned != 2 || s.AbandonedTotal != 2 || s.TimedOut != 2 || s.Mode != timeout.Abandon {
		t.Fatalf("snapshot %+v, want 2 abandoned running and in all, 2 timed out", s)
	}
	if _, err := timeout.Execute(context.Background(), tm, stuck); !errors.Is(err, timeout.ErrAbandonedFull) ||
		breakerimpl.ReasonOf(err) != breakerimpl.ReasonRejected {
		t.Fatalf("third call: %v, want ErrAbandonedFull, a rejection", err)
	}
	close(release)
	waitUntil(t, func() bool { return tm.Snapshot().Abandoned == 0 })
	if v, err := timeout.Execute(context.Background(), tm, func(context.Context) (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Fatalf("quick call: %v, %v; want 7, nil", v, err)
	}
	if s := tm.Snapshot(); s.AbandonRefused != 1 || s.AbandonedTotal != 2 {
		t.Fatalf("snapshot %+v, want 1 refused, 2 abandoned in all", s)
	}
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want the work's panic", r)
		}
	}()
	_, _ = timeout.Execute(context.Background(), tm, func(context.Context) (int, error) { panic("boom") })
}

// A Pipeline answers at the deadline of an Abandon-mode timeout, and its
// breaker counts the call as a failure.
func TestPipelineAbandonsWithAnAbandonTimeout(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{Clock: clk})
	p := breakerimpl.Pipeline[struct{}, int]{Breaker: cb, Timeout: timeout.New(timeout.Settings{Timeout: time.Second, Slack: -1, Clock: clk, Mode: timeout.Abandon})}
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := p.Execute(context.Background(), struct{}{}, func(context.Context) (int, error) { <-release; return 1, nil })
		done <- err
	}()
	waitUntil(t, func() bool { return clk.Timers() > 0 })
	clk.Advance(time.Second)
	var err error
	select {
	case err = <-done:
		close(release)
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("Execute did not answer at the deadline")
	}
	if !errors.Is(err, timeout.ErrTimeout) || cb.Snapshot().Failures != 1 {
		t.Fatalf("Execute: %v, breaker failures %d; want ErrTimeout counted as a failure", err, cb.Snapshot().Failures)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
	}
}
