// Package sketch holds latencies in constant memory for percentiles: the
// judge's windows (contract) and the report chart's time buckets.
package sketch

import (
	"math"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency percentiles in constant memory. A window of up to exact
// requests keeps every latency and answers with the exact nearest-rank
// percentile, as it always did. A larger one moves its latencies into an
// HDR histogram (github.com/HdrHistogram/hdrhistogram-go, Gil Tene's
// High Dynamic Range histogram) with 3 significant digits from 1ns to an
// hour: the percentile it reports is the highest value equivalent to the
// nearest-rank one, so it is never below the true percentile and at most
// 1/1024 (≈0.1 %) above it. min, max and the mean stay exact at any size.
// docs/contracts.md states the bound.
const (
	// Exact and Digits are the judge's: up to Exact latencies kept, then
	// 3 significant digits.
	Exact  = 1 << 14
	Digits = 3
	// ChartExact and ChartDigits are a chart's buckets': they draw a
	// chart, not a verdict: fewer exact values and 2 significant digits
	// (at most 1/128, ≈0.8 %, above) keep ~120 of them small.
	ChartExact  = 1 << 10
	ChartDigits = 2
	sketchMax   = int64(time.Hour)
)

// Latencies accumulates latencies for percentiles.
type Latencies struct {
	limit, digits int
	exact         []time.Duration
	hist          *hdrhistogram.Histogram
	n             int64
	sum           time.Duration
	min, max      time.Duration
	sorted        bool
}

// New returns a sketch that keeps up to exact latencies, then moves them
// into a histogram of digits significant digits.
func New(exact, digits int) *Latencies { return &Latencies{limit: exact, digits: digits} }

// Add adds a latency.
func (l *Latencies) Add(d time.Duration) {
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

func (l *Latencies) record(d time.Duration) {
	_ = l.hist.RecordValue(min(max(int64(d), 1), sketchMax))
}

// Count is how many latencies were added.
func (l *Latencies) Count() int { return int(l.n) }

// Percentile is the p-th percentile (0 < p <= 100) by the nearest-rank
// method: exact while every latency is kept, else as the sketch bounds it.
func (l *Latencies) Percentile(p float64) time.Duration {
	if l.n == 0 {
		return 0
	}
	if l.hist == nil {
		if !l.sorted {
			slices.Sort(l.exact)
			l.sorted = true
		}
		return Nearest(l.exact, p)
	}
	// The histogram's rank is round(q·n) where nearest rank is ceil(p·n):
	// ask for the quantile whose rounded rank is the nearest rank.
	rank := math.Ceil(p/100*float64(l.n) - 1e-9)
	rank = min(max(rank, 1), float64(l.n))
	v := time.Duration(l.hist.ValueAtPercentile(100 * (rank - 0.25) / float64(l.n)))
	return min(max(v, l.min), l.max)
}

// Mean is the exact mean.
func (l *Latencies) Mean() time.Duration {
	if l.n == 0 {
		return 0
	}
	return l.sum / time.Duration(l.n)
}

// Min is the least latency added.
func (l *Latencies) Min() time.Duration { return l.min }

// Max is the greatest latency added.
func (l *Latencies) Max() time.Duration { return l.max }

// Nearest returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method.
func Nearest(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	// The epsilon keeps float error from pushing an exact rank up by one
	// (99.9% of 1000 is rank 999, not 1000).
	rank := int(math.Ceil(p/100*float64(len(sorted)) - 1e-9))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}
