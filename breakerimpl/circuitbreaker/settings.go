package circuitbreaker

import (
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// Settings configures a Breaker. The zero value is a usable breaker: an
// error-rate rule with hystrix's defaults, a 5 s open duration, one probe.
//
// Name names the breaker in events, logs and metrics. It may be empty.
//
// Rule decides when the closed breaker trips. Nil means ErrorRate{} (10
// buckets of 1 s, at least 20 requests, 50 % failures). The other rule is
// ConsecutiveFailures. The rule's counts start afresh each time the breaker
// closes.
//
// OpenDuration is how long the breaker stays open before it lets probes
// through (hystrix's sleep window, gobreaker's Timeout). Zero or less means
// 5 s. The breaker moves to half-open on the first call (or State read)
// after the duration, not on a timer.
//
// HalfOpenProbes is N, how many probe calls the half-open breaker lets run
// at the same time. Callers beyond N are rejected at once with
// ErrHalfOpenFull, never queued. Zero or less means 1 (hystrix's single
// probe). Values above 32767 are cut to 32767.
//
// HalfOpenSuccesses is M, how many successful probes in a row close the
// breaker. Any probe failure opens it again for another OpenDuration.
// Ignored probe outcomes count neither way. Zero or less means 1.
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
// OnStateChange is called with every change of state, after the change and
// in order, while the breaker holds its transition lock: it must not call
// Allow, Done or Execute of the same breaker, and should hand slow work to
// another goroutine. Nil means no one is told.
//
// Clock is the time source. Nil means clock.Default(), a coarse clock whose
// reading costs an atomic load; tests pass a *clock.Fake.
type Settings struct {
	Name              string
	Rule              Rule
	OpenDuration      time.Duration
	HalfOpenProbes    int
	HalfOpenSuccesses int
	SlowCallThreshold time.Duration
	Classify          breakerimpl.Classifier
	OnStateChange     func(StateChange)
	Clock             clock.Clock
}

// DefaultOpenDuration is the OpenDuration used when Settings leaves it zero.
const DefaultOpenDuration = 5 * time.Second

const maxProbes = 1<<15 - 1

// withDefaults returns s with every zero field replaced by its default.
func (s Settings) withDefaults() Settings {
	if s.Rule == nil {
		s.Rule = ErrorRate{}
	}
	if s.OpenDuration <= 0 {
		s.OpenDuration = DefaultOpenDuration
	}
	s.HalfOpenProbes = min(max(s.HalfOpenProbes, 1), maxProbes)
	s.HalfOpenSuccesses = min(max(s.HalfOpenSuccesses, 1), maxProbes)
	s.SlowCallThreshold = max(s.SlowCallThreshold, 0)
	if s.Classify == nil {
		s.Classify = breakerimpl.DefaultClassifier
	}
	if s.Clock == nil {
		s.Clock = clock.Default()
	}
	return s
}
