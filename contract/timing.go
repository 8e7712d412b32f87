package contract

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// A class "holds" from the first request that starts a run of HoldRun
// consecutive requests (in send order) of which at least HoldShare percent
// are of that class. One stray request does not end a degradation, and one
// lucky request does not make a recovery.
const (
	HoldRun   = 10
	HoldShare = 90
)

// timeCheck is `time_to_degrade < 1s` (from the fault's start until the
// fallback class holds) or `time_to_recover < 6s` (from the fault's end
// until the primary class holds again). Classes in parentheses replace the
// default: time_to_degrade("fallback", "rejected").
type timeCheck struct {
	src      string
	recover  bool
	classes  []Class
	op       string
	want     time.Duration
	wantText string
}

func (c *timeCheck) name() string {
	if c.recover {
		return "time_to_recover"
	}
	return "time_to_degrade"
}

func (c *timeCheck) evaluate(w *window) CheckResult {
	res := CheckResult{Expect: c.src, Expected: c.op + " " + c.wantText}
	f, ok := w.referenceFault()
	if !ok {
		return inconclusive(res, fmt.Sprintf("%s needs a fault switched on in or before %s, and none was", c.name(), phaseName(w.spec.Phase)))
	}
	classes := c.classes
	from, until := f.On, f.Off
	if c.recover {
		if classes == nil {
			classes = []Class{Primary}
		}
		if f.Off.IsZero() {
			return inconclusive(res, fmt.Sprintf("fault %s was never switched off", f.Point))
		}
		from, until = f.Off, time.Time{}
		for _, g := range w.faults {
			if g.On.After(f.Off) && (until.IsZero() || g.On.Before(until)) {
				until = g.On
			}
		}
	} else if classes == nil {
		classes = []Class{Fallback}
	}
	if until.IsZero() {
		if span, ok := runSpan(w.tl); ok {
			until = span.End
		}
	}
	var reqs []timeline.Request
	for i := range w.tl.Requests {
		r := &w.tl.Requests[i]
		if !r.Time.Before(from) && !r.Time.After(until) && w.selects(r) {
			reqs = append(reqs, *r)
		}
	}
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].Time.Before(reqs[j].Time) })
	res.Samples = len(reqs)
	in := make([]bool, len(reqs))
	for i := range reqs {
		cl, _ := w.spec.Classify.Classify(&reqs[i])
		in[i] = slices.Contains(classes, cl)
	}
	at := holdsFrom(in)
	names := classNames(classes)
	if at < 0 {
		res.Outcome = Fail
		res.Measured = fmt.Sprintf("never (%s did not hold in %d requests over %s)", names, len(reqs), fmtDur(until.Sub(from)))
		res.Margin = -100
		c.evidence(w, &res, reqs, in, len(reqs))
		if len(reqs) < HoldRun {
			res.Outcome = Inconclusive
			res.Reason = fmt.Sprintf("%d requests after the fault %s; %s needs at least %d", len(reqs), map[bool]string{true: "ended", false: "started"}[c.recover], c.name(), HoldRun)
		}
		return res
	}
	got := reqs[at].Time.Sub(from)
	res.Measured = fmtDur(got)
	res.Margin = margin(float64(got), c.op, float64(c.want))
	res.Outcome = outcome(compare(float64(got), c.op, float64(c.want)))
	if res.Outcome == Fail {
		c.evidence(w, &res, reqs, in, at)
	}
	return res
}

// evidence lists the first requests, before n, that were not of the class.
func (c *timeCheck) evidence(w *window, res *CheckResult, reqs []timeline.Request, in []bool, n int) {
	for i := 0; i < n && len(res.Violations) < MaxViolations; i++ {
		if !in[i] {
			cl, src := w.spec.Classify.Classify(&reqs[i])
			res.Violations = append(res.Violations, w.requestViolation(&reqs[i], cl, src))
		}
	}
}

// holdsFrom returns the index of the first request that starts a run of
// HoldRun requests with at least HoldShare percent in the class, or -1.
func holdsFrom(in []bool) int {
	if len(in) < HoldRun {
		return -1
	}
	n := 0
	for i := 0; i < HoldRun; i++ {
		if in[i] {
			n++
		}
	}
	need := (HoldShare*HoldRun + 99) / 100
	for i := 0; ; i++ {
		if n >= need && in[i] {
			return i
		}
		if i+HoldRun >= len(in) {
			return -1
		}
		if in[i] {
			n--
		}
		if in[i+HoldRun] {
			n++
		}
	}
}

