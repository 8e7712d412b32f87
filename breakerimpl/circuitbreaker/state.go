package circuitbreaker

import (
	"fmt"
	"time"
)

// State is the state of a Breaker.
type State uint8

const (
	// Closed: calls run and their outcomes are counted by the rule.
	Closed State = iota
	// Open: calls are rejected with ErrOpen until the open duration ends.
	Open
	// HalfOpen: up to N probe calls run at a time; M successes close the
	// breaker, one failure opens it again.
	HalfOpen
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Transition says why a breaker changed state.
type Transition string

// The reasons for a change of state.
const (
	// Tripped: the rule saw too many failures in the closed state.
	Tripped Transition = "tripped"
	// OpenElapsed: the open duration ended; probes may run.
	OpenElapsed Transition = "open-elapsed"
	// ProbeFailed: a probe failed in the half-open state.
	ProbeFailed Transition = "probe-failed"
	// ProbesSucceeded: M probes in a row succeeded.
	ProbesSucceeded Transition = "probes-succeeded"
)

// StateChange is published to Settings.OnStateChange on every change of
// state. Counts are those of the state being left, taken at the moment of
// the change, so a listener sees what caused it.
type StateChange struct {
	Name       string
	From, To   State
	Reason     Transition
	Counts     Counts
	At         time.Time // on the breaker's clock
	Generation uint64    // increases by one with every change
}
