package contract

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/chaoskit/chaoskit/timeline"
)

// Status-class shifts. A service can answer a failing dependency with a
// client error: a database error that comes back as 404 {"errors": "Invalid
// param"}. By the default classification a 4xx answer is primary (it is the
// service's answer, not a failure), so such a fault hides from every class
// share. What gives it away is the shift: the route answered 0% 4xx while no
// fault was on and 100% 4xx while one was. chaoskit reports every such
// shift as a finding, with no rule written, and status_shift("4xx") asserts
// on it.

// Defaults of status-shift findings.
const (
	// ShiftThreshold is the rise, in percentage points of a route's
	// requests, of a status class's share against the baseline phase
	// that makes a finding.
	ShiftThreshold = 10.0
	// MinShiftSamples is the fewest requests a route needs, both in the
	// baseline phase and in the phase compared, for its shift to count.
	MinShiftSamples = 20
)

// shiftClasses are the status classes a finding watches: those the default
// classification counts as primary, so that a fault answered with one of
// them would hide. A shift into 5xx shows as errors already. Only answers
// the classification calls primary count: a 429 the classification calls
// rejected is not hiding.
var shiftClasses = []StatusRange{{300, 399}, {400, 499}}

// Finding is something a run showed that no contract asked about and a
// reviewer should know: a status class that shifted under a fault.
type Finding struct {
	// Kind is "status_shift".
	Kind string `json:"kind"`
	// Phase is the phase it showed in, with the faults that were on;
	// Route the requests it concerns ("GET /api/articles").
	Phase  string   `json:"phase"`
	Faults []string `json:"faults,omitempty"`
	Route  string   `json:"route,omitempty"`
	// Message says it in a sentence, with what to do about it.
	Message string `json:"message"`
	// Status is the status class ("4xx"); Baseline the fault-free phase
	// compared against. Share and BaselineShare are the class's shares of
	// the route's requests there, in percent, out of Total and
	// BaselineTotal requests.
	Status        string  `json:"status,omitempty"`
	Baseline      string  `json:"baseline,omitempty"`
	Share         float64 `json:"share"`
	Total         int     `json:"total"`
	BaselineShare float64 `json:"baseline_share"`
	BaselineTotal int     `json:"baseline_total"`
}

// idSegment matches a path segment that names one thing rather than a
// route: a number, a UUID, a long hex string.
var idSegment = regexp.MustCompile(`^(?:[0-9]+|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-fA-F]{16,})$`)

// Route names the route a request took: its method and path, the query
// left out and segments that name one thing (numbers, UUIDs, long hex ids)
// written {id}, so that GET /products/7 and GET /products/8 are one route,
// GET /products/{id}.
func Route(r *timeline.Request) string {
	p := requestPath(r)
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if idSegment.MatchString(s) {
			segs[i] = "{id}"
		}
	}
	return r.Method + " " + strings.Join(segs, "/")
}

// routeTally counts a route's requests and those in each watched class.
type routeTally struct {
	n  int
	in map[StatusRange]int
}

// tallyRoutes counts reqs per route, and per route those the
// classification calls primary whose status is in each of classes.
func tallyRoutes(reqs []timeline.Request, cls *Classification, classes []StatusRange) map[string]*routeTally {
	out := map[string]*routeTally{}
	for i := range reqs {
		r := &reqs[i]
		k := Route(r)
		t := out[k]
		if t == nil {
			t = &routeTally{in: map[StatusRange]int{}}
			out[k] = t
		}
		t.n++
		if c, _ := cls.Classify(r); c != Primary {
			continue
		}
		for _, c := range classes {
			if c.Has(r.Status) {
				t.in[c]++
			}
		}
	}
	return out
}

// baselinePhase is the first phase during which no fault was on: the run's
// picture of the service when nothing is wrong.
func baselinePhase(tl *timeline.Timeline, spans []FaultSpan) (timeline.Phase, bool) {
	for _, p := range tl.Phases() {
		clean := true
		for _, f := range spans {
			if f.On.Before(p.End) && (f.Off.IsZero() || f.Off.After(p.Start)) {
				clean = false
				break
			}
		}
		if clean {
			return p, true
		}
	}
	return timeline.Phase{}, false
}

