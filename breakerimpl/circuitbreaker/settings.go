package circuitbreaker

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// Settings configures a Breaker. The zero value is a usable breaker: an
// error-rate rule with hystrix's defaults, a 5 s open duration, one probe.
// Every field but Name and Clock can be changed at run time with
// Breaker.Update.
//
// Name names the breaker in events, logs and metrics. It may be empty.
//
// Rule decides when the closed breaker trips. Nil means ErrorRate{} (10
// buckets of 1 s, at least 20 requests, 50 % failures). The others are
// ConsecutiveFailures and Adaptive (client-side throttling, which never
// opens). The rule's counts start afresh each time the breaker closes.
//
// OpenDuration is how long the breaker stays open before it lets probes
// through (hystrix's sleep window, gobreaker's Timeout). Zero or less means
// DefaultOpenDuration. The breaker moves to half-open on the first call (or
// State read) after the duration, not on a timer.
//
// MaxOpenDuration turns on exponential backoff for a dependency that keeps
// failing: each time a probe fails, the next open duration is
// OpenBackoffFactor times the last one, up to MaxOpenDuration; it falls back
// to OpenDuration once the breaker closes. Zero, or a value not above
// OpenDuration, means every open lasts OpenDuration. OpenBackoffFactor of 1
// or less means 2.
//
// OpenJitter spreads open durations so that a fleet of clients whose
// breakers opened together does not probe together: each duration is
// multiplied by a random factor in [1 − OpenJitter, 1 + OpenJitter], then
// cut to MaxOpenDuration if that is set. Zero means no jitter; it is
// clamped to [0, 1].
//
// HalfOpenProbes is N, how many probe calls the half-open breaker lets run
// at the same time. Callers beyond N are rejected at once with
// ErrHalfOpenFull, never queued. Zero or less means 1 (hystrix's single
// probe). Values above 32767 are cut to 32767.
//
// HalfOpenSuccesses is M, how many successful probes in a row close the
// breaker. Any probe failure opens it again. Ignored probe outcomes count
// neither way. Zero or less means 1.
//
// MaxHalfOpenWait bounds a half-open stay, as resilience4j's
// maxWaitDurationInHalfOpenState does: if the probes have neither closed
// nor reopened the breaker that long after it became half-open (a probe
// hangs, or too few calls come to make M probes), it opens again as if a
// probe had failed, backoff included, and the probes still running give
// up their slots, so that the next half-open stay can probe afresh (what
// such a late probe returns counts in the lifetime counters only). Like
// the end of an open duration, the end of the wait is noticed by the next
// call or State read. Set it above the time a healthy call takes. Zero or
// less means DefaultMaxHalfOpenWait.
//
// SlowCallThreshold makes a call that takes longer than it a failure even if
// it returned no error, so a dependency that hangs trips the breaker before
// callers pile up. Zero or less turns slow-call detection off. Latency is
// measured on Clock, so with the default coarse clock it is accurate to about
// a millisecond.
//
// Classify decides success, failure or ignored for a call's non-nil error.
// A nil error is always a success and a panic always a failure. Nil means
// breakerimpl.DefaultClassifier: context.Canceled is ignored, every other
// error is a failure.
//
// OnStateChange is called with every change of state and of override,
// after the change and in order, while the breaker holds its transition
// lock: it must not call methods of the same breaker other than Name,
// Counts and RetryAfter, and should hand slow work to another goroutine.
// Nil means no one is told. LogStateChanges makes one that logs through
// log/slog.
//
// Rand returns uniform numbers in [0, 1) for the adaptive throttle and for
// OpenJitter. Nil means math/rand/v2's Float64. It is called concurrently
// unless the breaker is used from one goroutine, as tests with a seeded
// source do.
//
// Clock is the time source. Nil means clock.Default(), a coarse clock whose
// reading costs an atomic load; tests pass a *clock.Fake. With a rolling
// window (ErrorRate, Adaptive) the breaker also sets a timer on it for the
// end of the window's live bucket, while calls succeed, so that a success
// need not read the clock; an idle breaker keeps none past the end of its
// live bucket.
type Settings struct {
	Name              string
	Rule              Rule
	OpenDuration      time.Duration
	MaxOpenDuration   time.Duration
	OpenBackoffFactor float64
	OpenJitter        float64
	HalfOpenProbes    int
	HalfOpenSuccesses int
	MaxHalfOpenWait   time.Duration
	SlowCallThreshold time.Duration
	Classify          breakerimpl.Classifier
	OnStateChange     func(StateChange)
	Rand              func() float64
	Clock             clock.Clock
}

// Defaults of the Settings fields left zero.
const (
	// DefaultOpenDuration is hystrix's sleep window.
	DefaultOpenDuration = 5 * time.Second
	// DefaultMaxHalfOpenWait is longer than a healthy call takes behind
	// most timeouts, and short enough that a hung probe costs a
	// dependency half a minute of probing, not forever.
	DefaultMaxHalfOpenWait = 30 * time.Second
)

const maxProbes = 1<<15 - 1

// withDefaults returns s with every zero field replaced by its default.
func (s Settings) withDefaults() Settings {
	if s.Rule == nil {
		s.Rule = ErrorRate{}
	}
	if s.OpenDuration <= 0 {
		s.OpenDuration = DefaultOpenDuration
	}
	s.MaxOpenDuration = max(s.MaxOpenDuration, 0)
	if !(s.OpenBackoffFactor > 1) || math.IsInf(s.OpenBackoffFactor, 0) {
		s.OpenBackoffFactor = 2
	}
	if !(s.OpenJitter > 0) {
		s.OpenJitter = 0
	}
	s.OpenJitter = min(s.OpenJitter, 1)
	s.HalfOpenProbes = min(max(s.HalfOpenProbes, 1), maxProbes)
	s.HalfOpenSuccesses = min(max(s.HalfOpenSuccesses, 1), maxProbes)
	if s.MaxHalfOpenWait <= 0 {
		s.MaxHalfOpenWait = DefaultMaxHalfOpenWait
	}
	s.SlowCallThreshold = max(s.SlowCallThreshold, 0)
	if s.Classify == nil {
		s.Classify = breakerimpl.DefaultClassifier
	}
	if s.Rand == nil {
		s.Rand = rand.Float64
	}
	if s.Clock == nil {
		s.Clock = clock.Default()
	}
	return s
}

// openDuration returns how long the breaker stays open after streak
// earlier openings in a row (0 for the first), with backoff and jitter.
func (s *Settings) openDuration(streak int) time.Duration {
	d := float64(s.OpenDuration)
	backoff := s.MaxOpenDuration > s.OpenDuration
	if backoff {
		d = min(d*math.Pow(s.OpenBackoffFactor, float64(streak)), float64(s.MaxOpenDuration))
	}
	if s.OpenJitter > 0 {
		d *= 1 + s.OpenJitter*(2*s.Rand()-1)
	}
	if backoff {
		d = min(d, float64(s.MaxOpenDuration))
	}
	return time.Duration(max(d, 1))
}
