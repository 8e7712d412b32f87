package contract

import (
	"fmt"
	"net/textproto"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// window is the part of a timeline one contract judges, with what the
// checks need to know about it. It holds no requests: they stream past
// the checks' accumulators once (see Judge).
type window struct {
	tl    *timeline.Timeline
	spec  *Spec
	start time.Time
	end   time.Time
	// phase is the window's phase span; the whole run when Spec.Phase is
	// empty.
	phase timeline.Phase
	// faults are every fault span of the run; inWindow those overlapping
	// the window's phase.
	faults   []FaultSpan
	inWindow []FaultSpan
	// n counts the requests in the window.
	n int
	// baselines are the run's baseline bodies (see baselines), when a
	// predicate reads them.
	baselines *baselines
	// routes caches Route by target.
	routes *routeCache
}

// FaultSpan is one fault switched on and off during a run.
type FaultSpan struct {
	Point string    `json:"point"`
	Term  string    `json:"term,omitempty"`
	Phase string    `json:"phase,omitempty"`
	On    time.Time `json:"on"`
	// Off is zero when the record holds no fault_off for it.
	Off time.Time `json:"off,omitzero"`
	// Ack is the time from the phase boundary until the control endpoint
	// acknowledged switching it on.
	Ack time.Duration `json:"ack_ns"`
	// Hits is how often its marker fired; nil when unknown.
	Hits *int64 `json:"hits,omitempty"`
}

// activeAt reports whether the fault was on at t.
func (f *FaultSpan) activeAt(t time.Time) bool {
	return !t.Before(f.On) && (f.Off.IsZero() || t.Before(f.Off))
}

// runSpan is the span of the whole run: from the first phase start to the
// last phase end.
func runSpan(tl *timeline.Timeline) (timeline.Phase, bool) {
	ph := tl.Phases()
	if len(ph) == 0 {
		return timeline.Phase{}, false
	}
	span := timeline.Phase{Name: "", Start: ph[0].Start, End: ph[0].End}
	for _, p := range ph[1:] {
		if p.End.After(span.End) {
			span.End = p.End
		}
	}
	return span, true
}

func newWindow(tl *timeline.Timeline, s *Spec) (*window, error) {
	var ph timeline.Phase
	var ok bool
	if s.Phase == "" {
		ph, ok = runSpan(tl)
		if !ok {
			return nil, fmt.Errorf("no phase ran")
		}
	} else if ph, ok = tl.Phase(s.Phase); !ok {
		return nil, fmt.Errorf("phase %q did not run", s.Phase)
	}
	w := &window{tl: tl, spec: s, phase: ph, start: ph.Start.Add(s.Settle), end: ph.End}
	if s.Until > 0 {
		if u := ph.Start.Add(s.Until); u.Before(w.end) {
			w.end = u
		}
	}
	if s.Last > 0 {
		// Counted back from the planned end: a phase held past its plan
		// (see Overrun) sent nothing after it.
		if l := plannedEnd(ph).Add(-s.Last); l.After(w.start) {
			w.start = l
		}
	}
	if !w.start.Before(w.end) {
		return nil, fmt.Errorf("window %s leaves nothing of %s (%v long)", windowName(s), phaseName(s.Phase), ph.End.Sub(ph.Start).Round(time.Millisecond))
	}
	w.faults = FaultSpans(tl)
	for _, f := range w.faults {
		if (s.Phase != "" && f.Phase == s.Phase) || (f.On.Before(ph.End) && (f.Off.IsZero() || f.Off.After(ph.Start))) {
			w.inWindow = append(w.inWindow, f)
		}
	}
	return w, nil
}

// contains reports whether r is one of the window's requests.
func (w *window) contains(r *timeline.Request) bool {
	if w.spec.Phase != "" && r.Phase != w.spec.Phase {
		return false
	}
	return !r.Time.Before(w.start) && !r.Time.After(w.end) && w.selects(r)
}

// classed is a request's class by a window's classification, worked out
// once, when a check first asks.
type classed struct {
	r    *timeline.Request
	cls  *Classification
	done bool
	c    Class
	src  string
}

func (k *classed) get() (Class, string) {
	if !k.done {
		k.c, k.src = k.cls.Classify(k.r)
		k.done = true
	}
	return k.c, k.src
}

// selects applies the spec's request filter.
func (w *window) selects(r *timeline.Request) bool {
	return w.spec.Requests.Match(r.Method, requestPath(r), r.Tags, r.Template)
}

// requestPath is the path of a request, from its target "GET /p/7".
func requestPath(r *timeline.Request) string {
	_, p, ok := strings.Cut(r.Target, " ")
	if !ok {
		return r.Target
	}
	return p
}

func phaseName(p string) string {
	if p == "" {
		return "the run"
	}
	return "phase " + strconv.Quote(p)
}

// windowName describes a spec's window: "db-timeout +500ms until 3s GET /p/*".
func windowName(s *Spec) string {
	name := s.Phase
	if name == "" {
		name = "run"
	}
	if s.Settle > 0 {
		name += " +" + s.Settle.String()
	}
	if s.Until > 0 {
		name += " until " + s.Until.String()
	}
	if s.Last > 0 {
		name += " last " + s.Last.String()
	}
	if !s.Requests.IsZero() {
		name += " " + s.Requests.String()
	}
	return name
}

// FaultSpans pairs the fault_on and fault_off events of a timeline, with
// the hits recorded for each, in the order they were switched on.
func FaultSpans(tl *timeline.Timeline) []FaultSpan {
	var spans []FaultSpan
	open := map[string]int{}
	for _, e := range tl.Events {
		switch e.Kind {
		case timeline.FaultOn:
			open[e.Point] = len(spans)
			spans = append(spans, FaultSpan{Point: e.Point, Term: e.Term, Phase: e.Phase, On: e.Time, Ack: e.Ack})
		case timeline.FaultOff:
			if i, ok := open[e.Point]; ok {
				spans[i].Off = e.Time
				delete(open, e.Point)
			}
		case timeline.FaultHits:
			for i := len(spans) - 1; i >= 0; i-- {
				if spans[i].Point == e.Point && spans[i].Hits == nil {
					spans[i].Hits = e.Hits
					break
				}
			}
		}
	}
	return spans
}

// faultsAt names the faults that were on at t, sorted.
func faultsAt(spans []FaultSpan, t time.Time) []string {
	var out []string
	for i := range spans {
		if spans[i].activeAt(t) {
			out = append(out, spans[i].Point)
		}
	}
	sort.Strings(out)
	return out
}

// sinceFault is how long the longest-standing fault on at t had been on,
// counted from On, when the control endpoint or proxy acknowledged it
// (before then the fault may not have been on yet), and whether any fault
// was on at t. It is never negative.
func sinceFault(spans []FaultSpan, t time.Time) (time.Duration, bool) {
	var since time.Duration
	on := false
	for i := range spans {
		if f := &spans[i]; f.activeAt(t) {
			on = true
			since = max(since, t.Sub(f.On))
		}
	}
	return since, on
}

// referenceFault is the fault a time-based check measures from: the first
// one switched on inside the window's phase, else the last one switched on
// before it (a recovery phase measures from the fault before it).
func (w *window) referenceFault() (FaultSpan, bool) {
	var before *FaultSpan
	for i := range w.faults {
		f := &w.faults[i]
		if !f.On.Before(w.phase.Start) && f.On.Before(w.phase.End) {
			return *f, true
		}
		if f.On.Before(w.phase.Start) {
			before = f
		}
	}
	if before != nil {
		return *before, true
	}
	return FaultSpan{}, false
}

// baseline returns the body target last got with a 2xx status in phase.
func (w *window) baseline(phase, target string) any {
	if w.baselines == nil {
		return nil
	}
	b, ok := w.baselines.bodies[phase][target]
	if !ok {
		return nil
	}
	return b
}

// violation is the evidence for request r of the window.
func (w *window) violation(r *timeline.Request, k *classed) Violation {
	c, src := k.get()
	return w.requestViolation(r, c, src)
}

func (w *window) requestViolation(r *timeline.Request, c Class, src string) Violation {
	return Violation{Seq: r.Seq, Time: r.Time, Offset: r.Time.Sub(w.start), Target: r.Target, Status: r.Status,
		Latency: r.Latency, Class: c, Source: src, Error: r.Error, Faults: faultLabelsAt(w.faults, r.Time)}
}

// faultLabelsAt names the faults that were on at t as evidence shows them:
// a failpoint by its path, a proxy or process fault by what it does
// ("proxy postgres latency 300ms ±50ms"), sorted.
func faultLabelsAt(spans []FaultSpan, t time.Time) []string {
	var out []string
	for i := range spans {
		if spans[i].activeAt(t) {
			out = append(out, spans[i].Label())
		}
	}
	sort.Strings(out)
	return out
}

// Label is how evidence names the fault: a failpoint by its path, a proxy
// or process fault (point proxy/NAME or process/NAME) by its description.
func (f FaultSpan) Label() string {
	if f.Term != "" && (strings.HasPrefix(f.Point, "proxy/") || strings.HasPrefix(f.Point, "process/")) {
		return f.Term
	}
	return f.Point
}

// canonical is a header name in canonical form.
func canonical(name string) string {
	return textproto.CanonicalMIMEHeaderKey(name)
}
