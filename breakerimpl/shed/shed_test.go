package shed_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/shed"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixedCPU is a CPU usage the test sets.
type fixedCPU struct{ bits atomic.Uint64 }

func (c *fixedCPU) Usage() float64                      { return math.Float64frombits(c.bits.Load()) }
func (c *fixedCPU) Set(u float64)                       { c.bits.Store(math.Float64bits(u)) }
func newCPU(u float64) *fixedCPU                        { c := &fixedCPU{}; c.Set(u); return c }
func near(a, b float64) bool                            { return math.Abs(a-b) < 1e-9 }
func allow(s *shed.Shedder) (breakerimpl.Permit, error) { return s.Allow(context.Background()) }

// warmUp runs steady traffic for a second: every 10 ms a request starts
// and the one started 20 ms before succeeds, so the window sees 10
// successes per 100 ms bucket, 20 ms each, two in flight.
func warmUp(t *testing.T, s *shed.Shedder, clk *clock.Fake) {
	t.Helper()
	var inFlight []breakerimpl.Permit
	for range 100 {
		p, err := allow(s)
		if err != nil {
			t.Fatalf("dropped during the warm-up: %v", err)
		}
		inFlight = append(inFlight, p)
		if len(inFlight) == 3 {
			inFlight[0].Done(nil)
			inFlight = inFlight[1:]
		}
		clk.Advance(10 * time.Millisecond)
	}
	for _, p := range inFlight {
		p.Done(nil)
	}
}

func TestLimitIsThroughputTimesLatency(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	cpu := newCPU(0.2)
	s := shed.New(shed.Settings{CPU: cpu, Clock: clk}) // 50 buckets of 100 ms, threshold 0.9
	warmUp(t, s, clk)
	snap := s.Snapshot()
	// 10 successes per 100 ms bucket × 20 ms = 2 requests in flight.
	if !near(snap.MaxPassRate, 100) || snap.MinRT != 20*time.Millisecond || !near(snap.Limit, 2) {
		t.Fatalf("snapshot %+v, want 100/s, 20ms, limit 2", snap)
	}
	cpu.Set(0.95) // half way from the threshold to saturation: half the limit
	if got := s.Snapshot().Limit; !near(got, 1) {
		t.Fatalf("limit %v at 95 %% CPU, want 1", got)
	}
	cpu.Set(1)
	if got := s.Snapshot().Limit; !near(got, 0.2) {
		t.Fatalf("limit %v at 100 %% CPU, want a tenth of 2", got)
	}
}

// pileUp puts 50 requests in flight (a cool CPU admits them all), with a
// moving average well above the limit of 2, and returns their permits.
func pileUp(t *testing.T, s *shed.Shedder) []breakerimpl.Permit {
	t.Helper()
	var held []breakerimpl.Permit
	for range 60 {
		p, err := allow(s)
		if err != nil {
			t.Fatalf("dropped on a cool CPU: %v", err)
		}
		held = append(held, p)
	}
	for _, p := range held[:10] {
		p.Done(errors.New("5xx")) // failures: the window's figures stay as they are
	}
	return held[10:]
}

func TestDropsWhenHotAndOverloadedThenCoolsOff(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	cpu := newCPU(0.2)
	var events []shed.EventKind
	s := shed.New(shed.Settings{CPU: cpu, Clock: clk, CoolOff: time.Second,
		OnEvent: func(e shed.Event) { events = append(events, e.Kind) }})
	warmUp(t, s, clk)

	held := pileUp(t, s) // a cool CPU: never a drop, however many are in flight
	cpu.Set(0.95)
	if _, err := allow(s); err != shed.ErrOverloaded || !errors.Is(err, breakerimpl.ErrRejected) {
		t.Fatalf("hot and overloaded: %v, want ErrOverloaded, a breakerimpl.ErrRejected", err)
	}
	if len(events) != 1 || events[0] != shed.Started || !s.Snapshot().Dropping {
		t.Fatalf("events %v, want started", events)
	}
	cpu.Set(0.5) // the CPU cools, the requests are still there
	clk.Advance(999 * time.Millisecond)
	if _, err := allow(s); err != shed.ErrOverloaded {
		t.Fatalf("within the cool-off: %v, want a drop", err)
	}
	clk.Advance(time.Millisecond)
	p, err := allow(s)
	if err != nil {
		t.Fatalf("after the cool-off: %v, want admitted", err)
	}
	p.Done(nil)
	if len(events) != 2 || events[1] != shed.Stopped || s.Snapshot().Dropped != 2 {
		t.Fatalf("events %v, snapshot %+v; want started, stopped, two drops", events, s.Snapshot())
	}
	for _, p := range held {
		p.Done(nil)
	}
}

// TestNeverDropsBelowTheThreshold is the shedder's rule as a property:
// over random load and CPU, a request is dropped only at or above the CPU
// threshold, or within CoolOff of a drop that was; with no cool-off, only
// at or above it.
func TestNeverDropsBelowTheThreshold(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 11))
		clk := clock.NewFake(time.Time{})
		cpu := newCPU(0)
		threshold := 0.5 + rng.Float64()*0.45
		coolOff := []time.Duration{-1, 0, 300 * time.Millisecond, 2 * time.Second}[rng.IntN(4)]
		effectiveCoolOff := coolOff
		if coolOff == 0 {
			effectiveCoolOff = shed.DefaultCoolOff
		} else if coolOff < 0 {
			effectiveCoolOff = 0
		}
		s := shed.New(shed.Settings{CPU: cpu, Clock: clk, CPUThreshold: threshold, CoolOff: coolOff,
			Window: time.Second, Buckets: 10})
		lastHotDrop := int64(math.MinInt64 / 2)
		var held []breakerimpl.Permit
		drops, belowDrops := 0, 0
		for range 5000 {
			switch r := rng.IntN(10); {
			case r == 0:
				cpu.Set(rng.Float64())
			case r <= 2:
				clk.Advance(time.Duration(rng.IntN(50)) * time.Millisecond)
			case r <= 5 && len(held) > 0:
				i := rng.IntN(len(held))
				var err error
				if rng.IntN(5) == 0 {
					err = errors.New("failed")
				}
				held[i].Done(err)
				held = append(held[:i], held[i+1:]...)
			default:
				now := clk.Nanotime()
				p, err := allow(s)
				if err == nil {
					held = append(held, p)
					continue
				}
				drops++
				if u := cpu.Usage(); u >= threshold {
					lastHotDrop = now
				} else {
					belowDrops++
					if now-lastHotDrop >= int64(effectiveCoolOff) {
						t.Fatalf("seed %d: dropped at CPU %.3f < threshold %.3f, %v after the last hot drop, cool-off %v",
							seed, u, threshold, time.Duration(now-lastHotDrop), effectiveCoolOff)
					}
				}
			}
		}
		for _, p := range held {
			p.Done(nil)
		}
		if drops == 0 {
			t.Fatalf("seed %d: no drop at all; the load does not test the rule", seed)
		}
		t.Logf("seed %d: %d drops, %d below the threshold within a cool-off of %v", seed, drops, belowDrops, effectiveCoolOff)
	}
}

func TestCloseStopsTheOwnSampler(t *testing.T) {
	s := shed.New(shed.Settings{})
	p, err := allow(s)
	if err != nil {
		t.Fatal(err)
	}
	p.Done(nil)
	s.Close()
	goleak.VerifyNone(t)
}
