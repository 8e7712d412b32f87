// Package health scores how well a dependency is doing, from its recent
// calls: their 95th-percentile latency, their error rate, and the health of
// the connection to it. A fallback transport asks [Score.Healthy] before it
// picks a path; a [breakerimpl.Pipeline] takes a *Score as its Degrade
// guard, which refuses calls with breakerimpl.ErrDegraded (so the fallback
// serves) while the score is at or under its threshold.
//
// # The score
//
// Each component maps what was measured over the window to [0, 1], 1 for
// good, by a straight line between a good mark and a bad one:
//
//	latency     1 at p95 ≤ LatencyTarget, 0 at p95 ≥ LatencyLimit
//	errors      1 at no failure, 0 at an error rate ≥ MaxErrorRate
//	connection  1 at no connection error, 0 at a rate ≥ MaxErrorRate;
//	            0 while SetConnected(false) says the connection is down
//
// and the score is their weighted mean,
//
//	score = (Wl·latency + We·errors + Wc·connection) / (Wl + We + Wc)
//
// with weights 0.4, 0.4 and 0.2 by default. The dependency is healthy while
// the score is above Threshold (0.6 by default): with the default weights one
// component at its worst is enough to make it unhealthy, and two halfway
// there are too.
//
// With fewer than MinRequests calls in the window, the latency and error
// components are 1: too few calls say nothing. So a score that refuses
// every call heals by itself once its window has slid past the bad calls,
// and the calls that follow measure the dependency afresh, as a breaker's
// open duration lets it probe.
//
// # The window
//
// Calls are counted on the rolling window every breakerimpl policy uses
// (internal/rolling), over Window in Buckets buckets. Latencies fall in a
// histogram of 12 bins whose bounds double from LatencyTarget/32 to
// LatencyTarget·32; a quantile is interpolated inside its bin, so its
// error is at most the bin's width (half the value), and any latency past
// 32 times the target reads as 32 times the target.
package health

import (
	"context"
	"errors"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/internal/rolling"
)

// ErrUnhealthy is the error of a call a *Score refused. It matches
// breakerimpl.ErrDegraded with errors.Is, so a Pipeline reports it with
// Reason "degraded".
var ErrUnhealthy error = unhealthy{}

type unhealthy struct{}

func (unhealthy) Error() string { return "health: dependency unhealthy, fallback forced" }
func (unhealthy) Unwrap() error { return breakerimpl.ErrDegraded }

// Defaults of the Settings fields left zero.
const (
	DefaultLatencyWeight    = 0.4
	DefaultErrorWeight      = 0.4
	DefaultConnectionWeight = 0.2
	DefaultThreshold        = 0.6
	DefaultLatencyTarget    = 100 * time.Millisecond
	DefaultMaxErrorRate     = 0.5
	DefaultMinRequests      = 10
	DefaultWindow           = 10 * time.Second
	DefaultBuckets          = 10
	DefaultRefresh          = 50 * time.Millisecond
)

// Settings configures a Score. The zero value is the defaults above.
//
// Name names the dependency in events and snapshots.
//
// Weights set the share of each component in the score; zero means the
// default. Set a weight to a negative value to leave its component out
// (say, a dependency with no connection of its own to watch).
//
// Threshold: the dependency is healthy while the score is above it; zero
// means 0.6. A negative Threshold makes it healthy whatever the score.
//
// LatencyTarget is the p95 latency that scores 1; zero means 100ms.
// LatencyLimit is the p95 that scores 0; zero means 4·LatencyTarget.
//
// MaxErrorRate is the failure rate, and the connection-error rate, that
// scores 0; zero means 0.5.
//
// MinRequests is the calls the window needs before latency and errors
// count; zero means 10.
//
// Window and Buckets shape the rolling window; zero means 10s and 10.
//
// Refresh is how long a computed score is reused by Healthy and Allow,
// which are on the call path; zero means 50ms. Report always computes
// afresh.
//
// Classify sorts the errors of calls: Ignored ones are not counted at all,
// Success ones count as successes. Nil means breakerimpl.DefaultClassifier.
// Refusals by other policies (breakerimpl.ErrOpen, ErrHalfOpenFull,
// ErrRejected, ErrDegraded) are never counted: they say nothing about the
// dependency, and their latency is not its latency.
//
// IsConnectionError says which failures are the connection's (dial
// refused, reset, unreachable) rather than the dependency's answer; nil
// means ConnectionError.
//
// OnChange is told every change between healthy and unhealthy, on the
// goroutine that computed the score. It must be quick and must not call the
// Score's Allow or Healthy.
//
// Clock is the time source; nil means clock.Default().
type Settings struct {
	Name                                         string
	LatencyWeight, ErrorWeight, ConnectionWeight float64
	Threshold                                    float64
	LatencyTarget, LatencyLimit                  time.Duration
	MaxErrorRate                                 float64
	MinRequests                                  int
	Window                                       time.Duration
	Buckets                                      int
	Refresh                                      time.Duration
	Classify                                     breakerimpl.Classifier
	IsConnectionError                            func(error) bool
	OnChange                                     func(Event)
	Clock                                        clock.Clock
}

