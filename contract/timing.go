package contract

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// A class "holds" from the first request that starts a run of holdRun
// consecutive requests (in send order) of which at least HoldShare percent
// are of that class. One stray request does not end a degradation, and one
// lucky request does not make a recovery.
const (
	holdRun   = 10
	HoldShare = 90
)

// degradeClasses are the classes time_to_degrade waits for when it names
// none, and the classes a fault's bill times its degradation by.
var degradeClasses = []Class{Fallback}

// holdRule finds, in send order, the first request that starts a run of
// holdRun requests of which at least HoldShare percent are in the class:
// the one rule of time_to_degrade, time_to_recover and a bill's times.
// It keeps the last holdRun answers only.
type holdRule struct {
	ring [holdRun]bool
	seen int
	in   int // how many of the ring are in the class
}

// next takes the next request in send order, in saying whether it is in
// the class. Once the run that starts at request start (counted from 0)
// holds, it returns start and true.
func (h *holdRule) next(in bool) (start int, holds bool) {
	i := h.seen % holdRun
	if h.seen >= holdRun && h.ring[i] {
		h.in--
	}
	h.ring[i] = in
	if in {
		h.in++
	}
	h.seen++
	if h.seen < holdRun {
		return 0, false
	}
	start = h.seen - holdRun
	need := (HoldShare*holdRun + 99) / 100
	return start, h.ring[start%holdRun] && h.in >= need
}

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

// reorderWindow is how many requests a time check holds to put them in
// send order: the record is in the order responses completed, and a
// request overtaken by more than this many others is placed where it
// completed. At 10,000 requests a second that is 6.5 s of slow responses.
const reorderWindow = 1 << 16

// timeAcc finds, in send order, the first request that starts a run of
// holdRun requests mostly of the classes: a bounded queue puts the
// requests in send order, a ring of holdRun judges each run.
type timeAcc struct {
	c       *timeCheck
	w       *window
	res     CheckResult
	classes []Class
	from    time.Time
	until   time.Time
	pending sentQueue
	ring    [holdRun]sentReq // the last requests, to name the one a run starts at
	hold    holdRule
	seen    int // requests taken out of the heap
	found   bool
	at      sentReq
	viol    []Violation
	violAt  []int // the send-order index of each violation
	// skip is the reason the check cannot be judged, known before the pass.
	skip string
}

// sentReq is what a time check keeps of one request: enough to make its
// violation, should it be one of the first.
type sentReq struct {
	t       time.Time
	in      bool
	seq     uint64
	target  string
	status  int
	latency time.Duration
	class   Class
	source  string
	err     string
}

func (s *sentReq) violation(w *window) Violation {
	return Violation{Seq: s.seq, Time: s.t, Offset: s.t.Sub(w.start), Target: s.target, Status: s.status,
		Latency: s.latency, Class: s.class, Source: s.source, Error: s.err, Faults: faultsAt(w.faults, s.t)}
}

// sentQueue holds requests sorted by send time (stream order for ties),
// the earliest at head. The record comes nearly in send order (it is in
// completion order), so a request is inserted a few places from the back
// at most.
type sentQueue struct {
	buf  []sentReq
	head int
}

func (q *sentQueue) len() int { return len(q.buf) - q.head }

func (q *sentQueue) push(s sentReq) {
	q.buf = append(q.buf, s)
	for i := len(q.buf) - 1; i > q.head && q.buf[i].t.Before(q.buf[i-1].t); i-- {
		q.buf[i], q.buf[i-1] = q.buf[i-1], q.buf[i]
	}
}

func (q *sentQueue) pop() sentReq {
	s := q.buf[q.head]
	q.head++
	if q.head >= 4096 && q.head*2 >= len(q.buf) {
		n := copy(q.buf, q.buf[q.head:])
		q.buf, q.head = q.buf[:n], 0
	}
	return s
}

func (c *timeCheck) start(w *window) acc {
	a := &timeAcc{c: c, w: w, res: CheckResult{Expect: c.src, Expected: c.op + " " + c.wantText}}
	f, ok := w.referenceFault()
	if !ok {
		a.skip = fmt.Sprintf("%s needs a fault switched on in or before %s, and none was", c.name(), phaseName(w.spec.Phase))
		return a
	}
	a.classes = c.classes
	a.from, a.until = f.On, f.Off
	if c.recover {
		if a.classes == nil {
			a.classes = []Class{Primary}
		}
		if f.Off.IsZero() {
			a.skip = fmt.Sprintf("fault %s was never switched off", f.Point)
			return a
		}
		a.from, a.until = f.Off, time.Time{}
		for _, g := range w.faults {
			if g.On.After(f.Off) && (a.until.IsZero() || g.On.Before(a.until)) {
				a.until = g.On
			}
		}
	} else if a.classes == nil {
		a.classes = degradeClasses
	}
	if a.until.IsZero() {
		if span, ok := runSpan(w.tl); ok {
			a.until = span.End
		}
	}
	return a
}

