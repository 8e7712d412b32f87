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
	// shiftThreshold is the rise, in percentage points of a route's
	// requests, of a status class's share against the baseline phase
	// that makes a finding.
	shiftThreshold = 10.0
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

// routeTallies counts requests per route, and per route those the
// classification calls primary whose status is in each of classes.
type routeTallies struct {
	classes []StatusRange
	routes  *routeCache
	m       map[string]*routeTally
	// everyClass counts answers of any class, not only primary ones.
	everyClass bool
}

func newRouteTallies(classes []StatusRange, routes *routeCache) *routeTallies {
	return &routeTallies{classes: classes, routes: routes, m: map[string]*routeTally{}}
}

func (rt *routeTallies) add(r *timeline.Request, k *classed) string {
	return rt.addRoute(rt.routes.route(r), r, k)
}

// addRoute counts r, whose route is known.
func (rt *routeTallies) addRoute(route string, r *timeline.Request, k *classed) string {
	t := rt.m[route]
	if t == nil {
		t = &routeTally{in: map[StatusRange]int{}}
		rt.m[route] = t
	}
	t.n++
	if c, _ := k.get(); c != Primary && !rt.everyClass {
		return route
	}
	for _, c := range rt.classes {
		if c.Has(r.Status) {
			t.in[c]++
		}
	}
	return route
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

// faultedPhases names, per phase, the faults on during it, sorted; a
// phase with none is left out.
func faultedPhases(tl *timeline.Timeline, spans []FaultSpan) map[string][]string {
	out := map[string][]string{}
	for _, p := range tl.Phases() {
		var faults []string
		for _, f := range spans {
			if f.On.Before(p.End) && (f.Off.IsZero() || f.Off.After(p.Start)) && !contains(faults, f.Point) {
				faults = append(faults, f.Point)
			}
		}
		if len(faults) > 0 {
			sort.Strings(faults)
			out[p.Name] = faults
		}
	}
	return out
}

// statusShifts makes the findings from the tallies of the baseline phase
// and of each faulted phase.
func statusShifts(tl *timeline.Timeline, base string, before *routeTallies, during map[string]*routeTallies, faulted map[string][]string) []Finding {
	var out []Finding
	for _, p := range tl.Phases() {
		faults, d := faulted[p.Name], during[p.Name]
		if len(faults) == 0 || d == nil {
			continue
		}
		routes := make([]string, 0, len(d.m))
		for k := range d.m {
			routes = append(routes, k)
		}
		sort.Strings(routes)
		for _, route := range routes {
			d, b := d.m[route], before.m[route]
			if b == nil || d.n < MinShiftSamples || b.n < MinShiftSamples {
				continue
			}
			for _, c := range shiftClasses {
				share, was := pct(d.in[c], d.n), pct(b.in[c], b.n)
				if share-was < shiftThreshold {
					continue
				}
				f := Finding{Kind: "status_shift", Phase: p.Name, Faults: faults, Route: route, Status: c.String(), Baseline: base,
					Share: share, Total: d.n, BaselineShare: was, BaselineTotal: b.n}
				f.Message = fmt.Sprintf("%s answered %s to %s (%d/%d) in %s with %s on, against %s (%d/%d) in %s: a fault may hide behind a %s status, "+
					"which the default classification counts as primary; classify those answers with a rule, or assert status_shift(%q) <= %s",
					route, c, formatPct(share), d.in[c], d.n, p.Name, strings.Join(faults, ", "), formatPct(was), b.in[c], b.n, base, c,
					c.String(), formatPct(shiftThreshold))
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
	wantText string
}

// everyClass says whether the shift counts answers of every class: a 3xx
// or 4xx counts only when the classification calls it primary (a fault
// hiding behind it; a 429 called rejected is not hiding), any other status
// whatever its class (a 5xx is an error or a fast refusal, and its rise is
// what status_shift("5xx") asks about).
func (c *shiftCheck) everyClass() bool {
	return c.status.Lo > 499 || c.status.Hi < 300
}

func compileShift(src string, m []string) (check, error) {
	rng, err := ParseStatus(m[1])
	if err != nil {
		return nil, &SyntaxError{Column: strings.Index(src, m[1]) + 1, Msg: err.Error(), Hint: `write status_shift("4xx") <= 10%`}
	}
	p, err := pctArg(src, m[4])
	return &shiftCheck{src: src, status: rng, baseline: m[2], op: m[3], want: p, wantText: m[4]}, err
}

// shiftAcc tallies routes in the baseline phase and in the window, and
// keeps each route's first violations until the worst route is known.
type shiftAcc struct {
	c      *shiftCheck
	w      *window
	base   timeline.Phase
	noBase string
	before *routeTallies
	during *routeTallies
	viol   map[string][]Violation
}

func (c *shiftCheck) start(w *window) acc {
	a := &shiftAcc{c: c, w: w, viol: map[string][]Violation{}}
	classes := []StatusRange{c.status}
	a.before, a.during = newRouteTallies(classes, w.routes), newRouteTallies(classes, w.routes)
	if c.everyClass() {
		a.before.everyClass, a.during.everyClass = true, true
	}
	var ok bool
	if c.baseline != "" {
		a.base, ok = w.tl.Phase(c.baseline)
	} else {
		a.base, ok = baselinePhase(w.tl, w.faults)
	}
	if !ok {
		a.noBase = "no phase ran without a fault to compare against"
		if c.baseline != "" {
			a.noBase = fmt.Sprintf("phase %q did not run", c.baseline)
		}
	}
	return a
}

func (a *shiftAcc) add(r *timeline.Request, in bool, k *classed) {
	if a.noBase != "" {
		return
	}
	if r.Phase == a.base.Name {
		a.before.add(r, k)
	}
	if !in {
		return
	}
	route := a.during.add(r, k)
	if v := a.viol[route]; len(v) < MaxViolations && a.c.status.Has(r.Status) {
		if c, _ := k.get(); c == Primary || a.c.everyClass() {
			a.viol[route] = append(v, a.w.violation(r, k))
		}
	}
}

func (a *shiftAcc) result() CheckResult {
	c := a.c
	res := CheckResult{Expect: c.src, Expected: c.op + " " + c.wantText, Samples: a.w.n}
	if a.noBase != "" {
		res.Outcome, res.Measured = Inconclusive, "no baseline"
		res.Reason = a.noBase
		return res
	}
	worst, rise, judged := "", 0.0, 0
	for route, d := range a.during.m {
		b := a.before.m[route]
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
		res.Reason = fmt.Sprintf("no route has %d requests both in the window and in phase %q", MinShiftSamples, a.base.Name)
		return res
	}
	d, b := a.during.m[worst], a.before.m[worst]
	res.Measured = fmt.Sprintf("%+.4g points: %s %s %s (%d/%d), %s in %s", rise, worst, c.status, formatPct(pct(d.in[c.status], d.n)),
		d.in[c.status], d.n, formatPct(pct(b.in[c.status], b.n)), a.base.Name)
	res.measured(rise, c.op, c.want, UnitPercent)
	res.Outcome = outcome(compare(rise, c.op, c.want))
	if res.Outcome == Fail {
		res.Violations = a.viol[worst]
	}
	res.Matched = d.in[c.status]
	return res
}
