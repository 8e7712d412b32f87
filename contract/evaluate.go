package contract

import (
	"fmt"

	"sort"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// Contract is a compiled Spec, ready to judge timelines.
type Contract struct {
	Spec   Spec
	checks []*check
}

// Compile parses a Spec's expectations. Errors are *ExpectError values
// naming the expectation, wrapping a *SyntaxError.
func Compile(s Spec) (*Contract, error) {
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

// Evaluate judges the contract over the timeline.
func (c *Contract) Evaluate(tl *timeline.Timeline) Verdict {
	v := Verdict{Name: c.Spec.Name, Phase: c.Spec.Phase, Window: c.Spec.Phase}
	if c.Spec.Settle > 0 {
		v.Window += " +" + c.Spec.Settle.String()
	}
	w, err := newWindow(tl, c.Spec)
	if err != nil {
		v.Outcome, v.Reason, v.Measured = Inconclusive, err.Error(), "no data"
		return v
	}
	reqs := w.requests()
	v.Samples = len(reqs)
	for _, ch := range c.checks {
		v.Checks = append(v.Checks, ch.evaluate(reqs, w))
	}
	minSamples := c.Spec.MinSamples
	if minSamples <= 0 {
		minSamples = DefaultMinSamples
	}
	var unfired []string
	for _, f := range w.faults {
		if f.hits != nil && *f.hits == 0 {
			unfired = append(unfired, f.point)
		}
	}
	switch {
	case len(unfired) > 0:
		v.Outcome = Inconclusive
		v.Reason = fmt.Sprintf("fault %s was on in %s but its marker never fired; the service may be built without failpoint rewriting", strings.Join(unfired, ", "), c.Spec.Phase)
	case v.Samples < minSamples:
		v.Outcome = Inconclusive
		v.Reason = fmt.Sprintf("%d requests in the window, fewer than min_samples %d", v.Samples, minSamples)
	default:
		v.Outcome = Pass
		for _, cr := range v.Checks {
			if cr.Outcome == Fail {
				v.Outcome = Fail
				break
			}
		}
	}
	decisive := v.decisive()
	if decisive != nil {
		v.Measured, v.Expected = decisive.Measured, decisive.Expected
	}
	return v
}

// decisive returns the check that decided the verdict: the first failing
// one, else the one closest to its threshold.
func (v *Verdict) decisive() *CheckResult {
	var best *CheckResult
	for i := range v.Checks {
		c := &v.Checks[i]
		if c.Outcome == Fail {
			return c
		}
		if best == nil || c.Margin < best.Margin {
			best = c
		}
	}
	return best
}

// Evaluate judges every contract over the timeline, in order.
func Evaluate(contracts []*Contract, tl *timeline.Timeline) []Verdict {
	out := make([]Verdict, len(contracts))
	for i, c := range contracts {
		out[i] = c.Evaluate(tl)
	}
	return out
}

// Overall folds verdicts into one: fail if any failed, else inconclusive if
// any was, else pass. No verdicts at all is inconclusive.
func Overall(vs []Verdict) Outcome {
	if len(vs) == 0 {
		return Inconclusive
	}
	out := Pass
	for _, v := range vs {
		switch v.Outcome {
		case Fail:
			return Fail
		case Inconclusive:
			out = Inconclusive
		}
	}
	return out
}

// window is the part of a timeline one contract judges.
type window struct {
	tl        *timeline.Timeline
	start     time.Time
	end       time.Time
	phase     string
	faults    []faultSpan
	baselines map[string]map[string]string
}

type faultSpan struct {
	point    string
	on, off  time.Time
	hits     *int64
	phaseHit string
}

func newWindow(tl *timeline.Timeline, s Spec) (*window, error) {
	ph, ok := tl.Phase(s.Phase)
	if !ok {
		return nil, fmt.Errorf("phase %q did not run", s.Phase)
	}
	w := &window{tl: tl, start: ph.Start.Add(s.Settle), end: ph.End, phase: s.Phase}
	if !w.start.Before(w.end) {
		return nil, fmt.Errorf("settle %v leaves nothing of phase %q (%v long)", s.Settle, s.Phase, ph.End.Sub(ph.Start).Round(time.Millisecond))
	}
	w.faults = faultSpans(tl)
	// Only faults overlapping this phase matter for "never fired".
	kept := w.faults[:0]
	for _, f := range w.faults {
		if f.phaseHit == s.Phase || (f.on.Before(ph.End) && (f.off.IsZero() || f.off.After(ph.Start))) {
			kept = append(kept, f)
		}
	}
	w.faults = kept
	return w, nil
}

// faultSpans pairs fault_on and fault_off events, with the hits recorded for
// each.
func faultSpans(tl *timeline.Timeline) []faultSpan {
	var spans []faultSpan
	open := map[string]int{}
	for _, e := range tl.Events {
		switch e.Kind {
		case timeline.FaultOn:
			open[e.Point] = len(spans)
			spans = append(spans, faultSpan{point: e.Point, on: e.Time, phaseHit: e.Phase})
		case timeline.FaultOff:
			if i, ok := open[e.Point]; ok {
				spans[i].off = e.Time
				delete(open, e.Point)
			}
		case timeline.FaultHits:
			for i := len(spans) - 1; i >= 0; i-- {
				if spans[i].point == e.Point && spans[i].hits == nil {
					spans[i].hits = e.Hits
					break
				}
			}
		}
	}
	return spans
}

// requests returns the requests sent inside the window.
func (w *window) requests() []timeline.Request {
	var out []timeline.Request
	for _, r := range w.tl.Requests {
		if r.Phase == w.phase && !r.Time.Before(w.start) && !r.Time.After(w.end) {
			out = append(out, r)
		}
	}
	return out
}

// baseline returns the body target last got with a 2xx status in phase.
func (w *window) baseline(phase, target string) any {
	if w.baselines == nil {
		w.baselines = map[string]map[string]string{}
	}
	m, ok := w.baselines[phase]
	if !ok {
		m = map[string]string{}
		for _, r := range w.tl.Requests {
			if r.Phase == phase && r.Status/100 == 2 && r.BodySize <= timeline.MaxBody {
				m[r.Target] = r.Body
			}
		}
		w.baselines[phase] = m
	}
	b, ok := m[target]
	if !ok {
		return nil
	}
	return b
}

func (w *window) violation(r *timeline.Request) Violation {
	v := Violation{Time: r.Time, Offset: r.Time.Sub(w.start), Target: r.Target, Status: r.Status, Latency: r.Latency,
		Source: r.Header("X-Chaoskit-Source"), Error: r.Error}
	for _, f := range w.faults {
		if !r.Time.Before(f.on) && (f.off.IsZero() || r.Time.Before(f.off)) {
			v.Faults = append(v.Faults, f.point)
		}
	}
	sort.Strings(v.Faults)
	return v
}
