package contract

import (
	"sort"
	"strconv"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// Measurement is what reports show of a run besides verdicts: figures per
// phase, when each fault was on, and series over time for a chart. Times
// are offsets from the start of the first phase.
type Measurement struct {
	Start  time.Time      `json:"start"`
	Phases []PhaseMetrics `json:"phases"`
	Faults []FaultTiming  `json:"faults"`
	// Findings are what the run showed that no contract asked about
	// (see StatusShifts).
	Findings []Finding `json:"findings,omitempty"`
	// Series is for charts; report.json leaves it out.
	Series Series `json:"-"`
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

// Series are a run's figures per time bucket.
type Series struct {
	Bucket  time.Duration
	End     time.Duration
	Buckets []Bucket
	Phases  []PhaseMetrics
	// Breakers are the breaker states over time, one band per breaker.
	Breakers []BreakerBand
}

// Bucket holds the requests sent in [At, At+Bucket).
type Bucket struct {
	At       time.Duration
	Requests int
	P50, P99 time.Duration
	Classes  map[Class]int
}

// BreakerBand is one breaker's state over time. From says where it was
// read: "state samples", "metric samples" (the target's
// *_circuit_breaker_state metric), or "response header" when the target
// serves neither but states its breaker in each response.
type BreakerBand struct {
	Name  string
	From  string
	Spans []StateSpan
}

// StateSpan is a stretch of time a breaker spent in one state.
type StateSpan struct {
	From, To time.Duration
	State    string
}

// measure accumulates a run's figures as its requests stream past.
type measure struct {
	tl     *timeline.Timeline
	cls    Classification
	m      Measurement
	end    time.Duration
	phases map[string]*phaseAcc
	// series
	buckets []bucketAcc
	// findings: route tallies of the baseline phase and of each phase a
	// fault was on in, and the bad ages per route.
	spans    []FaultSpan
	base     string
	hasBase  bool
	faulted  map[string][]string
	before   *routeTallies
	during   map[string]*routeTallies
	ages     *ageTallies
	routes   *routeCache
	breakers bool
	// points are the breaker states read from response headers, where
	// they change, when the run has no state samples.
	points []StateSample
	// other is a class outside Classes a rule gave, counted in the last
	// place of the class arrays (rules give only Classes; this is a guard).
	other Class
}

// phaseAcc and bucketAcc count in arrays, turned into the maps of
// PhaseMetrics and Bucket at the end: a map update per request and figure
// is what judging spent most of its time on.
type phaseAcc struct {
	pm       *PhaseMetrics
	lat      *latencies
	classes  [numClasses]int
	statuses [600]int
}

type bucketAcc struct {
	b       *Bucket
	lat     *latencies
	classes [numClasses]int
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
	s := &ms.m.Series
	s.Bucket, s.End = bucketFor(ms.end), ms.end
	n := int(ms.end/s.Bucket) + 1
	s.Buckets = make([]Bucket, n)
	ms.buckets = make([]bucketAcc, n)
	for i := range s.Buckets {
		s.Buckets[i] = Bucket{At: time.Duration(i) * s.Bucket, Classes: map[Class]int{}}
		ms.buckets[i] = bucketAcc{b: &s.Buckets[i], lat: newBucketLatencies()}
	}
	ms.breakers = hasBreakerSamples(tl)
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
		pa.lat.add(r.Latency)
	}
	if at := r.Time.Sub(ms.m.Start); at >= 0 && at <= ms.end {
		ba := &ms.buckets[int(at/ms.m.Series.Bucket)]
		ba.b.Requests++
		ba.classes[ci]++
		ba.lat.add(r.Latency)
	}
	route := ms.routes.route(r)
	if ms.hasBase && r.Phase == ms.base {
		ms.before.addRoute(route, r, &k)
	}
	if d := ms.during[r.Phase]; d != nil {
		d.addRoute(route, r, &k)
	}
	ms.ages.add(r, route, &ms.cls)
	if !ms.breakers && ms.cls.BreakerHeader != "" {
		if st := r.Header(ms.cls.BreakerHeader); st != "" {
			if n := len(ms.points); n == 0 || ms.points[n-1].State != st {
				ms.points = append(ms.points, StateSample{r.End(), st})
			}
		}
	}
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
		if pa.lat.count() > 0 {
			pm.P50, pm.P90, pm.P99, pm.Max = pa.lat.percentile(50), pa.lat.percentile(90), pa.lat.percentile(99), pa.lat.max
		}
	}
	for i := range ms.buckets {
		ba := &ms.buckets[i]
		countClasses(ba.b.Classes, &ba.classes, ms.other)
		if ba.lat.count() > 0 {
			ba.b.P50, ba.b.P99 = ba.lat.percentile(50), ba.lat.percentile(99)
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
	m.Series.Breakers = ms.bands()
	m.Series.Phases = m.Phases
	return m
}

// bucketFor picks a round bucket size giving about 120 buckets.
func bucketFor(d time.Duration) time.Duration {
	for _, b := range []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond,
		500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second} {
		if d/b <= 120 {
			return b
		}
	}
	return time.Minute
}

// hasBreakerSamples reports whether the run's state samples state
// breakers.
func hasBreakerSamples(tl *timeline.Timeline) bool {
	for _, e := range tl.Events {
		if e.Kind != timeline.State {
			continue
		}
		if bs, ok := e.Data["breakers"].(map[string]any); ok && len(bs) > 0 {
			return true
		}
	}
	return false
}

// bands reads breaker states from state samples, or failing those from
// the breaker header of responses.
func (ms *measure) bands() []BreakerBand {
	tl, start, end := ms.tl, ms.m.Start, ms.end
	names := map[string]bool{}
	for _, e := range tl.Events {
		if e.Kind != timeline.State {
			continue
		}
		if bs, ok := e.Data["breakers"].(map[string]any); ok {
			for n := range bs {
				names[n] = true
			}
		}
	}
	from := "state samples"
	if len(names) == 0 {
		for _, n := range metricBreakerNames(tl) {
			names[n] = true
		}
		from = "metric samples"
	}
	var bands []BreakerBand
	if len(names) > 0 {
		sorted := make([]string, 0, len(names))
		for n := range names {
			sorted = append(sorted, n)
		}
		sort.Strings(sorted)
		for _, n := range sorted {
			bands = append(bands, BreakerBand{Name: n, From: from, Spans: spans(BreakerSamples(tl, n), start, end)})
		}
		return bands
	}
	if len(ms.points) == 0 {
		return nil
	}
	// The points are where the header changed in the order responses
	// completed; in time order, spans merges what repeats.
	points := ms.points
	sort.SliceStable(points, func(i, j int) bool { return points[i].Time.Before(points[j].Time) })
	return []BreakerBand{{Name: "breaker", From: "response header", Spans: spans(points, start, end)}}
}

// spans turns state points into spans, each state lasting until the next
// differing point, the last until end.
func spans(points []StateSample, start time.Time, end time.Duration) []StateSpan {
	var out []StateSpan
	for _, p := range points {
		at := min(max(p.Time.Sub(start), 0), end)
		if len(out) > 0 && out[len(out)-1].State == p.State {
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].To = at
		}
		out = append(out, StateSpan{From: at, To: end, State: p.State})
	}
	return out
}
