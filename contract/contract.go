// Package contract judges a recorded run against degradation contracts.
//
// A contract names a window of the run (a phase, minus a settle time at its
// start, up to a time or only its last part, and only some requests) and
// expectations that must hold in that window: shares of requests that
// satisfy a predicate, aggregates such as latency percentiles and class
// shares, times to degrade and recover, breaker transitions, and the
// integrity of acknowledged writes. docs/contracts.md describes every form.
//
// The evaluator reads a timeline and nothing else: it never starts a process
// or sends a request, so it is tested on hand-made timelines.
package contract

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// Spec is a contract as a scenario states it.
type Spec struct {
	Name string
	// Phase is the window's phase; empty means the whole run. Settle skips
	// the phase's first part. Until ends the window that long after the
	// phase started; Last keeps only the phase's last part (not together
	// with Settle or Until).
	Phase  string
	Settle time.Duration
	Until  time.Duration
	Last   time.Duration
	// Requests restricts the window to some requests.
	Requests Filter
	// Expect are the expectations, e.g. `status == 200 for >= 99%`.
	Expect []string
	// MinSamples is the fewest requests a verdict may rest on; 0 means
	// defaultMinSamples.
	MinSamples int
	// Classify sorts requests into classes; the zero value reads the demo
	// service's headers.
	Classify Classification
}

// Filter selects requests. Empty fields match everything.
type Filter struct {
	// Method is an HTTP method, e.g. GET.
	Method string
	// Path is a glob over the request path (see path.Match): * matches
	// within one segment, so /products/* matches /products/7.
	Path string
	// Tag must be one of the request's tags.
	Tag string
	// Template is the name of the template the request was made from.
	Template string
}

// Match reports whether a request with this method, path, tags and
// template name passes the filter. A malformed Path glob matches nothing
// (validation reports it).
func (f Filter) Match(method, urlPath string, tags []string, template string) bool {
	if f.Template != "" && f.Template != template {
		return false
	}
	if f.Method != "" && !strings.EqualFold(f.Method, method) {
		return false
	}
	if f.Path != "" {
		if i := strings.IndexAny(urlPath, "?#"); i >= 0 {
			urlPath = urlPath[:i]
		}
		if ok, err := path.Match(f.Path, urlPath); err != nil || !ok {
			return false
		}
	}
	return f.Tag == "" || slices.Contains(tags, f.Tag)
}

// IsZero reports whether the filter matches every request.
func (f Filter) IsZero() bool { return f == Filter{} }

func (f Filter) String() string {
	var parts []string
	if f.Method != "" {
		parts = append(parts, strings.ToUpper(f.Method))
	}
	if f.Path != "" {
		parts = append(parts, f.Path)
	}
	if f.Tag != "" {
		parts = append(parts, "#"+f.Tag)
	}
	return strings.Join(parts, " ")
}

// defaultMinSamples is the fewest requests a verdict rests on by default.
const defaultMinSamples = 50

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
	// Window describes the judged window, e.g. "db-timeout +500ms"; Start
	// and End are its bounds.
	Window  string    `json:"window"`
	Start   time.Time `json:"window_start,omitzero"`
	End     time.Time `json:"window_end,omitzero"`
	Outcome Outcome   `json:"verdict"`
	// Measured and Expected are the decisive check's figures: the first
	// failing one, or else the one closest to its threshold.
	Measured string `json:"measured"`
	Expected string `json:"expected"`
	// Samples is the number of requests in the window.
	Samples int `json:"samples"`
	// Reason explains an inconclusive verdict.
	Reason string `json:"reason,omitempty"`
	// Notes say what moved the window without deciding the verdict: a
	// phase of it that ran past its planned length.
	Notes  []string      `json:"notes,omitempty"`
	Checks []CheckResult `json:"checks"`
	// Position is where the scenario writes the contract, for editors and
	// CI annotations; package harness sets it from the scenario.
	Position Position `json:"position,omitzero"`
}

// CheckResult is the judgement of one expectation.
type CheckResult struct {
	Expect   string  `json:"expect"`
	Outcome  Outcome `json:"verdict"`
	Measured string  `json:"measured"`
	Expected string  `json:"expected"`
	// Samples requests (or state samples, or writes) were judged; Matched
	// of them satisfied a quantified predicate.
	Samples int `json:"samples"`
	Matched int `json:"matched"`
	// Margin is how far the measurement is on the good side of its
	// threshold, in percent (negative when failing).
	Margin float64 `json:"-"`
	// Violations are the first requests that did not satisfy the predicate.
	Violations []Violation `json:"violations,omitempty"`
	Reason     string      `json:"reason,omitempty"`
	// Writes are the fates of the window's acknowledged writes, for
	// lost_writes.
	Writes *WriteCounts `json:"writes,omitempty"`
	// Verified are the outcomes of the verification requests sent for
	// the window's requests, for violated_verifications.
	Verified *VerifyCounts `json:"verified,omitempty"`
	// Value is the check's figure as a number, when it measures one: a
	// duration in seconds, a share in percent, a count, or a plain number
	// (a probe's, a metric expression's). Unit says which (UnitSeconds,
	// UnitPercent, UnitCount, or empty), Worse which way of it the
	// threshold forbids: "higher" for < and <=, "lower" for > and >=,
	// empty for == and !=. Builds are compared on it (package diff).
	Value *float64 `json:"value,omitempty"`
	Unit  string   `json:"unit,omitempty"`
	Worse string   `json:"worse,omitempty"`
}

// The units of CheckResult.Value.
const (
	UnitSeconds = "s"
	UnitPercent = "%"
	UnitCount   = "count"
)

// measured sets the check's figure: got against want by op gives Margin;
// Value is got in unit (a duration in nanoseconds is given as unitNanos
// and kept in seconds).
func (r *CheckResult) measured(got float64, op string, want float64, unit string) {
	r.Margin = margin(got, op, want)
	v := got
	if unit == unitNanos {
		v, unit = got/1e9, UnitSeconds
	}
	r.Value, r.Unit = &v, unit
	switch op {
	case "<", "<=":
		r.Worse = "higher"
	case ">", ">=":
		r.Worse = "lower"
	default:
		r.Worse = ""
	}
}

// unitNanos marks a figure given to measured in nanoseconds.
const unitNanos = "ns"

// Violation is one request that broke an expectation.
type Violation struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// Offset is the time since the window opened.
	Offset  time.Duration `json:"offset_ns"`
	Target  string        `json:"target"`
	Status  int           `json:"status"`
	Latency time.Duration `json:"latency_ns"`
	Class   Class         `json:"class,omitempty"`
	Source  string        `json:"source,omitempty"`
	Error   string        `json:"error,omitempty"`
	// Faults are the faults that were on when the request was sent.
	Faults []string `json:"faults,omitempty"`
	// Detail says what was wrong when the status does not: a lost write's
	// read-back, a stale copy's age.
	Detail string `json:"detail,omitempty"`
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
