package shed

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// Defaults of the SamplerSettings fields left zero (go-zero's).
const (
	DefaultPeriod = 250 * time.Millisecond
	DefaultBeta   = 0.95
)

// SamplerSettings configures a Sampler.
//
// Source is where CPU time is read. Nil means SystemCPU(); if that finds
// nothing, the Sampler reports zero usage.
//
// Period is the time between two readings. Zero or less means
// DefaultPeriod.
//
// Beta weighs the moving average: each reading u moves the usage to
// Beta × usage + (1 − Beta) × u. With the defaults, a change shows half
// within 3.4 s. Zero, or a value outside [0, 1), means DefaultBeta.
//
// Clock times the readings. Nil means clock.Real(): the coarse default
// clock is kept by a goroutine, and under the CPU overload a Sampler exists
// to see, goroutines can wait seconds to be scheduled. Tests pass a
// *clock.Fake, whose Advance then takes the readings.
type SamplerSettings struct {
	Source CPUSource
	Period time.Duration
	Beta   float64
	Clock  clock.Clock
}

// Sampler reads the CPU usage every Period and keeps an exponentially
// weighted moving average of it, which Usage returns with one atomic load.
// Readings are taken by a timer's function and, since a timer's goroutine
// can wait seconds to run on a CPU-starved process (the very overload a
// shedder must see), also by Refresh, which a Shedder calls from its
// request path: whichever comes first once a Period has passed takes the
// reading. It runs no goroutine of its own between readings, and none after
// Stop.
type Sampler struct {
	usage  atomic.Uint64 // float64 bits
	source CPUSource
	period time.Duration
	beta   float64
	clock  clock.Clock

	mu       sync.Mutex
	timer    clock.Timer
	stopped  bool
	lastUsed time.Duration
	lastAt   int64
	primed   bool
	// due is when the next reading is due (clock nanoseconds), for Refresh
	// to check without the lock.
	due atomic.Int64
}

// NewSampler starts a Sampler with the given settings (see SamplerSettings
// for the defaults of zero fields). Stop it when done.
func NewSampler(s SamplerSettings) *Sampler {
	if s.Source == nil {
		s.Source, _ = SystemCPU()
	}
	if s.Period <= 0 {
		s.Period = DefaultPeriod
	}
	if s.Beta <= 0 || s.Beta >= 1 {
		s.Beta = DefaultBeta
	}
	if s.Clock == nil {
		s.Clock = clock.Real()
	}
	sm := &Sampler{source: s.Source, period: s.Period, beta: s.Beta, clock: s.Clock}
	sm.mu.Lock()
	sm.read()
	sm.timer = s.Clock.AfterFunc(s.Period, sm.tick)
	sm.mu.Unlock()
	return sm
}

// Usage returns the smoothed CPU usage, a fraction in [0, 1] of the CPU the
// process may use.
func (s *Sampler) Usage() float64 { return math.Float64frombits(s.usage.Load()) }

// Stop ends the readings; Usage keeps its last value. It waits for a
// reading under way.
func (s *Sampler) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	s.timer.Stop()
}

func (s *Sampler) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.read()
	s.timer.Reset(s.period)
}

// Refresh takes a reading if one is due and no other is under way. It is
// cheap when none is due (one clock read and one atomic load), so a caller
// on a request path may call it every so many requests.
func (s *Sampler) Refresh() {
	if s.clock.Nanotime() < s.due.Load() || !s.mu.TryLock() {
		return
	}
	defer s.mu.Unlock()
	if s.stopped || s.clock.Nanotime() < s.due.Load() {
		return
	}
	s.read()
}

// read takes one reading and moves the average. The caller holds s.mu.
func (s *Sampler) read() {
	if s.source == nil {
		return
	}
	used, cores, err := s.source.CPU()
	if err != nil {
		return // keep the average; the next reading may work
	}
	now := s.clock.Nanotime()
	if s.primed && now > s.lastAt && cores > 0 {
		u := float64(used-s.lastUsed) / (float64(now-s.lastAt) * cores)
		u = min(max(u, 0), 1)
		s.usage.Store(math.Float64bits(s.beta*s.Usage() + (1-s.beta)*u))
	}
	s.lastUsed, s.lastAt, s.primed = used, now, true
	s.due.Store(now + int64(s.period))
}
