// Package dist holds the delay distributions of chaoskit's latency faults
// (a marker's latency, a proxy's latency, an HTTP proxy's delay): fixed,
// uniform, normal, log-normal given by its median and 99th percentile, and
// a histogram of weighted buckets. A Dist is plain data with a one-line
// text form (Parse, String) that travels in a failpoint term and in a
// toxic's attributes, so the process that applies the delay draws it from
// the same distribution the scenario wrote.
//
// The text forms:
//
//	200ms                          fixed
//	uniform/180ms/220ms            uniform between min and max
//	normal/20ms/5ms                normal with mean and standard deviation
//	lognormal/20ms/200ms           log-normal with median and p99
//	histogram/10ms=90/50ms=9/1s=1  buckets: upper bound = weight
//
// A histogram's bucket holds the delays from the previous bound (0 for the
// first) up to its own, drawn uniformly inside it, with a chance
// proportional to its weight. Draws below zero (a normal's left tail) are
// zero.
package dist

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"strings"
	"time"
)

// Kind names a distribution.
type Kind string

// The distributions.
const (
	Fixed     Kind = "fixed"
	Uniform   Kind = "uniform"
	Normal    Kind = "normal"
	LogNormal Kind = "lognormal"
	Histogram Kind = "histogram"
)

// Kinds lists every kind, in the order documentation shows them.
var Kinds = []Kind{Fixed, Uniform, Normal, LogNormal, Histogram}

// MaxBuckets bounds a histogram, so that its text form fits in a failpoint
// term and a toxic's attributes.
const MaxBuckets = 256

// Bucket is one bucket of a histogram: delays up to Le, with a chance
// proportional to Weight.
type Bucket struct {
	Le     time.Duration
	Weight float64
}

// Dist is a delay distribution. Which fields a kind reads:
//
//	Fixed:     A (the delay)
//	Uniform:   A (min), B (max)
//	Normal:    A (mean), B (standard deviation)
//	LogNormal: A (median), B (p99)
//	Histogram: Buckets, in increasing Le
type Dist struct {
	Kind    Kind
	A, B    time.Duration
	Buckets []Bucket
}

// z99 is the standard normal's 99th percentile: a log-normal's p99 is
// median·exp(σ·z99), so σ = ln(p99/median)/z99.
const z99 = 2.3263478740408408

// FieldError is a Dist that cannot work: Field names the setting at fault
// as a scenario spells it (median, p99, ...), Problem says what is wrong
// and Hint what would be right.
type FieldError struct {
	Field, Problem, Hint string
}

func (e *FieldError) Error() string {
	if e.Hint == "" {
		return e.Field + ": " + e.Problem
	}
	return e.Field + ": " + e.Problem + " (" + e.Hint + ")"
}

func fieldError(field, hint, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...), Hint: hint}
}

// Validate reports the first setting of d that cannot work, as a
// *FieldError, or nil.
func (d Dist) Validate() error {
	neg := func(field string, v time.Duration) error {
		if v < 0 {
			return fieldError(field, "0 or more, such as 20ms", "%s %v is negative", field, v)
		}
		return nil
	}
	switch d.Kind {
	case Fixed:
		if d.A <= 0 {
			return fieldError("value", "such as value: 200ms", "a fixed delay must be above 0, not %v", d.A)
		}
	case Uniform:
		if err := neg("min", d.A); err != nil {
			return err
		}
		if d.B <= d.A {
			return fieldError("max", "above min, "+d.A.String(), "max %v is not above min %v", d.B, d.A)
		}
	case Normal:
		if d.A <= 0 {
			return fieldError("mean", "such as mean: 20ms", "mean %v must be above 0", d.A)
		}
		if err := neg("stddev", d.B); err != nil {
			return err
		}
	case LogNormal:
		if d.A <= 0 {
			return fieldError("median", "such as median: 20ms", "median %v must be above 0", d.A)
		}
		if d.B <= d.A {
			return fieldError("p99", "a p99 above the median "+d.A.String()+"; for one delay, write type: fixed", "p99 %v is not above the median %v", d.B, d.A)
		}
	case Histogram:
		if len(d.Buckets) == 0 {
			return fieldError("file", "lines such as \"10ms 90\": a bucket's upper bound and its weight", "a histogram needs at least one bucket")
		}
		if len(d.Buckets) > MaxBuckets {
			return fieldError("file", fmt.Sprintf("merge buckets: at most %d", MaxBuckets), "a histogram of %d buckets is too large", len(d.Buckets))
		}
		var prev time.Duration
		var total float64
		for i, b := range d.Buckets {
			if b.Le <= prev && !(i == 0 && b.Le == 0) {
				return fieldError("file", "bounds in increasing order, each above 0", "bucket %d's bound %v is not above %v", i+1, b.Le, prev)
			}
			if !(b.Weight >= 0) || math.IsInf(b.Weight, 0) {
				return fieldError("file", "a weight of 0 or more", "bucket %d's weight %v is not a count", i+1, b.Weight)
			}
			prev, total = b.Le, total+b.Weight
		}
		if total <= 0 {
			return fieldError("file", "give some bucket a weight above 0", "every bucket's weight is 0")
		}
	default:
		return fieldError("type", "one of "+kindList(), "unknown distribution %q", d.Kind)
	}
	return nil
}

func kindList() string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// String returns d's text form, which Parse reads back.
func (d Dist) String() string {
	switch d.Kind {
	case Fixed:
		return d.A.String()
	case Uniform, Normal, LogNormal:
		return string(d.Kind) + "/" + d.A.String() + "/" + d.B.String()
	case Histogram:
		var b strings.Builder
		b.WriteString(string(Histogram))
		for _, k := range d.Buckets {
			b.WriteString("/" + k.Le.String() + "=" + strconv.FormatFloat(k.Weight, 'g', -1, 64))
		}
		return b.String()
	}
	return string(d.Kind)
}