// StatusShifts finds, in every phase during which a fault was on, each
// route whose share of 3xx or 4xx answers that cls calls primary rose by
// ShiftThreshold points or more against the baseline phase (the first with
// no fault on), with at least MinShiftSamples requests of the route in
// both.
func StatusShifts(tl *timeline.Timeline, cls Classification) []Finding {
	spans := FaultSpans(tl)
	base, ok := baselinePhase(tl, spans)
	if !ok {
		return nil
	}
	before := tallyRoutes(tl.PhaseRequests(base.Name), &cls, shiftClasses)
	var out []Finding
	for _, p := range tl.Phases() {
		var faults []string
		for _, f := range spans {
			if f.On.Before(p.End) && (f.Off.IsZero() || f.Off.After(p.Start)) && !contains(faults, f.Point) {
				faults = append(faults, f.Point)
			}
		}
		if len(faults) == 0 {
			continue
		}
		sort.Strings(faults)
		during := tallyRoutes(tl.PhaseRequests(p.Name), &cls, shiftClasses)
		routes := make([]string, 0, len(during))
		for k := range during {
			routes = append(routes, k)
		}
		sort.Strings(routes)
		for _, route := range routes {
			d, b := during[route], before[route]
			if b == nil || d.n < MinShiftSamples || b.n < MinShiftSamples {
				continue
			}
			for _, c := range shiftClasses {
				share, was := pct(d.in[c], d.n), pct(b.in[c], b.n)
				if share-was < ShiftThreshold {
					continue
				}
				f := Finding{Kind: "status_shift", Phase: p.Name, Faults: faults, Route: route, Status: c.String(), Baseline: base.Name,
					Share: share, Total: d.n, BaselineShare: was, BaselineTotal: b.n}
				f.Message = fmt.Sprintf("%s answered %s to %s (%d/%d) in %s with %s on, against %s (%d/%d) in %s: a fault may hide behind a %s status, "+
					"which the default classification counts as primary; classify those answers with a rule, or assert status_shift(%q) <= %s",
					route, c, formatPct(share), d.in[c], d.n, p.Name, strings.Join(faults, ", "), formatPct(was), b.in[c], b.n, base.Name, c,
					c.String(), formatPct(ShiftThreshold))
				out = append(out, f)
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func pct(k, n int) float64 {
	if n == 0 {
		return 0
	}
	return 100 * float64(k) / float64(n)
}

// shiftForm is `status_shift("4xx") <= 10%`, optionally naming the baseline
// phase: `status_shift("404", "warmup") <= 5%`.
var shiftForm = regexp.MustCompile(`^status_shift\(\s*"([^"]+)"\s*(?:,\s*"([^"]+)"\s*)?\)\s*` + opPat + `\s*(\S+)$`)

// shiftCheck is status_shift: the largest rise, in percentage points, of
// the share of a route's requests in the window that the classification
// calls primary with a status of the class, against the baseline phase,
// over the routes with MinShiftSamples requests in both.
type shiftCheck struct {
	src      string
	status   StatusRange
	baseline string
	op       string
	want     float64
}

func compileShift(src string, m []string) (check, error) {
	rng, err := ParseStatus(m[1])
	if err != nil {
		return nil, &SyntaxError{Column: strings.Index(src, m[1]) + 1, Msg: err.Error(), Hint: `write status_shift("4xx") <= 10%`}
	}
	p, err := pctArg(src, m[4])
	return &shiftCheck{src: src, status: rng, baseline: m[2], op: m[3], want: p}, err
}

func (c *shiftCheck) evaluate(w *window) CheckResult {
	res := CheckResult{Expect: c.src, Expected: c.op + " " + formatPct(c.want), Samples: len(w.reqs)}
	var base timeline.Phase
	var ok bool
	if c.baseline != "" {
		base, ok = w.tl.Phase(c.baseline)
	} else {
		base, ok = baselinePhase(w.tl, w.faults)
	}
	if !ok {
		res.Outcome, res.Measured = Inconclusive, "no baseline"
		res.Reason = "no phase ran without a fault to compare against"
		if c.baseline != "" {
			res.Reason = fmt.Sprintf("phase %q did not run", c.baseline)
		}
		return res
	}
	classes := []StatusRange{c.status}
	before := tallyRoutes(w.tl.PhaseRequests(base.Name), &w.spec.Classify, classes)
	during := tallyRoutes(w.reqs, &w.spec.Classify, classes)
	worst, rise, judged := "", 0.0, 0
	for route, d := range during {
		b := before[route]
		if b == nil || d.n < MinShiftSamples || b.n < MinShiftSamples {
			continue
		}
		judged++
		if r := pct(d.in[c.status], d.n) - pct(b.in[c.status], b.n); worst == "" || r > rise || (r == rise && route < worst) {
			worst, rise = route, r
		}
	}
	if judged == 0 {
		res.Outcome, res.Measured = Inconclusive, "no route to compare"
		res.Reason = fmt.Sprintf("no route has %d requests both in the window and in phase %q", MinShiftSamples, base.Name)
		return res
	}
	d, b := during[worst], before[worst]
	res.Measured = fmt.Sprintf("%+.4g points: %s %s %s (%d/%d), %s in %s", rise, worst, c.status, formatPct(pct(d.in[c.status], d.n)),
		d.in[c.status], d.n, formatPct(pct(b.in[c.status], b.n)), base.Name)
	res.Margin = margin(rise, c.op, c.want)
	res.Outcome = outcome(compare(rise, c.op, c.want))
	if res.Outcome == Fail {
		for i := range w.reqs {
			r := &w.reqs[i]
			if len(res.Violations) == MaxViolations {
				break
			}
			if Route(r) == worst && c.status.Has(r.Status) && w.classes[i] == Primary {
				res.Violations = append(res.Violations, w.violation(i))
			}
		}
	}
	res.Matched = d.in[c.status]
	return res
}