// Reason codes of health events.
const (
	// ReasonUnder: the score fell to or under the threshold.
	ReasonUnder = "score-under-threshold"
	// ReasonRecovered: the score rose above the threshold again.
	ReasonRecovered = "score-recovered"
)

// Event is a change between healthy and unhealthy.
type Event struct {
	Name    string
	Healthy bool   // the new state
	Reason  string // ReasonUnder or ReasonRecovered
	Report  Report // the figures that caused it
}

// Report is a score and what it was computed from.
type Report struct {
	Score   float64
	Healthy bool
	// Latency, Errors and Connection are the components' scores.
	Latency, Errors, Connection float64
	// P95 is the window's 95th-percentile latency; zero with no call.
	P95 time.Duration
	// Requests counts the calls in the window; ErrorRate and
	// ConnectionErrorRate are shares of them.
	Requests                       int64
	ErrorRate, ConnectionErrorRate float64
	// Connected is what SetConnected said last (true at first).
	Connected bool
}

// Snapshot is a Score's report with its lifetime counters, for metrics.
type Snapshot struct {
	Name string
	Report
	Threshold float64
	Refused   uint64 // calls Allow refused, since creation
	Changes   uint64 // changes between healthy and unhealthy, since creation
}

// Outcome-window slots.
const (
	slotCalls = iota
	slotFailures
	slotConnFailures
)

// bins is the number of latency bins: 11 doubling bounds and one past them.
const bins = 12

// Score is a dependency's health. Make one with New; it is safe for
// concurrent use.
type Score struct {
	cfg        Settings
	tune       atomic.Pointer[Tuning] // the figures Tune changes; Report reads them
	wl, we, wc float64
	bounds     [bins - 1]int64 // upper bounds of the latency bins, in ns
	outcomes   *rolling.Window
	latencies  [bins / rolling.Slots]*rolling.Window

	disconnected atomic.Bool
	refused      atomic.Uint64
	changes      atomic.Uint64

	mu      sync.Mutex
	fresh   bool  // a verdict was computed, at at
	at      int64 // Nanotime of the cached verdict
	healthy atomic.Bool
	last    Report
}

// New returns a Score with the given settings (see Settings for the
// defaults of zero fields). It starts healthy.
func New(s Settings) *Score {
	if s.Clock == nil {
		s.Clock = clock.Default()
	}
	if s.Threshold == 0 {
		s.Threshold = DefaultThreshold
	}
	if s.LatencyTarget <= 0 {
		s.LatencyTarget = DefaultLatencyTarget
	}
	if s.LatencyLimit <= s.LatencyTarget {
		s.LatencyLimit = 4 * s.LatencyTarget
	}
	if s.MaxErrorRate <= 0 {
		s.MaxErrorRate = DefaultMaxErrorRate
	}
	if s.MinRequests <= 0 {
		s.MinRequests = DefaultMinRequests
	}
	if s.Window <= 0 {
		s.Window = DefaultWindow
	}
	if s.Buckets <= 0 {
		s.Buckets = DefaultBuckets
	}
	if s.Refresh <= 0 {
		s.Refresh = DefaultRefresh
	}
	if s.Classify == nil {
		s.Classify = breakerimpl.DefaultClassifier
	}
	if s.IsConnectionError == nil {
		s.IsConnectionError = ConnectionError
	}
	weight := func(w, def float64) float64 {
		switch {
		case w == 0:
			return def
		case w < 0:
			return 0
		}
		return w
	}
	sc := &Score{
		cfg: s,
		wl:  weight(s.LatencyWeight, DefaultLatencyWeight),
		we:  weight(s.ErrorWeight, DefaultErrorWeight),
		wc:  weight(s.ConnectionWeight, DefaultConnectionWeight),
	}
	for i := range sc.bounds {
		sc.bounds[i] = int64(s.LatencyTarget) << i >> 5
	}
	sc.outcomes = rolling.New(s.Clock, s.Window, s.Buckets)
	for i := range sc.latencies {
		sc.latencies[i] = rolling.New(s.Clock, s.Window, s.Buckets)
	}
	sc.tune.Store(&Tuning{Threshold: s.Threshold, LatencyTarget: s.LatencyTarget, LatencyLimit: s.LatencyLimit, MaxErrorRate: s.MaxErrorRate, MinRequests: s.MinRequests})
	sc.healthy.Store(true)
	sc.last = Report{Score: 1, Healthy: true, Latency: 1, Errors: 1, Connection: 1, Connected: true}
	return sc
}

