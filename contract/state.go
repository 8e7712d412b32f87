package contract

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/chaoskit/chaoskit/timeline"
)

// Forms judged on the target's sampled state rather than on requests.
var (
	// increase("db.product_queries") <= 0.05 * count
	increaseForm = regexp.MustCompile(`^increase\(\s*"([^"]+)"\s*\)\s*` + opPat + `\s*(.+)$`)
	// breaker("db") never opens
	neverForm = regexp.MustCompile(`^breaker\(\s*"([^"]+)"\s*\)\s+never\s+opens$`)
)

// increaseCheck is `increase("PATH") OP EXPR`: how much a counter in the
// target's state grew over the window, against a bound that may use the
// window's request count and rate. It says what the requests cannot: how
// many calls reached a dependency ("while the breaker is open, the database
// is left alone"; "retries add at most 10 % to the dependency's traffic").
type increaseCheck struct {
	src   string
	path  string
	op    string
	bound *vm.Program
	text  string
}

// boundEnv is what the bound of an increase sees.
type boundEnv struct {
	// Count is the number of requests in the window; RPS their rate.
	Count   int     `expr:"count"`
	RPS     float64 `expr:"rps"`
	Seconds float64 `expr:"seconds"`
	// Baseline is the same figure in another phase (see baselinedCheck).
	Baseline func(string) float64 `expr:"baseline"`
}

func compileIncrease(src string, m []string) (check, error) {
	prog, err := expr.Compile(m[3], expr.Env(boundEnv{}), expr.AsFloat64())
	if err != nil {
		return nil, &SyntaxError{Column: strings.Index(src, m[3]) + 1, Msg: "bad bound: " + firstLine(err.Error()),
			Hint: "a bound is a number or an expression of count, rps and seconds, e.g. 1.1 * count"}
	}
	return &increaseCheck{src: src, path: m[1], op: m[2], bound: prog, text: m[3]}, nil
}

// stateValue returns the number at a dotted path in a state sample.
func stateValue(data map[string]any, path string) (float64, bool) {
	var cur any = data
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0, false
		}
		if cur, ok = m[part]; !ok {
			return 0, false
		}
	}
	switch v := cur.(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case string:
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	}
	return 0, false
}

type numSample struct {
	t time.Time
	v float64
}

func stateSamples(tl *timeline.Timeline, path string) []numSample {
	var out []numSample
	for _, e := range tl.Events {
		if e.Kind != timeline.State {
			continue
		}
		if v, ok := stateValue(e.Data, path); ok {
			out = append(out, numSample{e.Time, v})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].t.Before(out[j].t) })
	return out
}

func (c *increaseCheck) start(w *window) acc {
	return eventCheck(func() CheckResult { return c.judge(w) })
}

func (c *increaseCheck) judge(w *window) CheckResult {
	res := CheckResult{Expect: c.src}
	samples := stateSamples(w.tl, c.path)
	// The counter's value when the window opens is the last sample at or
	// before its start; its value at the end the last sample inside it.
	var first, last *numSample
	n := 0
	for i := range samples {
		s := &samples[i]
		switch {
		case !s.t.After(w.start):
			first = s
		case !s.t.After(w.end):
			if first == nil {
				first = s
			}
			last = s
			n++
		}
	}
	out, err := expr.Run(c.bound, w.boundEnv())
	bound, _ := out.(float64)
	res.Expected = boundText(c.op, c.text, bound)
	if err != nil {
		return inconclusive(res, "cannot compute the bound: "+err.Error())
	}
	if first == nil || last == nil || first == last {
		return inconclusive(res, fmt.Sprintf("the timeline holds fewer than two state samples with %q in the window; the target must serve it on its state endpoint", c.path))
	}
	times := make([]time.Time, len(samples))
	for i := range samples {
		times[i] = samples[i].t
	}
	if why := gapReason(fmt.Sprintf("the state samples with %q", c.path), times, w.start, w.end); why != "" {
		return inconclusive(res, why)
	}
	inc := last.v - first.v
	res.Samples = n
	res.Matched = int(inc)
	res.Measured = fmt.Sprintf("%s (from %s to %s over %s, %d requests)", fmtNum(inc), fmtNum(first.v), fmtNum(last.v), fmtDur(last.t.Sub(first.t)), w.n)
	ok := compare(inc, c.op, bound)
	res.Outcome = outcome(ok)
	res.measured(inc, c.op, bound, "")
	return res
}

// neverOpensCheck is `breaker("db") never opens`: no state sample in the
// window shows the breaker open or half-open. It is how a scenario says a
// rule must not trip ("30 % errors stay under the 50 % error-rate
// threshold").
type neverOpensCheck struct {
	src  string
	name string
}

func (c *neverOpensCheck) start(w *window) acc {
	return eventCheck(func() CheckResult { return c.judge(w) })
}

func (c *neverOpensCheck) judge(w *window) CheckResult {
	res := CheckResult{Expect: c.src, Expected: "closed throughout"}
	samples := BreakerSamples(w.tl, c.name)
	n := 0
	for _, s := range samples {
		if s.Time.Before(w.start) || s.Time.After(w.end) {
			continue
		}
		n++
		if s.State != "closed" {
			res.Samples = n
			res.Measured = fmt.Sprintf("%s at +%s", s.State, fmtDur(s.Time.Sub(w.start)))
			res.Outcome, res.Margin = Fail, -100
			return res
		}
	}
	res.Samples = n
	if n == 0 {
		return inconclusive(res, fmt.Sprintf("no state sample of breaker %q in the window; the target must serve its state endpoint", c.name))
	}
	times := make([]time.Time, 0, len(samples))
	for _, s := range samples {
		times = append(times, s.Time)
	}
	if why := gapReason(fmt.Sprintf("the samples of breaker %q", c.name), times, w.start, w.end); why != "" {
		// It may have opened in the gap.
		res.Measured = fmt.Sprintf("closed in all %d samples", n)
		return inconclusive(res, why)
	}
	res.Measured = fmt.Sprintf("closed in all %d samples", n)
	res.Outcome, res.Margin = Pass, 100
	return res
}

// boundEnv is what a bound written with count, rps and seconds reads in
// the window: its requests, their rate and its length.
func (w *window) boundEnv() boundEnv {
	secs := w.end.Sub(w.start).Seconds()
	env := boundEnv{Count: w.n, Seconds: secs}
	if secs > 0 {
		env.RPS = float64(w.n) / secs
	}
	return env
}
