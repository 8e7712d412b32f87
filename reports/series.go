package reports

import (
	"sort"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/internal/sketch"
	"github.com/chaoskit/chaoskit/timeline"
)

// Series are a run's figures per time bucket, for the HTML chart. Times
// are offsets from the start of the first phase.
type Series struct {
	Bucket  time.Duration
	End     time.Duration
	Buckets []Bucket
	// Breakers are the breaker states over time, one band per breaker.
	Breakers []BreakerBand
}

// Bucket holds the requests sent in [At, At+Bucket).
type Bucket struct {
	At       time.Duration
	Requests int
	P50, P99 time.Duration
	Classes  map[contract.Class]int
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

// SeriesBuilder builds a run's Series from its requests as the judge
// streams them past (contract.JudgeOptions.Each is its Add), so the run is
// read once.
type SeriesBuilder struct {
	tl            *timeline.Timeline
	start         time.Time
	s             Series
	acc           []bucketAcc
	breakerHeader string
	// points are the breaker states read from response headers, where
	// they change, when the run's samples state no breaker.
	points []contract.StateSample
}

// bucketAcc counts a bucket's classes in an array (the place of a class
// in contract.Classes; the last for any other), turned into its map at the
// end: a map update per request is what costs.
type bucketAcc struct {
	lat     *sketch.Latencies
	classes []int
	other   contract.Class
}

// NewSeries returns the builder of the series of the run tl records (its
// events; the requests come through Add), whose responses cls reads.
func NewSeries(tl *timeline.Timeline, cls contract.Classification) *SeriesBuilder {
	b := &SeriesBuilder{tl: tl, start: tl.Meta.Start}
	phases := tl.Phases()
	if len(phases) > 0 {
		b.start = phases[0].Start
	}
	var end time.Duration
	for _, p := range phases {
		end = max(end, p.End.Sub(b.start))
	}
	s := &b.s
	s.Bucket, s.End = bucketFor(end), end
	n := int(end/s.Bucket) + 1
	s.Buckets = make([]Bucket, n)
	b.acc = make([]bucketAcc, n)
	for i := range s.Buckets {
		s.Buckets[i] = Bucket{At: time.Duration(i) * s.Bucket, Classes: map[contract.Class]int{}}
		b.acc[i] = bucketAcc{lat: sketch.New(sketch.ChartExact, sketch.ChartDigits), classes: make([]int, len(contract.Classes)+1)}
	}
	if names, _ := contract.BreakerNames(tl); len(names) == 0 {
		b.breakerHeader = cls.BreakerHeader
	}
	return b
}

// Add counts request r, of class c.
func (b *SeriesBuilder) Add(r *timeline.Request, c contract.Class) {
	if at := r.Time.Sub(b.start); at >= 0 && at <= b.s.End {
		i := int(at / b.s.Bucket)
		b.s.Buckets[i].Requests++
		a := &b.acc[i]
		k := classIndex(c)
		if k == len(contract.Classes) {
			a.other = c
		}
		a.classes[k]++
		a.lat.Add(r.Latency)
	}
	if b.breakerHeader != "" {
		if st := r.Header(b.breakerHeader); st != "" {
			if n := len(b.points); n == 0 || b.points[n-1].State != st {
				b.points = append(b.points, contract.StateSample{Time: r.End(), State: st})
			}
		}
	}
}

// Series returns the series of the requests added.
func (b *SeriesBuilder) Series() *Series {
	for i := range b.acc {
		a, bk := &b.acc[i], &b.s.Buckets[i]
		for k, n := range a.classes {
			if n == 0 {
				continue
			}
			c := a.other
			if k < len(contract.Classes) {
				c = contract.Classes[k]
			}
			bk.Classes[c] += n
		}
		if a.lat.Count() > 0 {
			bk.P50, bk.P99 = a.lat.Percentile(50), a.lat.Percentile(99)
		}
	}
	b.s.Breakers = b.bands()
	return &b.s
}

func classIndex(c contract.Class) int {
	for i, x := range contract.Classes {
		if x == c {
			return i
		}
	}
	return len(contract.Classes)
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

// bands reads breaker states from state or metric samples, or failing
// those from the breaker header of responses.
func (b *SeriesBuilder) bands() []BreakerBand {
	start, end := b.start, b.s.End
	if names, from := contract.BreakerNames(b.tl); len(names) > 0 {
		bands := make([]BreakerBand, 0, len(names))
		for _, n := range names {
			bands = append(bands, BreakerBand{Name: n, From: from, Spans: spans(contract.BreakerSamples(b.tl, n), start, end)})
		}
		return bands
	}
	if len(b.points) == 0 {
		return nil
	}
	// The points are where the header changed in the order responses
	// completed; in time order, spans merges what repeats.
	points := b.points
	sort.SliceStable(points, func(i, j int) bool { return points[i].Time.Before(points[j].Time) })
	return []BreakerBand{{Name: "breaker", From: "response header", Spans: spans(points, start, end)}}
}

// spans turns state points into spans, each state lasting until the next
// differing point, the last until end.
func spans(points []contract.StateSample, start time.Time, end time.Duration) []StateSpan {
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
