package clock_test

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

func TestFakeFiresTimersInOrderOfDeadline(t *testing.T) {
	f := clock.NewFake(time.Time{})
	var fired []string
	at := func(name string) func() {
		return func() { fired = append(fired, name+"@"+time.Duration(f.Nanotime()).String()) }
	}
	f.AfterFunc(3*time.Second, at("c"))
	f.AfterFunc(time.Second, at("a"))
	stopped := f.AfterFunc(2*time.Second, at("never"))
	f.AfterFunc(2*time.Second, at("b"))
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer returned false")
	}
	f.Advance(2 * time.Second)
	f.Advance(2 * time.Second)
	want := []string{"a@1s", "b@2s", "c@3s"}
	if !slices.Equal(fired, want) {
		t.Fatalf("fired %v, want %v", fired, want)
	}
	if f.Nanotime() != int64(4*time.Second) || f.Timers() != 0 {
		t.Fatalf("now %v with %d timers, want 4s and none", time.Duration(f.Nanotime()), f.Timers())
	}
}

func TestFakeTimerChannelAndReset(t *testing.T) {
	f := clock.NewFake(time.Time{})
	tm := f.NewTimer(time.Second)
	if tm.Reset(5*time.Second) != true {
		t.Fatal("Reset of a pending timer returned false")
	}
	f.Advance(4 * time.Second)
	select {
	case <-tm.C():
		t.Fatal("fired before its reset deadline")
	default:
	}
	f.Advance(time.Second)
	if got := <-tm.C(); !got.Equal(f.Now()) {
		t.Fatalf("timer sent %v, want %v", got, f.Now())
	}
}

func TestSleepReturnsOnTimerOrContext(t *testing.T) {
	defer goleak.VerifyNone(t)
	f := clock.NewFake(time.Time{})
	done := make(chan error)
	go func() { done <- clock.Sleep(context.Background(), f, time.Second) }()
	for f.Timers() == 0 { // wait for Sleep to arm its timer
		runtime.Gosched()
	}
	f.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatalf("Sleep = %v, want nil", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := clock.Sleep(ctx, f, time.Hour); err != context.Canceled {
		t.Fatalf("Sleep with a cancelled context = %v, want context.Canceled", err)
	}
}

func TestCoarseAdvancesAndStopsWhenIdle(t *testing.T) {
	c := clock.NewCoarse(time.Millisecond)
	first := c.Nanotime()
	real := clock.Real()
	start := real.Nanotime()
	for c.Nanotime() == first { // the ticker must move it
		if time.Duration(real.Nanotime()-start) > 5*time.Second {
			t.Fatal("coarse clock did not advance in 5 s")
		}
		time.Sleep(time.Millisecond)
	}
	// goleak retries for a while; the ticker must end after ~50 ms idle.
	goleak.VerifyNone(t)
}
