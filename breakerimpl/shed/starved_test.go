package shed_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/shed"
)

// starvedClock is a fake clock whose AfterFunc timers never run, as a
// timer's goroutine on a process whose CPU is taken by runnable goroutines
// may not for seconds.
type starvedClock struct{ *clock.Fake }

type neverTimer struct{}

func (neverTimer) C() <-chan time.Time                           { return nil }
func (neverTimer) Stop() bool                                    { return true }
func (neverTimer) Reset(time.Duration) bool                      { return true }
func (starvedClock) AfterFunc(time.Duration, func()) clock.Timer { return neverTimer{} }

func TestRefreshReadsWhenTheTimerIsStarved(t *testing.T) {
	fake := clock.NewFake(time.Time{})
	clk := starvedClock{fake}
	src := &steadySource{clk: fake, share: 0.9, cores: 2}
	sm := shed.NewSampler(shed.SamplerSettings{Source: src, Period: 100 * time.Millisecond, Beta: 0.5, Clock: clk})
	defer sm.Stop()

	fake.Advance(50 * time.Millisecond)
	sm.Refresh() // not due yet: no reading
	if got := sm.Usage(); got != 0 {
		t.Fatalf("usage %v before a reading was due, want 0", got)
	}
	fake.Advance(60 * time.Millisecond)
	sm.Refresh()
	if got := sm.Usage(); math.Abs(got-0.45) > 1e-9 {
		t.Fatalf("usage %v after Refresh, want 0.45 (half of 0.9)", got)
	}
}

// TestShedderRefreshesAStarvedSampler drives a Shedder whose sampler's
// timer never runs: the request path itself must take the readings, or
// the shedder never sees the CPU get hot.
func TestShedderRefreshesAStarvedSampler(t *testing.T) {
	fake := clock.NewFake(time.Time{})
	src := &steadySource{clk: fake, share: 0, cores: 2}
	sm := shed.NewSampler(shed.SamplerSettings{Source: src, Period: 100 * time.Millisecond, Beta: 0.5, Clock: starvedClock{fake}})
	defer sm.Stop()
	s := shed.New(shed.Settings{CPUThreshold: 0.8, Window: time.Second, Buckets: 10, CPU: sm, Clock: fake})
	ctx := context.Background()
	// Healthy traffic: one request at a time, 1ms each.
	for range 200 {
		p, err := s.Allow(ctx)
		if err != nil {
			t.Fatalf("dropped while the CPU is idle: %v", err)
		}
		fake.Advance(time.Millisecond)
		p.Done(nil)
	}
	// Overload: the CPU is saturated and requests pile up in flight.
	src.share = 1
	var held []interface{ Done(error) }
	dropped := 0
	for range 5000 { // 500ms: five readings due
		fake.Advance(100 * time.Microsecond)
		p, err := s.Allow(ctx)
		if errors.Is(err, shed.ErrOverloaded) {
			dropped++
			continue
		}
		held = append(held, p)
		if len(held) > 50 { // finish the oldest: Done calls keep coming
			held[0].Done(nil)
			held = held[1:]
		}
	}
	if dropped == 0 {
		t.Fatalf("nothing dropped: CPU seen as %v with a starved sampler", sm.Usage())
	}
}
