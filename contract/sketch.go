package contract

import (
	"math"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency percentiles in constant memory. A window of up to exactLatencies
// requests keeps every latency and answers with the exact nearest-rank
// percentile, as it always did. A larger one moves its latencies into an
// HDR histogram (github.com/HdrHistogram/hdrhistogram-go, Gil Tene's
// High Dynamic Range histogram) with 3 significant digits from 1ns to an
// hour: the percentile it reports is the highest value equivalent to the
// nearest-rank one, so it is never below the true percentile and at most
// 1/1024 (≈0.1 %) above it. min, max and the mean stay exact at any size.
// docs/contracts.md states the bound.
const (
	exactLatencies = 1 << 14
	sketchDigits   = 3
	// Series buckets draw a chart, not a verdict: fewer exact values and
	// 2 significant digits (at most 1/128, ≈0.8 %, above) keep ~120 of
	// them small.
	bucketExact  = 1 << 10
	bucketDigits = 2
	sketchMax    = int64(time.Hour)
)

// latencies accumulates latencies for percentiles.
type latencies struct {
	limit, digits int
	exact         []time.Duration
	hist          *hdrhistogram.Histogram
	n             int64
	sum           time.Duration
	min, max      time.Duration
	sorted        bool
}

func newLatencies() *latencies { return &latencies{limit: exactLatencies, digits: sketchDigits} }

func newBucketLatencies() *latencies { return &latencies{limit: bucketExact, digits: bucketDigits} }

func (l *latencies) add(d time.Duration) {
	if l.n == 0 || d < l.min {
		l.min = d
	}
	if l.n == 0 || d > l.max {
		l.max = d
	}
	l.n++
	l.sum += d
	if l.hist == nil {
		l.exact = append(l.exact, d)
		l.sorted = false
		if len(l.exact) <= l.limit {
			return
		}
		l.hist = hdrhistogram.New(1, sketchMax, l.digits)
		for _, v := range l.exact {
			l.record(v)
		}
		l.exact = nil
		return
	}
	l.record(d)
}

func (l *latencies) record(d time.Duration) {
	_ = l.hist.RecordValue(min(max(int64(d), 1), sketchMax))
}

// count is how many latencies were added.
func (l *latencies) count() int { return int(l.n) }

// percentile is the p-th percentile (0 < p <= 100) by the nearest-rank
// method: exact while every latency is kept, else as the sketch bounds it.
func (l *latencies) percentile(p float64) time.Duration {
	if l.n == 0 {
		return 0
	}
	if l.hist == nil {
		if !l.sorted {
			slices.Sort(l.exact)
			l.sorted = true
		}
		return Percentile(l.exact, p)
	}
	// The histogram's rank is round(q·n) where nearest rank is ceil(p·n):
	// ask for the quantile whose rounded rank is the nearest rank.
	rank := math.Ceil(p/100*float64(l.n) - 1e-9)
	rank = min(max(rank, 1), float64(l.n))
	v := time.Duration(l.hist.ValueAtPercentile(100 * (rank - 0.25) / float64(l.n)))
	return min(max(v, l.min), l.max)
}

// mean is the exact mean.
func (l *latencies) mean() time.Duration {
	if l.n == 0 {
		return 0
	}
	return l.sum / time.Duration(l.n)
}
