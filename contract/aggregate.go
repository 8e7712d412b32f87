package contract

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
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

func (c *latencyCheck) measure(l *latencies) time.Duration {
	switch c.stat {
	case "min":
		return l.Min()
	case "max":
		return l.Max()
	case "med":
		return l.Percentile(50)
	case "avg", "mean":
		return l.Mean()
	}
	return l.Percentile(c.pct)
}

// latencyAcc keeps the window's latencies in a sketch and, as evidence,
// the first requests on the wrong side of the threshold.
type latencyAcc struct {
	c    *latencyCheck
	w    *window
	lat  *latencies
	viol []Violation
}

func (c *latencyCheck) start(w *window) acc { return &latencyAcc{c: c, w: w, lat: newLatencies()} }

func (a *latencyAcc) add(r *timeline.Request, in bool, k *classed) {
	if !in {
		return
	}
	a.lat.Add(r.Latency)
	if len(a.viol) < MaxViolations && !compare(float64(r.Latency), a.c.op, float64(a.c.want)) {
		a.viol = append(a.viol, a.w.violation(r, k))
	}
}

func (a *latencyAcc) figure() figure {
	f := figure{samples: a.lat.Count()}
	if f.samples == 0 {
		f.none = "no requests in the window"
		return f
	}
	got := a.c.measure(a.lat)
	f.v, f.shown = float64(got), fmtDur(got)
	return f
}

func (a *latencyAcc) result() CheckResult {
	c := a.c
	res := CheckResult{Expect: c.src, Expected: c.op + " " + c.wantText, Samples: a.lat.Count()}
	if a.lat.Count() == 0 {
		return noRequests(res)
	}
	got := c.measure(a.lat)
	res.Measured = fmtDur(got)
	res.measured(float64(got), c.op, float64(c.want), unitNanos)
	res.Outcome = outcome(compare(float64(got), c.op, float64(c.want)))
	if res.Outcome == Fail {
		// The evidence: the requests on the wrong side of the threshold.
		res.Violations = a.viol
	}
	return res
}

func noRequests(res CheckResult) CheckResult {
	res.Outcome, res.Measured, res.Reason = Inconclusive, "no requests", "no requests in the window"
	return res
}

// rateCheck is `rps >= 100` (requests per second of the window) or
// `count >= 50` (requests in it), and their `admitted` forms: the requests
// the service let in, judged on what chaoskit sent and what came back
// (any answer but 429 and 503, the statuses of a refusal; headers are not
// read), so that a limiter that misreports itself cannot pass.
type rateCheck struct {
	src      string
	what     string
	op       string
	want     float64
	wantText string
}

// rateAcc counts the window's requests; for the admitted forms, the
// admitted ones and those that got no response (admitted or refused,
// unknown).
type rateAcc struct {
	c       *rateCheck
	w       *window
	n       int
	unknown int
}

func (c *rateCheck) start(w *window) acc { return &rateAcc{c: c, w: w} }

func (c *rateCheck) admitted() bool { return strings.HasPrefix(c.what, "admitted") }

