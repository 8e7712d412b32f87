package contract

import (
	"strconv"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// Measurement is what reports show of a run besides verdicts: figures per
// phase and when each fault was on. Times are offsets from the start of
// the first phase. The chart's series over time are the reports' own
// (reports.SeriesBuilder, fed by JudgeOptions.Each).
type Measurement struct {
	Start  time.Time      `json:"start"`
	Phases []PhaseMetrics `json:"phases"`
	Faults []FaultTiming  `json:"faults"`
	// Findings are what the run showed that no contract asked about
	// (see StatusShifts).
	Findings []Finding `json:"findings,omitempty"`
	// Bills are what each fault cost the users, in the order the faults
	// went on (see Bill).
	Bills []Bill `json:"bills,omitempty"`
}

// PhaseMetrics summarises one phase.
type PhaseMetrics struct {
	Name     string        `json:"name"`
	Start    time.Duration `json:"start_ns"`
	Duration time.Duration `json:"duration_ns"`
	// Planned is the phase's planned length; Overrun how far it ran past
	// it, 0 when it did not overrun (see timeline.Phase.Overrun).
	Planned  time.Duration `json:"planned_ns,omitempty"`
	Overrun  time.Duration `json:"overrun_ns,omitempty"`
	Requests int           `json:"requests"`
	RPS      float64       `json:"rps"`
	P50      time.Duration `json:"p50_ns"`
	P90      time.Duration `json:"p90_ns"`
	P99      time.Duration `json:"p99_ns"`
	Max      time.Duration `json:"max_ns"`
	// Classes counts requests per class; Statuses per status code ("0" is
	// no response).
	Classes  map[Class]int  `json:"classes"`
	Statuses map[string]int `json:"statuses"`
	// Breakers are the sampled breakers' time open and state changes in
	// the phase, by name; empty when the run sampled no breaker state.
	Breakers []BreakerTime `json:"breakers,omitempty"`
}

// BreakerTime is one breaker in one phase: how long it was sampled open
// (each sample's state held until the next sample) and how often its
// sampled state changed.
type BreakerTime struct {
	Name        string        `json:"name"`
	Open        time.Duration `json:"open_ns"`
	Transitions int           `json:"transitions"`
}

// FaultTiming is one fault switched on and off.
type FaultTiming struct {
	Point string        `json:"point"`
	Term  string        `json:"term,omitempty"`
	Phase string        `json:"phase,omitempty"`
	On    time.Duration `json:"on_ns"`
	// Off is when it was switched off; Open is true when the record holds
	// no fault_off (the run was cut short).
	Off  time.Duration `json:"off_ns"`
	Open bool          `json:"open,omitempty"`
	// Ack is how long the control endpoint took to acknowledge it.
	Ack  time.Duration `json:"ack_ns"`
	Hits *int64        `json:"hits,omitempty"`
}

// measure accumulates a run's figures as its requests stream past.
type measure struct {
	tl     *timeline.Timeline
	cls    Classification
	m      Measurement
	end    time.Duration
	phases map[string]*phaseAcc
	// findings: route tallies of the baseline phase and of each phase a
	// fault was on in, and the bad ages per route.
	spans   []FaultSpan
	base    string
	hasBase bool
	faulted map[string][]string
	before  *routeTallies
	during  map[string]*routeTallies
	ages    *ageTallies
	routes  *routeCache
	// each is told every request and its class (JudgeOptions.Each).
	each func(*timeline.Request, Class)
	// bills are the faults' bills (see Bill).
	bills []*billAcc
	// other is a class outside Classes a rule gave, counted in the last
	// place of the class arrays (rules give only Classes; this is a guard).
	other Class
}

// phaseAcc counts in arrays, turned into the maps of PhaseMetrics at the
// end: a map update per request and figure
// is what judging spent most of its time on.
type phaseAcc struct {
	pm       *PhaseMetrics
	lat      *latencies
	classes  [numClasses]int
	statuses [600]int
}

// numClasses is len(Classes); classIndex a class's place in it (the last
// place for a class that is none of them).
const numClasses = 6

func classIndex(c Class) int {
	switch c {
	case Primary:
		return 0
	case Fallback:
		return 1
	case Rejected:
		return 2
	case Error:
		return 3
	case Timeout:
		return 4
	}
	return 5
}

// countClasses adds counts by class index to m.
func countClasses(m map[Class]int, counts *[numClasses]int, other Class) {
	for i, n := range counts {
		if n == 0 {
			continue
		}
		c := other
		if i < len(Classes) {
			c = Classes[i]
		}
		m[c] += n
	}
}

func newMeasure(tl *timeline.Timeline, cls Classification, routes *routeCache) *measure {
	ms := &measure{tl: tl, cls: cls, m: Measurement{Start: tl.Meta.Start}, phases: map[string]*phaseAcc{}, routes: routes}
	phases := tl.Phases()
	if len(phases) > 0 {
		ms.m.Start = phases[0].Start
	}
	off := func(t time.Time) time.Duration { return t.Sub(ms.m.Start) }
	ms.m.Phases = make([]PhaseMetrics, len(phases))
	for i, p := range phases {
		pm := &ms.m.Phases[i]
		*pm = PhaseMetrics{Name: p.Name, Start: off(p.Start), Duration: p.End.Sub(p.Start), Planned: p.Planned, Overrun: p.Overrun(),
			Classes: map[Class]int{}, Statuses: map[string]int{}}
		if _, dup := ms.phases[p.Name]; !dup {
			ms.phases[p.Name] = &phaseAcc{pm: pm, lat: newLatencies()}
		}
		ms.end = max(ms.end, off(p.End))
	}
	ms.spans = FaultSpans(tl)
	for _, f := range ms.spans {
		ft := FaultTiming{Point: f.Point, Term: f.Term, Phase: f.Phase, On: off(f.On), Ack: f.Ack, Hits: f.Hits}
		if f.Off.IsZero() {
			ft.Off, ft.Open = ms.end, true
		} else {
			ft.Off = off(f.Off)
		}
		ms.m.Faults = append(ms.m.Faults, ft)
	}
	if base, ok := baselinePhase(tl, ms.spans); ok {
		ms.base, ms.hasBase = base.Name, true
	}
	ms.faulted = faultedPhases(tl, ms.spans)
	ms.before = newRouteTallies(shiftClasses, routes)
	ms.during = map[string]*routeTallies{}
	for p := range ms.faulted {
		ms.during[p] = newRouteTallies(shiftClasses, routes)
	}
	ms.ages = &ageTallies{byRoute: map[string]*ageTally{}}
	ms.bills = newBills(tl, ms.spans)
	return ms
}

func (ms *measure) add(r *timeline.Request) {
	k := classed{r: r, cls: &ms.cls}
	c, _ := k.get()
	ci := classIndex(c)
	if ci == numClasses-1 {
		ms.other = c
	}
	if pa := ms.phases[r.Phase]; pa != nil {
		pa.pm.Requests++
		pa.classes[ci]++
		if r.Status >= 0 && r.Status < len(pa.statuses) {
			pa.statuses[r.Status]++
		} else {
			pa.pm.Statuses[strconv.Itoa(r.Status)]++
		}
		pa.lat.Add(r.Latency)
	}
	if ms.each != nil {
		ms.each(r, c)
	}
	for _, b := range ms.bills {
		b.add(r, c, &ms.cls)
	}
	route := ms.routes.route(r)
	if ms.hasBase && r.Phase == ms.base {
		ms.before.addRoute(route, r, &k)
	}
	if d := ms.during[r.Phase]; d != nil {
		d.addRoute(route, r, &k)
	}
	ms.ages.add(r, route, &ms.cls)
}

// statusKey is a status as PhaseMetrics.Statuses counts it, without an
// allocation for the common ones.
func statusKey(code int) string {
	if code >= 0 && code < len(statusKeys) {
		return statusKeys[code]
	}
	return strconv.Itoa(code)
}

var statusKeys = func() []string {
	out := make([]string, 600)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

func (ms *measure) result() *Measurement {
	m := &ms.m
	for i := range m.Phases {
		pm := &m.Phases[i]
		if pm.Duration > 0 {
			pm.RPS = float64(pm.Requests) / pm.Duration.Seconds()
		}
		pa := ms.phases[pm.Name]
		if pa == nil || pa.pm != pm {
			continue
		}
		countClasses(pm.Classes, &pa.classes, ms.other)
		for code, n := range pa.statuses {
			if n > 0 {
				pm.Statuses[statusKey(code)] += n
			}
		}
		if pa.lat.Count() > 0 {
			pm.P50, pm.P90, pm.P99, pm.Max = pa.lat.Percentile(50), pa.lat.Percentile(90), pa.lat.Percentile(99), pa.lat.Max()
		}
	}
	if ms.hasBase {
		m.Findings = statusShifts(ms.tl, ms.base, ms.before, ms.during, ms.faulted)
	}
	m.Findings = append(m.Findings, ms.ages.findings()...)
	m.Findings = append(m.Findings, stopFindings(ms.tl)...)
	for i, p := range ms.tl.Phases() {
		if pm := &m.Phases[i]; pm.Overrun > 0 {
			m.Findings = append(m.Findings, overrunFinding(p, pm.Overrun, pm.Max))
		}
	}
	var base *latencies
	if ms.hasBase {
		if pa := ms.phases[ms.base]; pa != nil {
			base = pa.lat
		}
	}
	for _, b := range ms.bills {
		m.Bills = append(m.Bills, b.result(base))
	}
	breakerTimes(ms.tl, m.Phases)
	return m
}