// Tuning is the part of Settings a Score takes while it runs (see Tune):
// the fields of the same names, with the same meaning and defaults. The
// latency bins stay where Settings.LatencyTarget put them: a target moved
// far (more than 32 times) from it is measured coarsely.
type Tuning struct {
	Threshold                   float64
	LatencyTarget, LatencyLimit time.Duration
	MaxErrorRate                float64
	MinRequests                 int
}

// Tuning returns the figures in force.
func (s *Score) Tuning() Tuning { return *s.tune.Load() }

// Tune puts new figures in force; fields left zero take the defaults of
// Settings. The next Healthy or Allow computes the score afresh with them.
// Package reload calls it when a policy file changes.
func (s *Score) Tune(t Tuning) {
	if t.Threshold == 0 {
		t.Threshold = DefaultThreshold
	}
	if t.LatencyTarget <= 0 {
		t.LatencyTarget = DefaultLatencyTarget
	}
	if t.LatencyLimit <= t.LatencyTarget {
		t.LatencyLimit = 4 * t.LatencyTarget
	}
	if t.MaxErrorRate <= 0 {
		t.MaxErrorRate = DefaultMaxErrorRate
	}
	if t.MinRequests <= 0 {
		t.MinRequests = DefaultMinRequests
	}
	s.tune.Store(&t)
	s.mu.Lock()
	s.fresh = false
	s.mu.Unlock()
}

