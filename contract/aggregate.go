package contract

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// latencyCheck is `p99 latency < 150ms` (also p(99), avg, med, min, max).
// Percentiles use the nearest-rank method over every request in the
// window; a request that got no response counts with the time it waited.
type latencyCheck struct {
	src      string
	pct      float64
	stat     string
	op       string
	want     time.Duration
	wantText string
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	// The epsilon keeps float error from pushing an exact rank up by one
	// (99.9% of 1000 is rank 999, not 1000).
	rank := int(math.Ceil(p/100*float64(len(sorted)) - 1e-9))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func sortedLatencies(reqs []timeline.Request) []time.Duration {
	out := make([]time.Duration, len(reqs))
	for i := range reqs {
		out[i] = reqs[i].Latency
	}
	slices.Sort(out)
	return out
}

func (c *latencyCheck) measure(sorted []time.Duration) time.Duration {
	switch c.stat {
	case "min":
		return sorted[0]
	case "max":
		return sorted[len(sorted)-1]
	case "med":
		return Percentile(sorted, 50)
	case "avg", "mean":
		var sum time.Duration
		for _, d := range sorted {
			sum += d
		}
		return sum / time.Duration(len(sorted))
	}
	return Percentile(sorted, c.pct)
}

func (c *latencyCheck) evaluate(w *window) CheckResult {
	res := CheckResult{Expect: c.src, Expected: c.op + " " + c.wantText, Samples: len(w.reqs)}
	if len(w.reqs) == 0 {
		return noRequests(res)
	}
	got := c.measure(sortedLatencies(w.reqs))
	res.Measured = fmtDur(got)
	res.Margin = margin(float64(got), c.op, float64(c.want))
	res.Outcome = outcome(compare(float64(got), c.op, float64(c.want)))
	if res.Outcome == Fail {
		// The evidence: the requests on the wrong side of the threshold.
		for i := range w.reqs {
			if !compare(float64(w.reqs[i].Latency), c.op, float64(c.want)) {
				res.Violations = append(res.Violations, w.violation(i))
				if len(res.Violations) == MaxViolations {
					break
				}
			}
		}
	}
	return res
}

func noRequests(res CheckResult) CheckResult {
	res.Outcome, res.Measured, res.Reason = Inconclusive, "no requests", "no requests in the window"
	return res
}

// rateCheck is `rps >= 100` (requests per second of the window) or
// `count >= 50` (requests in it).
type rateCheck struct {
	src      string
	what     string
	op       string
	want     float64
	wantText string
}

func (c *rateCheck) evaluate(w *window) CheckResult {
	res := CheckResult{Expect: c.src, Expected: c.op + " " + c.wantText, Samples: len(w.reqs)}
	got := float64(len(w.reqs))
	res.Measured = strconv.Itoa(len(w.reqs))
	if c.what == "rps" {
		got /= w.end.Sub(w.start).Seconds()
		res.Measured = strconv.FormatFloat(got, 'f', 1, 64) + "/s"
	}
	res.Margin = margin(got, c.op, c.want)
	res.Outcome = outcome(compare(got, c.op, c.want))
	return res
}

// shareCheck is a share of the window's requests of a class
// (`fallback >= 99%`, `fallback("cache") >= 90%`) or with a status
// (`status 5xx <= 1%`).
type shareCheck struct {
	src    string
	class  Class
	source string
	status *StatusRange
	op     string
	want   float64
}

func (c *shareCheck) in(w *window, i int) bool {
	if c.status != nil {
		return c.status.Has(w.reqs[i].Status)
	}
	return w.classes[i] == c.class && (c.source == "" || w.sources[i] == c.source)
}

func (c *shareCheck) evaluate(w *window) CheckResult {
	res := CheckResult{Expect: c.src, Expected: c.op + " " + formatPct(c.want), Samples: len(w.reqs)}
	if len(w.reqs) == 0 {
		return noRequests(res)
	}
	// A lower bound is broken by the requests outside the set, an upper
	// bound by those inside it.
	lower := c.op == ">" || c.op == ">="
	n := 0
	for i := range w.reqs {
		in := c.in(w, i)
		if in {
			n++
		}
		if in != lower && len(res.Violations) < MaxViolations {
			res.Violations = append(res.Violations, w.violation(i))
		}
	}
	share := 100 * float64(n) / float64(len(w.reqs))
	res.Matched = n
	res.Measured = fmt.Sprintf("%s (%d/%d)", formatPct(share), n, len(w.reqs))
	res.Margin = margin(share, c.op, c.want)
	res.Outcome = outcome(compare(share, c.op, c.want))
	if res.Outcome == Pass {
		res.Violations = nil
	}
	return res
}

// staleCheck is `stale <= 30s`: no served copy in the window is older.
type staleCheck struct {
	src      string
	op       string
	want     time.Duration
	wantText string
}

func (c *staleCheck) evaluate(w *window) CheckResult {
	res := CheckResult{Expect: c.src, Expected: c.op + " " + c.wantText}
	var oldest time.Duration
	var bad int
	var firstBad error
	for i := range w.reqs {
		age, ok, err := w.spec.Classify.Age(&w.reqs[i])
		if err != nil {
			// A copy of unknown age may be older than any bound.
			res.Samples++
			if bad++; firstBad == nil {
				firstBad = err
			}
			if len(res.Violations) < MaxViolations {
				v := w.violation(i)
				v.Detail = err.Error()
				res.Violations = append(res.Violations, v)
			}
			continue
		}
		if !ok {
			continue
		}
		res.Samples++
		oldest = max(oldest, age)
		if !compare(float64(age), c.op, float64(c.want)) && len(res.Violations) < MaxViolations {
			v := w.violation(i)
			v.Detail = "served a copy " + fmtDur(age) + " old"
			res.Violations = append(res.Violations, v)
		}
	}
	if res.Samples == 0 {
		// Nothing served from a copy cannot serve a stale one.
		res.Outcome, res.Measured, res.Margin = Pass, "no copies served", 100
		return res
	}
	if bad > 0 {
		res.Outcome, res.Margin = Fail, -100
		res.Measured = fmt.Sprintf("unknown: %d of %d copies state no age (%v)", bad, res.Samples, firstBad)
		return res
	}
	res.Measured = fmt.Sprintf("%s oldest of %d copies", fmtDur(oldest), res.Samples)
	res.Margin = margin(float64(oldest), c.op, float64(c.want))
	res.Outcome = outcome(compare(float64(oldest), c.op, float64(c.want)))
	return res
}
