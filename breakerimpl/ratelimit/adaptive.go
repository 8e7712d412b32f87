package ratelimit

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// AdaptiveSettings configures an Adaptive limiter. The zero value is
// usable: every field has a default.
type AdaptiveSettings struct {
	// Name names the limiter in snapshots.
	Name string
	// InitialLimit is the concurrency allowed at first (default 20);
	// MinLimit and MaxLimit bound it (defaults 1 and 1000).
	InitialLimit, MinLimit, MaxLimit int
	// Window is how often the limit is recomputed from the latencies of
	// the calls that ended since (default 100 ms), once at least
	// MinSamples of them did (default 10).
	Window     time.Duration
	MinSamples int
	// Tolerance is how far the recent latency may rise over the baseline
	// before the limit shrinks: 1.5 (the default) lets it grow by half.
	Tolerance float64
	// Smoothing is the weight of a new limit against the old, in (0, 1]
	// (default 0.2).
	Smoothing float64
	// BaselineWindows is how many windows the baseline latency takes to
	// follow the recent latency upwards (an average over about that many);
	// downwards it follows at once. Default 600.
	BaselineWindows int
	// Clock is the time source; nil means clock.Default().
	Clock clock.Clock
}

func (s AdaptiveSettings) withDefaults() AdaptiveSettings {
	if s.InitialLimit <= 0 {
		s.InitialLimit = 20
	}
	if s.MinLimit <= 0 {
		s.MinLimit = 1
	}
	if s.MaxLimit <= 0 {
		s.MaxLimit = 1000
	}
	s.MaxLimit = max(s.MaxLimit, s.MinLimit)
	s.InitialLimit = min(max(s.InitialLimit, s.MinLimit), s.MaxLimit)
	if s.Window <= 0 {
		s.Window = 100 * time.Millisecond
	}
	if s.MinSamples <= 0 {
		s.MinSamples = 10
	}
	if s.Tolerance < 1 {
		s.Tolerance = 1.5
	}
	if s.Smoothing <= 0 || s.Smoothing > 1 {
		s.Smoothing = 0.2
	}
	if s.BaselineWindows <= 0 {
		s.BaselineWindows = 600
	}
	if s.Clock == nil {
		s.Clock = clock.Default()
	}
	return s
}

// Adaptive is a concurrency limiter whose limit follows the dependency's
// latency, as Netflix's concurrency-limits Gradient2 and failsafe-go's
// adaptivelimiter do: no one has to know the right number. Every Window,
// from the mean latency of the calls that ended in it (short) and a
// baseline (long, an average that follows short slowly upwards and at once
// downwards):
//
//	gradient = clamp(Tolerance · long / short, 0.5, 1)
//	limit'   = limit · gradient + √limit
//	limit    = (1 − Smoothing) · limit + Smoothing · limit'
//
// bounded by MinLimit and MaxLimit. While latency stays near its baseline
// the limit grows by about √limit a window (the queue it allows); when
// calls queue in the dependency and latency rises past Tolerance, it
// shrinks by up to half. The limit does not grow while fewer than half of
// it were in use during the window (nothing to learn from an idle
// limiter). Calls over the limit are refused at once with ErrLimited.
//
// Allow costs one atomic add (and a load); Done an add, two atomic adds of
// the sample and a clock reading; the recomputation, under a lock, once a
// window. Make one with NewAdaptive; it is safe for concurrent use.
type Adaptive struct {
	inflight atomic.Int64
	_        [56]byte // the hot counter on a cache line of its own
	limit    atomic.Int64
	peak     atomic.Int64 // the most in flight during the window
	sumRTT   atomic.Int64
	samples  atomic.Int64
	next     atomic.Int64 // when the limit is next recomputed, on the clock
	rejected atomic.Uint64

	cfg AdaptiveSettings
	mu  sync.Mutex
	est float64 // the limit, unrounded
	lng float64 // the baseline latency, ns
	srt float64 // the last window's latency, ns
}