// ConnectionError is the default Settings.IsConnectionError: a refused,
// reset or aborted connection, an unreachable host or network, or a failed
// dial.
func ConnectionError(err error) bool {
	for _, e := range []error{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.EPIPE} {
		if errors.Is(err, e) {
			return true
		}
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// Record counts one finished call: how long it took and its error (nil
// for success). Calls refused by a policy, and errors the classifier
// ignores, are not counted.
func (s *Score) Record(latency time.Duration, err error) {
	if err != nil {
		if refusal(err) {
			return
		}
		switch s.cfg.Classify(err) {
		case breakerimpl.Ignored:
			return
		case breakerimpl.Success:
			err = nil
		}
	}
	b := s.bin(latency)
	s.latencies[b/rolling.Slots].Add(b%rolling.Slots, 1)
	s.outcomes.Add(slotCalls, 1)
	if err != nil {
		s.outcomes.Add(slotFailures, 1)
		if s.cfg.IsConnectionError(err) {
			s.outcomes.Add(slotConnFailures, 1)
		}
	}
}

func refusal(err error) bool {
	return errors.Is(err, breakerimpl.ErrOpen) || errors.Is(err, breakerimpl.ErrHalfOpenFull) ||
		errors.Is(err, breakerimpl.ErrRejected) || errors.Is(err, breakerimpl.ErrDegraded)
}

// bin returns the latency bin of d.
func (s *Score) bin(d time.Duration) int {
	for i, b := range s.bounds {
		if int64(d) <= b {
			return i
		}
	}
	return bins - 1
}

// SetConnected says whether the connection to the dependency is up (a gRPC
// channel READY or IDLE, say): while it is down the connection component
// is 0.
func (s *Score) SetConnected(up bool) {
	s.disconnected.Store(!up)
	s.mu.Lock()
	s.fresh = false // the next Healthy computes afresh
	s.mu.Unlock()
}

// Healthy reports whether the score is above the threshold, as computed at
// most Settings.Refresh ago. It is what a fallback transport asks before
// choosing a path.
func (s *Score) Healthy() bool {
	now := s.cfg.Clock.Nanotime()
	s.mu.Lock()
	fresh := s.fresh && now-s.at < int64(s.cfg.Refresh)
	s.mu.Unlock()
	if !fresh {
		s.Report()
	}
	return s.healthy.Load()
}

// Quantile returns the q-quantile (0 < q ≤ 1) of the window's latencies;
// zero with no call in the window. A degrade switch can watch
// Quantile(0.99).
func (s *Score) Quantile(q float64) time.Duration {
	h := s.histogram()
	return s.quantile(h, q)
}

// Report computes the score now, publishes a change between healthy and
// unhealthy, and returns it.
func (s *Score) Report() Report {
	h := s.histogram()
	c := s.outcomes.Sum()
	r := Report{Requests: c[slotCalls], Connected: !s.disconnected.Load(), Latency: 1, Errors: 1, Connection: 1}
	if r.Requests > 0 {
		r.ErrorRate = float64(c[slotFailures]) / float64(r.Requests)
		r.ConnectionErrorRate = float64(c[slotConnFailures]) / float64(r.Requests)
		r.P95 = s.quantile(h, 0.95)
	}
	tu := s.tune.Load()
	if r.Requests >= int64(tu.MinRequests) {
		r.Latency = linear(float64(r.P95), float64(tu.LatencyTarget), float64(tu.LatencyLimit))
		r.Errors = linear(r.ErrorRate, 0, tu.MaxErrorRate)
		r.Connection = linear(r.ConnectionErrorRate, 0, tu.MaxErrorRate)
	}
	if !r.Connected {
		r.Connection = 0
	}
	if sum := s.wl + s.we + s.wc; sum > 0 {
		// Rounded so that 0.4·1 + 0.4·0 + 0.2·1 is 0.6, at the threshold,
		// not 0.6000000000000001, over it.
		r.Score = math.Round((s.wl*r.Latency+s.we*r.Errors+s.wc*r.Connection)/sum*1e9) / 1e9
	} else {
		r.Score = 1
	}
	r.Healthy = tu.Threshold < 0 || r.Score > tu.Threshold

	s.mu.Lock()
	s.fresh, s.at = true, s.cfg.Clock.Nanotime()
	s.last = r
	changed := s.healthy.Load() != r.Healthy
	if changed {
		s.healthy.Store(r.Healthy)
		s.changes.Add(1)
	}
	s.mu.Unlock()
	if changed && s.cfg.OnChange != nil {
		e := Event{Name: s.cfg.Name, Healthy: r.Healthy, Reason: ReasonUnder, Report: r}
		if r.Healthy {
			e.Reason = ReasonRecovered
		}
		s.cfg.OnChange(e)
	}
	return r
}

// linear maps v to 1 at or under good, 0 at or over bad, and a straight
// line between.
func linear(v, good, bad float64) float64 {
	switch {
	case v <= good:
		return 1
	case v >= bad:
		return 0
	}
	return (bad - v) / (bad - good)
}

// histogram returns the window's latency counts by bin.
func (s *Score) histogram() [bins]int64 {
	var h [bins]int64
	for i, w := range s.latencies {
		c := w.Sum()
		for j, n := range c {
			h[i*rolling.Slots+j] = n
		}
	}
	return h
}

// quantile interpolates the q-quantile inside the bin that holds it.
func (s *Score) quantile(h [bins]int64, q float64) time.Duration {
	var n int64
	for _, c := range h {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(min(max(q, 0), 1) * float64(n)))
	rank = max(rank, 1)
	var below int64
	for i, c := range h {
		if below+c < rank {
			below += c
			continue
		}
		if i == bins-1 {
			return time.Duration(s.bounds[bins-2])
		}
		lo := int64(0)
		if i > 0 {
			lo = s.bounds[i-1]
		}
		frac := float64(rank-below) / float64(c)
		return time.Duration(lo + int64(frac*float64(s.bounds[i]-lo)))
	}
	return time.Duration(s.bounds[bins-2])
}

// Snapshot returns the last computed report and the lifetime counters.
func (s *Score) Snapshot() Snapshot {
	s.mu.Lock()
	r := s.last
	s.mu.Unlock()
	return Snapshot{Name: s.cfg.Name, Report: r, Threshold: s.tune.Load().Threshold, Refused: s.refused.Load(), Changes: s.changes.Load()}
}

// Allow implements breakerimpl.Guard: it refuses the call with
// ErrUnhealthy while the dependency is unhealthy, and otherwise admits it
// and times it.
func (s *Score) Allow(context.Context) (breakerimpl.Permit, error) {
	if !s.Healthy() {
		s.refused.Add(1)
		return breakerimpl.Permit{}, ErrUnhealthy
	}
	return breakerimpl.NewPermit(s, 0, s.cfg.Clock.Nanotime()), nil
}

// Done implements breakerimpl.Guard: it records the call's latency and
// error.
func (s *Score) Done(p breakerimpl.Permit, err error) {
	s.Record(time.Duration(s.cfg.Clock.Nanotime()-p.Start()), err)
}
