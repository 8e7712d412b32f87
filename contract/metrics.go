package contract

import (
	"slices"
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

// DefaultBreakerHeader is the response header the demo service states its
// breaker's state in.
const DefaultBreakerHeader = "X-Chaoskit-Breaker"

// Measure computes a run's figures, classifying requests with cls.
func Measure(tl *timeline.Timeline, cls Classification) Measurement {
	m := Measurement{Start: tl.Meta.Start}
	phases := tl.Phases()
	if len(phases) > 0 {
		m.Start = phases[0].Start
	}
	off := func(t time.Time) time.Duration { return t.Sub(m.Start) }
	var end time.Duration
	for _, p := range phases {
		pm := phaseMetrics(tl.PhaseRequests(p.Name), &cls)
		pm.Name, pm.Start, pm.Duration = p.Name, off(p.Start), p.End.Sub(p.Start)
		if pm.Duration > 0 {
			pm.RPS = float64(pm.Requests) / pm.Duration.Seconds()
		}
		m.Phases = append(m.Phases, pm)
		end = max(end, off(p.End))
	}
	for _, f := range FaultSpans(tl) {
		ft := FaultTiming{Point: f.Point, Term: f.Term, Phase: f.Phase, On: off(f.On), Ack: f.Ack, Hits: f.Hits}
		if f.Off.IsZero() {
			ft.Off, ft.Open = end, true
		} else {
			ft.Off = off(f.Off)
		}
		m.Faults = append(m.Faults, ft)
	}
	m.Findings = append(StatusShifts(tl, cls), BadAges(tl, cls)...)
	m.Series = series(tl, &cls, m.Start, end)
	m.Series.Phases = m.Phases
	return m
}

func phaseMetrics(reqs []timeline.Request, cls *Classification) PhaseMetrics {
	pm := PhaseMetrics{Requests: len(reqs), Classes: map[Class]int{}, Statuses: map[string]int{}}
	if len(reqs) == 0 {
		return pm
	}
	for i := range reqs {
		c, _ := cls.Classify(&reqs[i])
		pm.Classes[c]++
		pm.Statuses[strconv.Itoa(reqs[i].Status)]++
	}
	lat := sortedLatencies(reqs)
	pm.P50, pm.P90, pm.P99, pm.Max = Percentile(lat, 50), Percentile(lat, 90), Percentile(lat, 99), lat[len(lat)-1]
	return pm
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

func series(tl *timeline.Timeline, cls *Classification, start time.Time, end time.Duration) Series {
	s := Series{Bucket: bucketFor(end), End: end}
	n := int(end/s.Bucket) + 1
	lat := make([][]time.Duration, n)
	s.Buckets = make([]Bucket, n)
	for i := range s.Buckets {
		s.Buckets[i] = Bucket{At: time.Duration(i) * s.Bucket, Classes: map[Class]int{}}
	}
	for i := range tl.Requests {
		r := &tl.Requests[i]
		at := r.Time.Sub(start)
		if at < 0 || at > end {
			continue
		}
		k := int(at / s.Bucket)
		c, _ := cls.Classify(r)
		s.Buckets[k].Requests++
		s.Buckets[k].Classes[c]++
		lat[k] = append(lat[k], r.Latency)
	}
	for k := range lat {
		if len(lat[k]) > 0 {
			slices.Sort(lat[k])
			s.Buckets[k].P50, s.Buckets[k].P99 = Percentile(lat[k], 50), Percentile(lat[k], 99)
		}
	}
	s.Breakers = breakerBands(tl, start, end)
	return s
}

// breakerBands reads breaker states from state samples, or failing those
// from the breaker header of responses.
func breakerBands(tl *timeline.Timeline, start time.Time, end time.Duration) []BreakerBand {
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
	var points []StateSample
	for i := range tl.Requests {
		r := &tl.Requests[i]
		if s := r.Header(DefaultBreakerHeader); s != "" {
			points = append(points, StateSample{r.End(), s})
		}
	}
	if len(points) == 0 {
		return nil
	}
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