func classNames(cs []Class) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, "+")
}

func inconclusive(res CheckResult, reason string) CheckResult {
	res.Outcome, res.Reason = Inconclusive, reason
	if res.Measured == "" {
		res.Measured = "no data"
	}
	return res
}

// breakerCheck is `breaker("db") opens within 1s` (after the fault's
// start) or `breaker("db") closes within 8s after fault` (after its end),
// judged on the sampled state of the target. A close is a transition: the
// breaker must be seen open or half-open, at the fault's end or after it,
// before the sample that shows it closed. A breaker that never opened (no
// breaker at all, a rule that never trips) has not closed.
type breakerCheck struct {
	src      string
	name     string
	opens    bool
	want     time.Duration
	wantText string
}

// BreakerState returns the state of the named breaker in a state sample:
// Data["breakers"][name]["state"] (or Data["breakers"][name] when that is
// a string), normalised to closed, open or half-open.
func BreakerState(data map[string]any, name string) (string, bool) {
	bs, ok := data["breakers"].(map[string]any)
	if !ok {
		return "", false
	}
	var s string
	switch b := bs[name].(type) {
	case string:
		s = b
	case map[string]any:
		s, ok = b["state"].(string)
		if !ok {
			return "", false
		}
	default:
		return "", false
	}
	s = strings.ReplaceAll(strings.ToLower(s), "_", "-")
	if s == "halfopen" {
		s = "half-open"
	}
	return s, true
}

// StateSample is one sampled state of one breaker.
type StateSample struct {
	Time  time.Time
	State string
}

// BreakerSamples returns the sampled states of the named breaker, in time
// order: from the state endpoint's samples, or, when they hold none of
// it, from the metric samples of NAMESPACE_circuit_breaker_state{breaker,
// state}.
func BreakerSamples(tl *timeline.Timeline, name string) []StateSample {
	var out []StateSample
	for _, e := range tl.Events {
		if e.Kind != timeline.State {
			continue
		}
		if s, ok := BreakerState(e.Data, name); ok {
			out = append(out, StateSample{e.Time, s})
		}
	}
	if len(out) == 0 { // no state endpoint: the breaker's state metric
		out = metricBreakerSamples(tl, name)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

func (c *breakerCheck) evaluate(w *window) CheckResult {
	res := CheckResult{Expect: c.src, Expected: "within " + c.wantText}
	samples := BreakerSamples(w.tl, c.name)
	if len(samples) == 0 {
		return inconclusive(res, fmt.Sprintf("the timeline holds no state samples of breaker %q; the target must serve its state endpoint", c.name))
	}
	f, ok := w.referenceFault()
	if !ok {
		return inconclusive(res, fmt.Sprintf("breaker transitions are timed from a fault, and none was switched on in or before %s", phaseName(w.spec.Phase)))
	}
	from, want, event := f.On, "open", "fault start"
	if !c.opens {
		from, want, event = f.Off, "closed", "fault end"
		if f.Off.IsZero() {
			return inconclusive(res, fmt.Sprintf("fault %s was never switched off", f.Point))
		}
	}
	// A close needs the breaker open first: in its last sample before the
	// fault's end, or in one after.
	wasOpen := false
	n := 0
	for _, s := range samples {
		if s.Time.Before(from) {
			wasOpen = s.State != "closed"
			continue
		}
		n++
		if s.State != "closed" {
			wasOpen = true
		}
		if s.State == want && (c.opens || wasOpen) {
			got := s.Time.Sub(from)
			res.Samples = n
			res.Measured = fmt.Sprintf("%s %s after %s", want, fmtDur(got), event)
			res.Margin = margin(float64(got), "<=", float64(c.want))
			res.Outcome = outcome(got <= c.want)
			return res
		}
	}
	res.Samples = n
	res.Outcome, res.Margin = Fail, -100
	res.Measured = fmt.Sprintf("never %s in %d samples after %s", want, n, event)
	if !c.opens && !wasOpen {
		res.Measured = fmt.Sprintf("never open, so never closed: closed at %s and in all %d samples after it", event, n)
	}
	if n == 0 {
		return inconclusive(res, fmt.Sprintf("no state sample of breaker %q after the %s", c.name, event))
	}
	return res
}
