// Package contract judges a recorded run against degradation contracts.
//
// A contract names a window of the run (a phase, minus a settle time at its
// start) and expectations that must hold over the requests in that window.
// The evaluator reads a timeline and nothing else: it never starts a process
// or sends a request, so it is tested on hand-made timelines.
package contract

import (
	"fmt"
	"time"
)

// Spec is a contract as a scenario states it.
type Spec struct {
	Name string
	// Phase is the window's phase; Settle skips its first part.
	Phase  string
	Settle time.Duration
	// Expect are the expectations, e.g. `status == 200 for >= 99%`.
	Expect []string
	// MinSamples is the fewest requests a verdict may rest on; 0 means
	// DefaultMinSamples.
	MinSamples int
}

// DefaultMinSamples is the fewest requests a verdict rests on by default.
const DefaultMinSamples = 50

// Outcome is a verdict: pass, fail or inconclusive.
type Outcome string

// The outcomes. A contract is inconclusive when the run cannot tell: too few
// requests in its window, or a fault in its window that never fired.
const (
	Pass         Outcome = "pass"
	Fail         Outcome = "fail"
	Inconclusive Outcome = "inconclusive"
)

// Verdict is the judgement of one contract, with its evidence.
type Verdict struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
	// Window describes the judged window, e.g. "db-timeout +500ms".
	Window  string  `json:"window"`
	Outcome Outcome `json:"verdict"`
	// Measured and Expected are the decisive check's figures: the first
	// failing one, or else the one closest to its threshold.
	Measured string `json:"measured"`
	Expected string `json:"expected"`
	// Samples is the number of requests in the window.
	Samples int `json:"samples"`
	// Reason explains an inconclusive verdict.
	Reason string        `json:"reason,omitempty"`
	Checks []CheckResult `json:"checks"`
}

// CheckResult is the judgement of one expectation.
type CheckResult struct {
	Expect   string  `json:"expect"`
	Outcome  Outcome `json:"verdict"`
	Measured string  `json:"measured"`
	Expected string  `json:"expected"`
	// Samples requests were judged, Matched of them satisfied the predicate.
	Samples int `json:"samples"`
	Matched int `json:"matched"`
	// Margin is how far the measured share is above its threshold, in
	// percentage points (negative when failing).
	Margin float64 `json:"-"`
	// Violations are the first requests that did not satisfy the predicate.
	Violations []Violation `json:"violations,omitempty"`
	Reason     string      `json:"reason,omitempty"`
}

// Violation is one request that broke an expectation.
type Violation struct {
	Time time.Time `json:"time"`
	// Offset is the time since the window opened.
	Offset  time.Duration `json:"offset_ns"`
	Target  string        `json:"target"`
	Status  int           `json:"status"`
	Latency time.Duration `json:"latency_ns"`
	Source  string        `json:"source,omitempty"`
	Error   string        `json:"error,omitempty"`
	// Faults are the faults that were on when the request was sent.
	Faults []string `json:"faults,omitempty"`
}

// MaxViolations is how many violating requests a check keeps as evidence.
const MaxViolations = 5

// ExpectError is a compile error in one expectation of a Spec.
type ExpectError struct {
	Index int
	Err   error
}

func (e *ExpectError) Error() string { return fmt.Sprintf("expect[%d]: %v", e.Index, e.Err) }
func (e *ExpectError) Unwrap() error { return e.Err }