// refused says whether an answer is a refusal: the statuses a rate limiter
// or a load shedder answers with.
func refused(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

func (a *rateAcc) add(q *timeline.Request, in bool, _ *classed) {
	if !in {
		return
	}
	switch {
	case !a.c.admitted():
		a.n++
	case q.Status == 0:
		a.unknown++
	case !refused(q.Status):
		a.n++
	}
}

func (a *rateAcc) perWindow(n int) (float64, string) {
	if !strings.HasSuffix(a.c.what, "rps") {
		return float64(n), strconv.Itoa(n)
	}
	v := float64(n) / a.w.end.Sub(a.w.start).Seconds()
	return v, fmtNum(v) + "/s"
}

func (a *rateAcc) figure() figure {
	v, shown := a.perWindow(a.n)
	return figure{v: v, shown: shown, samples: a.n}
}

func (a *rateAcc) result() CheckResult {
	c := a.c
	f := a.figure()
	res := CheckResult{Expect: c.src, Expected: c.op + " " + c.wantText, Samples: a.n + a.unknown, Measured: f.shown}
	unit := UnitCount
	if strings.HasSuffix(c.what, "rps") {
		unit = ""
	}
	res.measured(f.v, c.op, c.want, unit)
	lo := compare(f.v, c.op, c.want)
	if a.unknown == 0 {
		res.Outcome = outcome(lo)
		return res
	}
	// Requests without a response may each have been admitted or refused:
	// the figure lies between the admitted ones alone and all of them, and
	// the verdict is pass or fail only when both ends agree.
	hv, hshown := a.perWindow(a.n + a.unknown)
	if hi := compare(hv, c.op, c.want); lo == hi {
		res.Outcome = outcome(lo)
		return res
	}
	res.Outcome = Inconclusive
	res.Measured = f.shown + " to " + hshown
	res.Reason = fmt.Sprintf("%d requests got no response, admitted or refused unknown: %s is between %s and %s", a.unknown, c.what, f.shown, hshown)
	return res
}

// shareCheck is a share of the window's requests of a class
// (`fallback >= 99%`, `fallback("cache") >= 90%`) or with a status
// (`status 5xx <= 1%`).
type shareCheck struct {
	src      string
	class    Class
	source   string
	status   *StatusRange
	op       string
	want     float64
	wantText string
}

func (c *shareCheck) in(r *timeline.Request, k *classed) bool {
	if c.status != nil {
		return c.status.Has(r.Status)
	}
	cl, src := k.get()
	return cl == c.class && (c.source == "" || src == c.source)
}

// shareAcc counts the window's requests and those in the set.
type shareAcc struct {
	c     *shareCheck
	w     *window
	n, in int
	viol  []Violation
}

func (c *shareCheck) start(w *window) acc { return &shareAcc{c: c, w: w} }

func (a *shareAcc) add(r *timeline.Request, in bool, k *classed) {
	if !in {
		return
	}
	a.n++
	// A lower bound is broken by the requests outside the set, an upper
	// bound by those inside it.
	lower := a.c.op == ">" || a.c.op == ">="
	isIn := a.c.in(r, k)
	if isIn {
		a.in++
	}
	if isIn != lower && len(a.viol) < MaxViolations {
		a.viol = append(a.viol, a.w.violation(r, k))
	}
}

func (a *shareAcc) figure() figure {
	f := figure{samples: a.n, matched: a.in, viol: a.viol}
	if a.n == 0 {
		f.none = "no requests in the window"
		return f
	}
	f.v = 100 * float64(a.in) / float64(a.n)
	f.shown = fmt.Sprintf("%s (%d/%d)", formatPct(f.v), a.in, a.n)
	return f
}

func (a *shareAcc) result() CheckResult {
	c := a.c
	res := CheckResult{Expect: c.src, Expected: c.op + " " + c.wantText, Samples: a.n}
	if a.n == 0 {
		return noRequests(res)
	}
	share := 100 * float64(a.in) / float64(a.n)
	res.Matched = a.in
	res.Measured = fmt.Sprintf("%s (%d/%d)", formatPct(share), a.in, a.n)
	res.measured(share, c.op, c.want, UnitPercent)
	res.Outcome = outcome(compare(share, c.op, c.want))
	if res.Outcome != Pass {
		res.Violations = a.viol
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

// staleAcc tracks the oldest copy served in the window.
type staleAcc struct {
	c        *staleCheck
	w        *window
	res      CheckResult
	oldest   time.Duration
	bad      int
	firstBad error
	// noAge counts fallback answers that state no age at all.
	noAge int
}

func (c *staleCheck) start(w *window) acc {
	return &staleAcc{c: c, w: w, res: CheckResult{Expect: c.src, Expected: c.op + " " + c.wantText}}
}

func (a *staleAcc) add(r *timeline.Request, in bool, k *classed) {
	if !in {
		return
	}
	res := &a.res
	age, ok, err := a.w.spec.Classify.Age(r)
	if err != nil {
		// A copy of unknown age may be older than any bound.
		res.Samples++
		if a.bad++; a.firstBad == nil {
			a.firstBad = err
		}
		if len(res.Violations) < MaxViolations {
			v := a.w.violation(r, k)
			v.Detail = err.Error()
			res.Violations = append(res.Violations, v)
		}
		return
	}
	if !ok {
		if c, _ := k.get(); c == Fallback {
			a.noAge++
		}
		return
	}
	res.Samples++
	a.oldest = max(a.oldest, age)
	if !compare(float64(age), a.c.op, float64(a.c.want)) && len(res.Violations) < MaxViolations {
		v := a.w.violation(r, k)
		v.Detail = "served a copy " + fmtDur(age) + " old"
		res.Violations = append(res.Violations, v)
	}
}

func (a *staleAcc) result() CheckResult {
	res, c := a.res, a.c
	if res.Samples == 0 && a.noAge > 0 {
		// Fallbacks answered, and none said how old it was: they may be
		// copies of any age.
		res.Measured = fmt.Sprintf("no age stated by %d fallback answers", a.noAge)
		hdr := a.w.spec.Classify.AgeHeader
		if hdr == "" {
			hdr = "none named"
		}
		return inconclusive(res, fmt.Sprintf("%d fallback answers in the window and none states an age (age header %s): how old the copies served were is unknown; name the service's header in classify.age_header",
			a.noAge, hdr))
	}
	if res.Samples == 0 {
		// Nothing served from a copy cannot serve a stale one.
		res.Outcome, res.Measured, res.Margin = Pass, "no copies served", 100
		return res
	}
	if a.bad > 0 {
		res.Outcome, res.Margin = Fail, -100
		res.Measured = fmt.Sprintf("unknown: %d of %d copies state no age (%v)", a.bad, res.Samples, a.firstBad)
		return res
	}
	res.Measured = fmt.Sprintf("%s oldest of %d copies", fmtDur(a.oldest), res.Samples)
	res.measured(float64(a.oldest), c.op, float64(c.want), unitNanos)
	res.Outcome = outcome(compare(float64(a.oldest), c.op, float64(c.want)))
	return res
}
