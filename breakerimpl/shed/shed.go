// Package shed drops requests while the service is overloaded, before they
// cost anything, in the style of go-zero's core/load adaptive shedder.
//
// A request is dropped when both hold:
//
//   - the CPU is hot: its usage (cgroup-aware, smoothed with an
//     exponentially weighted moving average, sampled in the background) is
//     at or above Settings.CPUThreshold, or was at a drop less than
//     Settings.CoolOff ago (so that shedding does not stop and start with
//     every sample while the CPU is on the edge);
//
//   - more requests are in flight than the service can have finished in
//     the time the fastest of them take, Little's law on the best the
//     rolling window saw:
//
//     limit    = maxPass / bucket × minRT × factor
//     maxPass  = the most requests that succeeded in one bucket of the window
//     minRT    = the lowest mean latency of a bucket (at least 1 ms)
//     factor   = clamp((1 − cpu) / (1 − CPUThreshold), 0.1, 1)
//
//     and both the in-flight count and its moving average (β = 0.9, updated
//     as requests finish) are above limit. The factor lowers the limit as
//     the CPU nears saturation, to a tenth of it at full use.
//
// The window is Settings.Window (5 s) in Settings.Buckets (50) buckets, as
// in go-zero; the bucket being filled is left out. Where go-zero measures
// every request with time.Now, takes a lock per request and formats a log
// line per drop, Allow and Done here read only the coarse clock and an
// atomic CPU figure: a few atomic operations, no allocation. Only while the
// CPU is hot does Allow read the window to compute the limit.
//
// A Shedder is a breakerimpl.Guard: call Permit.Done with the request's
// error (nil for a success; only successes count toward maxPass and minRT).
// It goes outermost in a breakerimpl.Pipeline, and in httpx.Shed for an
// HTTP server.
package shed

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/internal/rolling"
)

// ErrOverloaded is returned by Allow for a dropped request. It matches
// breakerimpl.ErrRejected with errors.Is.
var ErrOverloaded error = overloaded{}

type overloaded struct{}

func (overloaded) Error() string { return "shed: service overloaded" }
func (overloaded) Unwrap() error { return breakerimpl.ErrRejected }

// Defaults of the Settings fields left zero (go-zero's).
const (
	DefaultCPUThreshold = 0.9
	DefaultWindow       = 5 * time.Second
	DefaultBuckets      = 50
	DefaultCoolOff      = time.Second
)

// minRTFloor is the least minRT the limit is computed with: below a
// millisecond the coarse clock cannot measure a latency (go-zero rounds
// each latency up to a millisecond for the same reason).
const minRTFloor = int64(time.Millisecond)

// flyingBeta weighs the moving average of in-flight requests.
const flyingBeta = 0.9

// Settings configures a Shedder. The zero value is go-zero's shedder on
// this process's CPU.
//
// Name names the shedder in events and snapshots. It may be empty.
//
// CPUThreshold is the CPU usage, a fraction of what the process may use (1
// is every core its cgroup allows), at or above which requests may be
// dropped. Zero or less means DefaultCPUThreshold; values are cut to at
// most 0.99.
//
// Window and Buckets are the rolling window of throughput and latency, and
// how many parts it moves by. Zero or less means DefaultWindow and
// DefaultBuckets.
//
// CoolOff is how long after a drop made on a hot CPU the CPU still counts
// as hot. Zero means DefaultCoolOff; below zero, none: nothing is ever
// dropped below CPUThreshold.
//
// CPU reports the CPU usage. Nil means a Sampler of this process's CPU
// (NewSampler with SamplerSettings{}), which the Shedder stops on Close.
//
// OnEvent is told when dropping starts and when it stops (at the first
// request admitted after a drop), on the goroutine of that request. Nil
// means no one is told.
//
// Clock measures latencies and times the window. Nil means clock.Default();
// tests pass a *clock.Fake.
type Settings struct {
	Name         string
	CPUThreshold float64
	Window       time.Duration
	Buckets      int
	CoolOff      time.Duration
	CPU          CPUMeter
	OnEvent      func(Event)
	Clock        clock.Clock
}

// CPUMeter reports the CPU usage a Shedder compares with its threshold: a
// fraction in [0, 1] of the CPU the process may use. Usage is called on
// every request, so it must be cheap, as a Sampler's (an atomic load) is.
type CPUMeter interface {
	Usage() float64
}

// EventKind says what happened.
type EventKind string

