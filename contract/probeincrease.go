package contract

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// probeIncreaseForm is `increase(probe("calls")) <= 1.2 * count`: how much
// a counter that chaoskit reads itself grew over the window, such as a
// dependency's own count of the requests it answered. It is how a
// scenario judges retry amplification from the upstream's view rather
// than from what the service says it sent.
var probeIncreaseForm = regexp.MustCompile(`^increase\(\s*probe\(\s*"([^"]+)"\s*\)\s*\)\s*` + opPat + `\s*(.+)$`)

// probeIncreaseCheck judges a probe's readings during the phases. A
// reading holds the counter at some moment between its Sent and its Time,
// so the growth inside the window is known to lie between two figures:
//
//   - at least the growth from the first reading asked for at or after
//     the window's start to the last one answered at or before its end
//     (none inside: zero), and
//   - at most the growth from the last reading answered at or before the
//     start to the first one asked for at or after the end.
//
// The expectation is judged on both ends, as lost_writes is: pass or fail
// when every figure in between gives the same answer, inconclusive when
// they disagree. Either edge reading missing or unknown, a counter that
// went down (a reset: the process that counts restarted, and its count
// before is lost), or readings that leave a gap in the window (a reset
// could hide there) make it inconclusive with the reason.
type probeIncreaseCheck struct {
	src   string
	name  string
	op    string
	bound *vm.Program
	text  string
}

func compileProbeIncrease(src string, m []string) (check, error) {
	if usesBaseline(m[3]) {
		return nil, &SyntaxError{Column: strings.Index(src, m[3]) + 1, Msg: `increase(probe(...)) is not compared with a baseline: its figure is known between two ends only`,
			Hint: "a bound is a number or an expression of count, rps and seconds, e.g. 1.2 * count"}
	}
	prog, err := expr.Compile(m[3], expr.Env(boundEnv{}), expr.AsFloat64())
	if err != nil {
		return nil, &SyntaxError{Column: strings.Index(src, m[3]) + 1, Msg: "bad bound: " + firstLine(err.Error()),
			Hint: "a bound is a number or an expression of count, rps and seconds, e.g. 1.2 * count"}
	}
	return &probeIncreaseCheck{src: src, name: m[1], op: m[2], bound: prog, text: m[3]}, nil
}

func (c *probeIncreaseCheck) start(w *window) acc {
	return eventCheck(func() CheckResult { return c.judge(w, ProbeSamples(w.tl, c.name)) })
}

func (c *probeIncreaseCheck) judge(w *window, samples []ProbeSample) CheckResult {
	res := CheckResult{Expect: c.src}
	out, err := expr.Run(c.bound, w.boundEnv())
	bound, _ := out.(float64)
	res.Expected = boundText(c.op, c.text, bound)
	if err != nil {
		return inconclusive(res, "cannot compute the bound: "+err.Error())
	}
	at := func(t time.Time) string {
		if t.Before(w.start) {
			return "-" + fmtDur(w.start.Sub(t))
		}
		return "+" + fmtDur(t.Sub(w.start))
	}
	// The edges: the last reading answered at or before the start, the
	// first asked for at or after the end.
	before, after := -1, -1
	for i, s := range samples {
		if !s.Time.After(w.start) {
			before = i
		}
		if after < 0 && !s.Sent.Before(w.end) {
			after = i
		}
	}
	switch {
	case before < 0:
		return inconclusive(res, fmt.Sprintf("probe %q has no reading at or before the window's start: what the counter held then is unknown", c.name))
	case after < 0:
		return inconclusive(res, fmt.Sprintf("probe %q has no reading at or after the window's end (+%s): what the counter held then is unknown", c.name, fmtDur(w.end.Sub(w.start))))
	case samples[before].Err != "":
		return inconclusive(res, fmt.Sprintf("probe %q could not be read at the window's start (%s): %s", c.name, at(samples[before].Time), samples[before].Err))
	case samples[after].Err != "":
		return inconclusive(res, fmt.Sprintf("probe %q could not be read at the window's end (%s): %s", c.name, at(samples[after].Time), samples[after].Err))
	}
	// The known readings from edge to edge, in order: a counter that
	// went down was reset, and what it counted before is lost.
	var known []ProbeSample
	for _, s := range samples[before : after+1] {
		if s.Err != "" {
			continue
		}
		if n := len(known); n > 0 && s.Value < known[n-1].Value {
			res.Measured = fmt.Sprintf("%s at %s, then %s at %s", fmtNum(known[n-1].Value), at(known[n-1].Time), fmtNum(s.Value), at(s.Time))
			return inconclusive(res, fmt.Sprintf("probe %q went down from %s to %s at %s: the counter was reset (the process that counts restarted?), and what it counted before is lost", c.name, fmtNum(known[n-1].Value), fmtNum(s.Value), at(s.Time)))
		}
		known = append(known, s)
	}
	res.Samples = len(known)
	times := make([]time.Time, len(known))
	for i, s := range known {
		times[i] = s.Time
	}
	if why := gapReason(fmt.Sprintf("the readings of probe %q", c.name), times, w.start, w.end); why != "" {
		return inconclusive(res, why)
	}
	first, last := known[0], known[len(known)-1]
	hi := last.Value - first.Value
	lo := 0.0
	var in []ProbeSample
	for _, s := range known {
		if !s.Sent.Before(w.start) && !s.Time.After(w.end) {
			in = append(in, s)
		}
	}
	if len(in) > 1 {
		lo = in[len(in)-1].Value - in[0].Value
	}
	shown := fmtNum(hi)
	if lo != hi {
		shown = fmtNum(lo) + " to " + fmtNum(hi)
	}
	res.Measured = fmt.Sprintf("%s (from %s at %s to %s at %s, %d readings, %d requests)", shown, fmtNum(first.Value), at(first.Time), fmtNum(last.Value), at(last.Time), len(known), w.n)
	o, v := intervalOutcome(lo, hi, c.op, bound)
	res.Matched = int(v)
	res.measured(v, c.op, bound, "")
	if o == Inconclusive {
		return inconclusive(res, fmt.Sprintf("the counter grew by %s to %s in the window (its readings bracket the edges, not meet them): one end holds %s %s and the other does not", fmtNum(lo), fmtNum(hi), c.op, fmtNum(bound)))
	}
	res.Outcome = o
	return res
}

// intervalOutcome judges a figure known to lie in [lo, hi] against op
// bound: pass when every value there holds, fail when none does,
// inconclusive otherwise. It returns the end the verdict rests on: the
// end nearest to breaking the bound when it passes or is unknown, the one
// nearest to keeping it when it fails.
func intervalOutcome(lo, hi float64, op string, bound float64) (Outcome, float64) {
	switch op {
	case "<", "<=", ">", ">=":
		worst, best := hi, lo // the end a ceiling breaks first
		if op == ">" || op == ">=" {
			worst, best = lo, hi
		}
		switch {
		case !compare(best, op, bound):
			return Fail, best
		case compare(worst, op, bound):
			return Pass, worst
		}
		return Inconclusive, worst
	}
	near := lo
	if math.Abs(hi-bound) < math.Abs(lo-bound) {
		near = hi
	}
	if inside := bound >= lo-1e-9 && bound <= hi+1e-9; lo == hi || !inside {
		return outcome(compare(near, op, bound)), near
	}
	return Inconclusive, near
}
