package circuitbreaker

import (
	"fmt"
	"strings"
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

// Override is an operator's decision that takes the breaker out of the
// rule's hands: the "degrade switch" used during an incident.
type Override uint8

const (
	// Automatic: the rule and the probes decide the state.
	Automatic Override = iota
	// ForcedOpen: every call is rejected with ErrOpen until released.
	ForcedOpen
	// ForcedClosed: every call runs; outcomes are still counted, but
	// nothing trips and nothing is throttled.
	ForcedClosed
)

// String returns "automatic", "forced-open" or "forced-closed".
func (o Override) String() string {
	switch o {
	case Automatic:
		return "automatic"
	case ForcedOpen:
		return "forced-open"
	case ForcedClosed:
		return "forced-closed"
	}
	return fmt.Sprintf("Override(%d)", uint8(o))
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
	// ProbesTimedOut: the probes of a half-open stay did not decide it
	// within MaxHalfOpenWait.
	ProbesTimedOut Transition = "probes-timed-out"
	// ManualOpen: an operator called Breaker.ForceOpen.
	ManualOpen Transition = "manual-open"
	// ManualClose: an operator called Breaker.ForceClosed.
	ManualClose Transition = "manual-close"
	// ManualResume: an operator called Breaker.ResumeAutomatic.
	ManualResume Transition = "manual-resume"
	// Reconfigured: Update changed the rule in a way that needs fresh
	// counts (another kind of rule, or another window shape).
	Reconfigured Transition = "reconfigured"
)

// StateChange is published to Settings.OnStateChange on every change of
// state or override. Counts are those of the state being left, taken at the
// moment of the change, so a listener sees what caused it.
type StateChange struct {
	Name     string
	From, To State // equal when only the override or the rule's counts changed
	Reason   Transition
	// Detail is the text the operator gave with an override; empty for
	// changes the breaker made itself.
	Detail string
	// Override is the override in force after the change.
	Override Override
	Counts   Counts
	// OpenFor is how long the breaker will stay open before probing, when
	// To is Open and not forced (backoff and jitter included).
	OpenFor    time.Duration
	At         time.Time // on the breaker's clock
	Generation uint64    // increases by one with every change
}

// String describes the change on one line, for logs and %v: the breaker,
// the states, the reason, the counts that caused it and what follows, as
// in
//
//	breaker db: closed -> open (tripped; requests 20, successes 9, failures 11), open for 5s, change 3 at 2024-01-01T00:00:10Z
func (e StateChange) String() string {
	var b strings.Builder
	b.WriteString("breaker")
	if e.Name != "" {
		b.WriteString(" " + e.Name)
	}
	fmt.Fprintf(&b, ": %v -> %v (%s; %v)", e.From, e.To, e.Reason, e.Counts)
	if e.Detail != "" {
		fmt.Fprintf(&b, ", %q", e.Detail)
	}
	if e.Override != Automatic {
		fmt.Fprintf(&b, ", %v", e.Override)
	}
	if e.OpenFor > 0 {
		fmt.Fprintf(&b, ", open for %v", e.OpenFor)
	}
	fmt.Fprintf(&b, ", change %d", e.Generation)
	if !e.At.IsZero() {
		b.WriteString(" at " + e.At.Format(time.RFC3339Nano))
	}
	return b.String()
}

// String lists the counts that are not zero, as "requests 20, successes 9,
// failures 11", or says "no calls".
func (c Counts) String() string {
	var parts []string
	for _, f := range []struct {
		name string
		n    uint64
	}{
		{"requests", c.Requests}, {"successes", c.Successes}, {"failures", c.Failures},
		{"rejected", c.Rejected}, {"consecutive failures", c.ConsecutiveFailures},
	} {
		if f.n != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", f.name, f.n))
		}
	}
	if len(parts) == 0 {
		return "no calls"
	}
	return strings.Join(parts, ", ")
}

// Snapshot is a breaker's state and lifetime counters at one moment, for
// metrics and status pages. The counters only grow.
type Snapshot struct {
	Name  string `json:"name"`
	State State  `json:"state"`
	// Override, with the text the operator gave and when.
	Override       Override  `json:"override"`
	OverrideReason string    `json:"overrideReason,omitempty"`
	OverrideAt     time.Time `json:"overrideAt,omitzero"`
	// Since is when the current state began, on the breaker's clock.
	Since time.Time `json:"since"`
	// RetryAfter is how long an open breaker stays open (zero otherwise, and
	// when forced open).
	RetryAfter time.Duration `json:"retryAfter,omitempty"`
	// Window is the current state's counts (see Breaker.Counts).
	Window Counts `json:"window"`
	// ProbesRunning is how many probe calls are running.
	ProbesRunning int `json:"probesRunning"`

	// Requests is Successes + Failures + Ignored + Rejections: every call
	// that finished or was turned away.
	Requests uint64 `json:"requests"`
	// Successes, Failures and Ignored are the outcomes of admitted calls.
	// Failures include panics and slow calls.
	Successes uint64 `json:"successes"`
	Failures  uint64 `json:"failures"`
	Ignored   uint64 `json:"ignored"`
	// SlowCalls counts calls that returned no error but took longer than
	// SlowCallThreshold (they are also in Failures).
	SlowCalls uint64 `json:"slowCalls"`
	// Rejections counts calls turned away: open, half-open full, throttled.
	Rejections uint64 `json:"rejections"`
	// StateChanges counts published changes (the last Generation).
	StateChanges uint64 `json:"stateChanges"`
}

// MarshalText makes a State encode as its name in JSON.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalText makes an Override encode as its name in JSON.
func (o Override) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText reads a State's name, so that a Snapshot read back from
// JSON (an admin endpoint's answer) has its state.
func (s *State) UnmarshalText(b []byte) error {
	for _, c := range []State{Closed, Open, HalfOpen} {
		if c.String() == string(b) {
			*s = c
			return nil
		}
	}
	return fmt.Errorf("circuitbreaker: unknown state %q (closed, open, half-open)", b)
}

// UnmarshalText reads an Override's name.
func (o *Override) UnmarshalText(b []byte) error {
	for _, c := range []Override{Automatic, ForcedOpen, ForcedClosed} {
		if c.String() == string(b) {
			*o = c
			return nil
		}
	}
	return fmt.Errorf("circuitbreaker: unknown override %q (automatic, forced-open, forced-closed)", b)
}
