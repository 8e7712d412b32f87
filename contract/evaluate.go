package contract

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/chaoskit/chaoskit/timeline"
)

// Contract is a compiled Spec, ready to judge timelines.
type Contract struct {
	Spec   Spec
	checks []check
}

// compilations counts the calls of Compile in this process.
var compilations atomic.Int64

// Compilations returns how many times Compile ran in this process: a
// scenario's contracts are compiled once, when it loads, and tests hold
// every command to that.
func Compilations() int64 { return compilations.Load() }

// Compile parses a Spec's expectations. Errors are *ExpectError values
// naming the expectation, wrapping a *SyntaxError.
func Compile(s Spec) (*Contract, error) {
	compilations.Add(1)
	c := &Contract{Spec: s}
	if len(s.Expect) == 0 {
		return nil, fmt.Errorf("contract %q has no expectations", s.Name)
	}
	for i, src := range s.Expect {
		ch, err := compileCheck(src)
		if err != nil {
			return nil, &ExpectError{Index: i, Err: err}
		}
		c.checks = append(c.checks, ch)
	}
	return c, nil
}

// Evaluate judges the contract over the timeline (see Judge).
func (c *Contract) Evaluate(tl *timeline.Timeline) Verdict {
	vs, _, err := Judge(tl, []*Contract{c}, nil)
	if err != nil { // an in-memory timeline reads without error
		return Verdict{Name: c.Spec.Name, Phase: c.Spec.Phase, Window: windowName(&c.Spec), Outcome: Inconclusive, Reason: err.Error(), Measured: "no data"}
	}
	return vs[0]
}

// verdict folds a judged contract's checks into its verdict.
func (j *judged) verdict() Verdict {
	c := j.c
	v := Verdict{Name: c.Spec.Name, Phase: c.Spec.Phase, Window: windowName(&c.Spec)}
	if j.err != nil {
		v.Outcome, v.Reason, v.Measured = Inconclusive, j.err.Error(), "no data"
		return v
	}
	w := j.w
	v.Start, v.End = w.start, w.end
	v.Samples = w.n
	v.Notes = w.overrunNotes()
	for _, a := range j.accs {
		v.Checks = append(v.Checks, a.result())
	}
	minSamples := c.Spec.MinSamples
	if minSamples <= 0 {
		minSamples = defaultMinSamples
	}
	var unfired []string
	for _, f := range w.inWindow {
		if f.Hits != nil && *f.Hits == 0 && !j.unfiredJudged {
			unfired = append(unfired, f.Point)
		}
	}
	short := w.shortfall(j.flight)
	switch {
	case len(unfired) > 0:
		v.Outcome = Inconclusive
		v.Reason = unfiredReason(w.tl.Meta.FaultInjection, unfired, c.Spec.Phase)
	case short != "":
		v.Outcome = Inconclusive
		v.Reason = short
	case v.Samples < minSamples:
		v.Outcome = Inconclusive
		v.Reason = fmt.Sprintf("%d requests in the window, fewer than min_samples %d", v.Samples, minSamples)
	default:
		v.Outcome = Pass
		for _, cr := range v.Checks {
			if cr.Outcome == Fail {
				v.Outcome, v.Reason = Fail, ""
				break
			}
			if cr.Outcome == Inconclusive && v.Outcome == Pass {
				v.Outcome, v.Reason = Inconclusive, cr.Reason
			}
		}
	}
	// Requests the window selects that stopped chains never sent: a pass
	// over the rest is unknown, a fail of the rest stands; either way the
	// verdict says what was lost, in its reason or in a note.
	if lost, why := w.chainLosses(); lost > 0 {
		note := chainNote(lost, why)
		switch v.Outcome {
		case Pass:
			v.Outcome, v.Reason = Inconclusive, note
		case Inconclusive:
			v.Reason += "; " + note
		default:
			v.Notes = append(v.Notes, note)
		}
	}
	if d := v.decisive(); d != nil {
		v.Measured, v.Expected = d.Measured, d.Expected
	}
	return v
}

// unfiredReason explains a fault whose marker never fired in a window. The
// runner asks the target, before the first phase, whether its markers are
// live (timeline.Meta.FaultInjection): when they are, the marker could have
// fired and no request reached it; otherwise the build may be a plain one.
func unfiredReason(live *bool, points []string, phase string) string {
	head := fmt.Sprintf("fault %s was on in %s but its marker never fired", strings.Join(points, ", "), phaseName(phase))
	switch {
	case live != nil && *live:
		return head + "; the build is live (its fault-injection probe fired before the run), so no request reached the marker: the code path was not taken (e.g. the call failed before it, or a cache served every request)"
	case live != nil:
		return head + "; the service said its failpoint markers are inert: it was built without failpoint rewriting"
	}
	return head + "; the service may be built without failpoint rewriting (the run has no record that its markers were live)"
}

// decisive returns the check that decided the verdict: the first failing
// one, else the first inconclusive one, else the one closest to its
// threshold.
func (v *Verdict) decisive() *CheckResult {
	var best, undecided *CheckResult
	for i := range v.Checks {
		c := &v.Checks[i]
		switch {
		case c.Outcome == Fail:
			return c
		case c.Outcome == Inconclusive:
			if undecided == nil {
				undecided = c
			}
		case best == nil || c.Margin < best.Margin:
			best = c
		}
	}
	if undecided != nil {
		return undecided
	}
	return best
}

// Fold folds outcomes into one: fail if any failed, else inconclusive if
// any was, else pass. None at all is inconclusive.
func Fold(outcomes ...Outcome) Outcome {
	if len(outcomes) == 0 {
		return Inconclusive
	}
	out := Pass
	for _, o := range outcomes {
		switch o {
		case Fail:
			return Fail
		case Inconclusive:
			out = Inconclusive
		}
	}
	return out
}

// Overall folds a scenario's verdicts into its own (see Fold); an error
// of its run makes any verdict but fail inconclusive.
func Overall(vs []Verdict, runErr error) Outcome {
	outcomes := make([]Outcome, 0, len(vs)+1)
	for _, v := range vs {
		outcomes = append(outcomes, v.Outcome)
	}
	if runErr != nil {
		outcomes = append(outcomes, Inconclusive)
	}
	return Fold(outcomes...)
}