// Describe says what d is in a report's words: "lognormal median 20ms p99
// 200ms".
func (d Dist) Describe() string {
	switch d.Kind {
	case Fixed:
		return d.A.String()
	case Uniform:
		return "uniform " + d.A.String() + "–" + d.B.String()
	case Normal:
		return "normal mean " + d.A.String() + " stddev " + d.B.String()
	case LogNormal:
		return "lognormal median " + d.A.String() + " p99 " + d.B.String()
	case Histogram:
		return fmt.Sprintf("histogram of %d buckets up to %v", len(d.Buckets), d.Buckets[len(d.Buckets)-1].Le)
	}
	return string(d.Kind)
}

// Parse reads a distribution's text form (see the package doc) and
// validates it.
func Parse(s string) (Dist, error) {
	parts := strings.Split(s, "/")
	dur := func(p string) (time.Duration, error) {
		v, err := time.ParseDuration(p)
		if err != nil {
			return 0, fmt.Errorf("distribution %q: bad duration %q", s, p)
		}
		return v, nil
	}
	var d Dist
	switch k := Kind(parts[0]); {
	case len(parts) == 1:
		v, err := dur(parts[0])
		if err != nil {
			return Dist{}, fmt.Errorf("%q is neither a duration such as 200ms nor a distribution such as lognormal/20ms/200ms", s)
		}
		d = Dist{Kind: Fixed, A: v}
	case k == Uniform || k == Normal || k == LogNormal:
		if len(parts) != 3 {
			return Dist{}, fmt.Errorf("distribution %q takes two durations, as in %s/20ms/200ms", s, k)
		}
		a, err := dur(parts[1])
		if err != nil {
			return Dist{}, err
		}
		b, err := dur(parts[2])
		if err != nil {
			return Dist{}, err
		}
		d = Dist{Kind: k, A: a, B: b}
	case k == Histogram:
		d.Kind = Histogram
		for _, p := range parts[1:] {
			le, w, ok := strings.Cut(p, "=")
			if !ok {
				return Dist{}, fmt.Errorf("distribution %q: bucket %q is not BOUND=WEIGHT", s, p)
			}
			v, err := dur(le)
			if err != nil {
				return Dist{}, err
			}
			wf, err := strconv.ParseFloat(w, 64)
			if err != nil {
				return Dist{}, fmt.Errorf("distribution %q: bad weight %q", s, w)
			}
			d.Buckets = append(d.Buckets, Bucket{Le: v, Weight: wf})
		}
	default:
		return Dist{}, fmt.Errorf("unknown distribution %q, want one of %s", parts[0], kindList())
	}
	if err := d.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return Dist{}, fmt.Errorf("distribution %q: %s", s, fe.Problem)
		}
		return Dist{}, err
	}
	return d, nil
}

// ParseHistogram reads a histogram file: one bucket a line, its upper
// bound (a duration) and its weight (a count, say how many requests took
// that long), separated by blanks; blank lines and lines starting with #
// are skipped. The file is data: nothing in it is run or followed.
func ParseHistogram(data []byte) (Dist, error) {
	d := Dist{Kind: Histogram}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return Dist{}, fmt.Errorf("line %d: want a bound and a weight, such as \"10ms 90\"", i+1)
		}
		le, err := time.ParseDuration(f[0])
		if err != nil {
			return Dist{}, fmt.Errorf("line %d: bad duration %q", i+1, f[0])
		}
		w, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return Dist{}, fmt.Errorf("line %d: bad weight %q", i+1, f[1])
		}
		if len(d.Buckets) == MaxBuckets {
			return Dist{}, fmt.Errorf("more than %d buckets; merge some", MaxBuckets)
		}
		d.Buckets = append(d.Buckets, Bucket{Le: le, Weight: w})
	}
	if err := d.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return Dist{}, errors.New(fe.Problem)
		}
		return Dist{}, err
	}
	return d, nil
}

// Sample draws one delay from d, never below zero. d must be valid.
func (d Dist) Sample() time.Duration {
	return d.quantile(rand.Float64())
}

// Quantile returns d's q-quantile (q in [0,1)), never below zero. For a
// histogram it interpolates inside the bucket, as Sample draws.
func (d Dist) Quantile(q float64) time.Duration { return d.quantile(q) }

func (d Dist) quantile(u float64) time.Duration {
	var v float64
	switch d.Kind {
	case Fixed:
		return d.A
	case Uniform:
		v = float64(d.A) + u*float64(d.B-d.A)
	case Normal:
		v = float64(d.A) + float64(d.B)*normQuantile(u)
	case LogNormal:
		sigma := math.Log(float64(d.B)/float64(d.A)) / z99
		v = float64(d.A) * math.Exp(sigma*normQuantile(u))
	case Histogram:
		var total float64
		for _, b := range d.Buckets {
			total += b.Weight
		}
		target := u * total
		var lo time.Duration
		for _, b := range d.Buckets {
			if target < b.Weight {
				v = float64(lo) + target/b.Weight*float64(b.Le-lo)
				return time.Duration(v)
			}
			target -= b.Weight
			lo = b.Le
		}
		return d.Buckets[len(d.Buckets)-1].Le
	}
	if v < 0 || math.IsNaN(v) {
		return 0
	}
	if v > math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(v)
}

// normQuantile is the standard normal's inverse CDF, √2·erfinv(2u−1).
func normQuantile(u float64) float64 {
	if u <= 0 {
		return math.Inf(-1)
	}
	return math.Sqrt2 * math.Erfinv(2*u-1)
}