// NewAdaptive returns an Adaptive limiter at its initial limit.
func NewAdaptive(s AdaptiveSettings) *Adaptive {
	s = s.withDefaults()
	a := &Adaptive{cfg: s, est: float64(s.InitialLimit)}
	a.limit.Store(int64(s.InitialLimit))
	a.next.Store(s.Clock.Nanotime() + int64(s.Window))
	return a
}

// Allow admits a call while fewer than the limit are in flight, or refuses
// it with ErrLimited. Call Done on the returned permit when it ends.
func (a *Adaptive) Allow(context.Context) (breakerimpl.Permit, error) {
	n := a.inflight.Add(1)
	if n > a.limit.Load() {
		a.inflight.Add(-1)
		a.rejected.Add(1)
		return breakerimpl.Permit{}, ErrLimited
	}
	if n > a.peak.Load() {
		a.peak.Store(n)
	}
	return breakerimpl.NewPermit(a, 0, a.cfg.Clock.Nanotime()), nil
}

// Done ends a call, and counts its latency unless it was cancelled by its
// caller (which says nothing of the dependency); use Permit.Done rather
// than calling it directly.
func (a *Adaptive) Done(p breakerimpl.Permit, err error) {
	a.inflight.Add(-1)
	now := a.cfg.Clock.Nanotime()
	if !errors.Is(err, context.Canceled) {
		a.sumRTT.Add(now - p.Start())
		a.samples.Add(1)
	}
	if now >= a.next.Load() {
		a.update(now)
	}
}

// update recomputes the limit from the window's samples.
func (a *Adaptive) update(now int64) {
	if !a.mu.TryLock() {
		return // another call is at it
	}
	defer a.mu.Unlock()
	if now < a.next.Load() || a.samples.Load() < int64(a.cfg.MinSamples) {
		return // too few samples: the window goes on
	}
	a.next.Store(now + int64(a.cfg.Window))
	n, sum := a.samples.Swap(0), a.sumRTT.Swap(0)
	peak := a.peak.Swap(a.inflight.Load())
	short := float64(sum) / float64(max(n, 1))
	a.srt = short
	switch {
	case a.lng == 0 || short < a.lng:
		a.lng = short
	default:
		a.lng += (short - a.lng) / float64(a.cfg.BaselineWindows)
	}
	gradient := 1.0
	if short > 0 {
		gradient = math.Max(0.5, math.Min(1, a.cfg.Tolerance*a.lng/short))
	}
	next := a.est*gradient + math.Sqrt(a.est)
	if next > a.est && float64(peak) < a.est/2 {
		next = a.est // idle: no evidence the dependency takes more
	}
	a.est = (1-a.cfg.Smoothing)*a.est + a.cfg.Smoothing*next
	a.est = math.Max(float64(a.cfg.MinLimit), math.Min(float64(a.cfg.MaxLimit), a.est))
	a.limit.Store(int64(math.Round(a.est)))
}

// Limit returns the concurrency allowed now.
func (a *Adaptive) Limit() int { return int(a.limit.Load()) }

// Latencies returns the baseline and the last window's mean latency the
// limit was computed from (zero before the first window).
func (a *Adaptive) Latencies() (baseline, recent time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return time.Duration(a.lng), time.Duration(a.srt)
}

// RetryAfter is a short wait: the limit moves every Window.
func (a *Adaptive) RetryAfter() time.Duration { return retryAfterSeconds(a.cfg.Window) }

// Snapshot returns the limiter's state now (Kind "adaptive").
func (a *Adaptive) Snapshot() Snapshot {
	l := a.limit.Load()
	return Snapshot{Name: a.cfg.Name, Kind: "adaptive", Limit: float64(l), Available: float64(max(l-a.inflight.Load(), 0)), Rejected: a.rejected.Load()}
}