// The events a Shedder publishes.
const (
	// Started: a request was dropped after others were admitted.
	Started EventKind = "started"
	// Stopped: a request was admitted after others were dropped.
	Stopped EventKind = "stopped"
)

// Event is published to Settings.OnEvent.
type Event struct {
	Name     string
	Kind     EventKind
	Snapshot Snapshot
}

// String describes the event on one line, for logs and %v, as in
// "shedder search: started dropping (cpu 0.95, in flight 12, limit 8.5)".
func (e Event) String() string {
	name := ""
	if e.Name != "" {
		name = " " + e.Name
	}
	s := e.Snapshot
	return fmt.Sprintf("shedder%s: %s dropping (cpu %.2f, in flight %d, limit %.1f)", name, e.Kind, s.CPU, s.InFlight, s.Limit)
}

// Snapshot is the state of a Shedder, for metrics.
type Snapshot struct {
	Name        string
	CPU         float64 // usage now, as the CPUMeter reports it
	Threshold   float64
	InFlight    int64
	AvgInFlight float64
	// Limit is the in-flight limit at this CPU usage (see the package doc).
	Limit float64
	// MaxPassRate is the best throughput of the window, requests a second.
	MaxPassRate float64
	// MinRT is the lowest mean latency of a bucket of the window (at least
	// a millisecond); zero when the window has no success yet.
	MinRT    time.Duration
	Dropping bool   // the last request was dropped
	Dropped  uint64 // requests dropped, since creation
}

// Shedder drops requests while the service is overloaded. Make one with
// New, and Close it when done if its settings left CPU nil. It is safe for
// concurrent use.
type Shedder struct {
	flying atomic.Int64
	_      [56]byte // the counters every request writes, each on its line
	avg    atomic.Uint64
	_      [56]byte

	name      string
	threshold float64
	coolOff   int64
	cpu       CPUMeter
	sampler   *Sampler // cpu, when it is a Sampler: read without an interface call
	owned     bool     // the Shedder made the sampler and stops it
	onEvent   func(Event)
	clock     clock.Clock
	window    *rolling.Window // passes and their summed latency

	hotAt    atomic.Int64 // when a request was last dropped at or above the threshold
	dropping atomic.Bool
	dropped  atomic.Uint64
}

// The slots of a Shedder's window.
const (
	slotPasses  = iota
	slotLatency // nanoseconds, summed over the passes
)

const never = math.MinInt64 / 2

// New returns a Shedder with the given settings (see Settings for the
// defaults of zero fields).
func New(s Settings) *Shedder {
	if s.CPUThreshold <= 0 {
		s.CPUThreshold = DefaultCPUThreshold
	}
	s.CPUThreshold = min(s.CPUThreshold, 0.99)
	if s.Window <= 0 {
		s.Window = DefaultWindow
	}
	if s.Buckets <= 0 {
		s.Buckets = DefaultBuckets
	}
	switch {
	case s.CoolOff == 0:
		s.CoolOff = DefaultCoolOff
	case s.CoolOff < 0:
		s.CoolOff = 0
	}
	if s.Clock == nil {
		s.Clock = clock.Default()
	}
	sh := &Shedder{
		name:      s.Name,
		threshold: s.CPUThreshold,
		coolOff:   int64(s.CoolOff),
		cpu:       s.CPU,
		onEvent:   s.OnEvent,
		clock:     s.Clock,
		window:    rolling.New(s.Clock, s.Window, s.Buckets),
	}
	if sh.cpu == nil {
		sh.sampler = NewSampler(SamplerSettings{})
		sh.cpu, sh.owned = sh.sampler, true
	} else {
		sh.sampler, _ = sh.cpu.(*Sampler)
	}
	sh.hotAt.Store(never)
	return sh
}

// Close stops the CPU sampler the Shedder started (when Settings.CPU was
// nil). The Shedder goes on working, with the last CPU figure.
func (s *Shedder) Close() {
	if s.owned {
		s.sampler.Stop()
	}
}

func (s *Shedder) usage() float64 {
	if sm := s.sampler; sm != nil {
		return sm.Usage()
	}
	return s.cpu.Usage()
}

// Allow admits a request or drops it with ErrOverloaded. When it admits,
// call Done on the returned permit exactly once, when the request has
// finished, with its error.
func (s *Shedder) Allow(context.Context) (breakerimpl.Permit, error) {
	now := s.clock.Nanotime()
	if cpu := s.usage(); cpu >= s.threshold || now-s.hotAt.Load() < s.coolOff {
		if s.overloaded(cpu) {
			return breakerimpl.Permit{}, s.drop(now, cpu)
		}
	}
	s.flying.Add(1)
	if s.dropping.Load() && s.dropping.CompareAndSwap(true, false) {
		s.publish(Stopped)
	}
	return breakerimpl.NewPermit(s, 0, now), nil
}