func (a *timeAcc) add(r *timeline.Request, _ bool, _ *classed) {
	if a.skip != "" || r.Time.Before(a.from) || r.Time.After(a.until) || !a.w.selects(r) {
		return
	}
	if a.found {
		// Decided: the rest only counts.
		a.res.Samples++
		return
	}
	// The window's classification, even for requests outside the window:
	// the time runs from the fault, whatever the window.
	cl, src := a.w.spec.Classify.Classify(r)
	s := sentReq{t: r.Time, in: slices.Contains(a.classes, cl), seq: r.Seq, target: r.Target, status: r.Status,
		latency: r.Latency, class: cl, source: src, err: r.Error}
	a.res.Samples++
	a.pending.push(s)
	if a.pending.len() > reorderWindow {
		a.next(a.pending.pop())
	}
}

// next takes the next request in send order.
func (a *timeAcc) next(s sentReq) {
	if a.found {
		return
	}
	if !s.in && len(a.viol) < MaxViolations {
		a.viol = append(a.viol, s.violation(a.w))
		a.violAt = append(a.violAt, a.seen)
	}
	a.ring[a.seen%holdRun] = s
	a.seen++
	if start, ok := a.hold.next(s.in); ok {
		a.found, a.at = true, a.ring[start%holdRun]
		// The evidence is what came before the run that holds.
		for len(a.violAt) > 0 && a.violAt[len(a.violAt)-1] >= a.seen-holdRun {
			a.viol, a.violAt = a.viol[:len(a.viol)-1], a.violAt[:len(a.violAt)-1]
		}
	}
}

func (a *timeAcc) result() CheckResult {
	c, res := a.c, a.res
	if a.skip != "" {
		return inconclusive(res, a.skip)
	}
	for a.pending.len() > 0 {
		a.next(a.pending.pop())
	}
	names := classNames(a.classes)
	if !a.found {
		res.Outcome = Fail
		res.Measured = fmt.Sprintf("never (%s did not hold in %d requests over %s)", names, res.Samples, fmtDur(a.until.Sub(a.from)))
		res.Margin = -100
		res.Violations = a.viol
		if res.Samples < holdRun {
			res.Outcome = Inconclusive
			res.Reason = fmt.Sprintf("%d requests after the fault %s; %s needs at least %d", res.Samples, map[bool]string{true: "ended", false: "started"}[c.recover], c.name(), holdRun)
		}
		return res
	}
	got := a.at.t.Sub(a.from)
	res.Measured = fmtDur(got)
	res.measured(float64(got), c.op, float64(c.want), unitNanos)
	res.Outcome = outcome(compare(float64(got), c.op, float64(c.want)))
	if res.Outcome == Fail {
		res.Violations = a.viol
	}
	return res
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

// breakerState returns the state of the named breaker in a state sample:
// Data["breakers"][name]["state"] (or Data["breakers"][name] when that is
// a string), normalised to closed, open or half-open.
func breakerState(data map[string]any, name string) (string, bool) {
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

// BreakerNames returns the breakers a run's samples state, sorted, and
// where they were read: "state samples", or failing those "metric
// samples" (the target's *_circuit_breaker_state metric); none when
// neither states any.
func BreakerNames(tl *timeline.Timeline) (names []string, from string) {
	set := map[string]bool{}
	for _, e := range tl.Events {
		if e.Kind != timeline.State {
			continue
		}
		if bs, ok := e.Data["breakers"].(map[string]any); ok {
			for n := range bs {
				set[n] = true
			}
		}
	}
	if len(set) > 0 {
		return slices.Sorted(maps.Keys(set)), "state samples"
	}
	if names := metricBreakerNames(tl); len(names) > 0 {
		return names, "metric samples"
	}
	return nil, ""
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
		if s, ok := breakerState(e.Data, name); ok {
			out = append(out, StateSample{e.Time, s})
		}
	}
	if len(out) == 0 { // no state endpoint: the breaker's state metric
		out = metricBreakerSamples(tl, name)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

func (c *breakerCheck) start(w *window) acc {
	return eventCheck(func() CheckResult { return c.judge(w) })
}

func (c *breakerCheck) judge(w *window) CheckResult {
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