func (s *Shedder) drop(now int64, cpu float64) error {
	if cpu >= s.threshold {
		s.hotAt.Store(now)
	}
	if s.dropped.Add(1)&refreshEvery == 0 {
		s.refreshCPU()
	}
	if !s.dropping.Load() && s.dropping.CompareAndSwap(false, true) {
		s.publish(Started)
	}
	return ErrOverloaded
}

// Done records the end of a request admitted by Allow; use Permit.Done
// rather than calling it directly. A nil err is a success: its latency and
// its count go into the window.
func (s *Shedder) Done(p breakerimpl.Permit, err error) {
	flying := s.flying.Add(-1)
	for {
		old := s.avg.Load()
		avg := math.Float64frombits(old)*flyingBeta + float64(flying)*(1-flyingBeta)
		if s.avg.CompareAndSwap(old, math.Float64bits(avg)) {
			break
		}
	}
	if err != nil {
		return
	}
	if s.window.Add(slotPasses, 1)&refreshEvery == 0 {
		s.refreshCPU()
	}
	s.window.Add(slotLatency, max(s.clock.Nanotime()-p.Start(), 0))
}

// refreshEvery+1 is how many passes (or drops) go by between two calls of
// the sampler's Refresh from the request path: rare enough to cost nothing
// per request, often enough that a reading is never more than a few
// requests late when the sampler's own timer is starved of CPU.
const refreshEvery = 31

// refreshCPU lets the request path take a CPU reading that is due.
func (s *Shedder) refreshCPU() {
	if sm := s.sampler; sm != nil {
		sm.Refresh()
	}
}

// overloaded reports whether the requests in flight, and their moving
// average, are above the limit at CPU usage cpu.
func (s *Shedder) overloaded(cpu float64) bool {
	maxPass, minRT, _ := s.best()
	limit := s.limit(maxPass, minRT, cpu)
	return math.Float64frombits(s.avg.Load()) > limit && float64(s.flying.Load()) > limit
}

// limit is maxPass / bucket × minRT × factor, at least the factor.
func (s *Shedder) limit(maxPass, minRT int64, cpu float64) float64 {
	f := max(float64(maxPass)*float64(minRT)/float64(s.window.Width()), 1)
	return f * s.factor(cpu)
}

// factor lowers the limit as the CPU nears saturation.
func (s *Shedder) factor(cpu float64) float64 {
	return min(max((1-cpu)/(1-s.threshold), 0.1), 1)
}

// best returns the most successes in one finished bucket of the window (at
// least 1) and the lowest mean latency of such a bucket (a second when
// none has a success, as in go-zero: a limit too high to drop anything),
// and whether any bucket had a success. The live bucket is left out.
func (s *Shedder) best() (maxPass, minRT int64, seen bool) {
	maxPass, minRT = 1, int64(time.Second)
	s.window.Reduce(func(age int, c rolling.Counts) {
		passes := c[slotPasses]
		if age == 0 || passes <= 0 {
			return
		}
		maxPass = max(maxPass, passes)
		minRT = min(minRT, max(c[slotLatency]/passes, minRTFloor))
		seen = true
	})
	return maxPass, minRT, seen
}

func (s *Shedder) publish(kind EventKind) {
	if s.onEvent != nil {
		s.onEvent(Event{Name: s.name, Kind: kind, Snapshot: s.Snapshot()})
	}
}

// Snapshot returns the shedder's state now.
func (s *Shedder) Snapshot() Snapshot {
	cpu := s.usage()
	maxPass, minRT, seen := s.best()
	snap := Snapshot{
		Name:        s.name,
		CPU:         cpu,
		Threshold:   s.threshold,
		InFlight:    s.flying.Load(),
		AvgInFlight: math.Float64frombits(s.avg.Load()),
		Limit:       s.limit(maxPass, minRT, cpu),
		MaxPassRate: float64(maxPass) * float64(time.Second) / float64(s.window.Width()),
		Dropping:    s.dropping.Load(),
		Dropped:     s.dropped.Load(),
	}
	if seen {
		snap.MinRT = time.Duration(minRT)
	}
	return snap
}
