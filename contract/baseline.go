package contract

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/chaoskit/chaoskit/timeline"
)

// Baselines: any figure an aggregate measures — a latency percentile, rps,
// a class or status share, a metric form — can be bounded by the same
// figure in another phase of the same run, over the same requests:
//
//	p99 latency <= 1.5 * baseline("warmup")
//	rate(process_cpu_seconds_total) <= 2 * baseline("warmup") + 0.05
//	status 5xx <= baseline("warmup") + 1%
//
// baseline("phase") is the figure over that whole phase (no settle, until
// or last), with the contract's request filter and classification. A
// baseline the run cannot give (the phase did not run, fewer requests in
// it than min_samples, no metric samples) makes the expectation
// inconclusive with the reason.

// baselineCall matches baseline("phase").
var baselineCall = regexp.MustCompile(`\bbaseline\(\s*"([^"]*)"\s*\)`)

// shiftPhaseArg matches status_shift's phase argument.
var shiftPhaseArg = regexp.MustCompile(`\bstatus_shift\(\s*"[^"]*"\s*,\s*"([^"]*)"`)

// PhaseRef is a phase an expectation names, and the 1-based column of the
// name within the expectation.
type PhaseRef struct {
	Name   string
	Column int
}

// PhaseRefs returns the phases an expectation names: baseline("phase") in
// a bound or a predicate, and status_shift's baseline phase. A scenario
// that names a phase it does not have is invalid.
func PhaseRefs(expect string) []PhaseRef {
	var out []PhaseRef
	for _, re := range []*regexp.Regexp{baselineCall, shiftPhaseArg} {
		for _, m := range re.FindAllStringSubmatchIndex(expect, -1) {
			out = append(out, PhaseRef{Name: expect[m[2]:m[3]], Column: m[2] + 1})
		}
	}
	return out
}

// unit is what a figure measures, for its bound's literals and its text.
type unit int

const (
	unitNum unit = iota
	unitDur      // nanoseconds: duration literals in the bound are too
	unitPct      // percent: N% in the bound is N
	unitSec      // seconds: duration literals in the bound are too
)

// pctLit matches a share literal such as 1% or 2.5%.
var pctLit = regexp.MustCompile(`\b([0-9]+(?:\.[0-9]+)?)\s*%`)

// usesBaseline reports whether a bound reads a baseline.
func usesBaseline(text string) bool { return baselineCall.MatchString(text) }

// compileBound compiles a bound that reads baseline("phase"): an expr-lang
// expression over baseline, count, rps and seconds, its literals in the
// figure's unit.
func compileBound(src, text string, u unit) (*vm.Program, []string, error) {
	s := rewriteDurations(text)
	s = regexp.MustCompile(`duration\("([^"]+)"\)`).ReplaceAllStringFunc(s, func(m string) string {
		d, err := time.ParseDuration(strings.Replace(m[len(`duration("`):len(m)-2], "µs", "us", 1))
		if err != nil {
			return m
		}
		if u == unitSec {
			return strconv.FormatFloat(d.Seconds(), 'g', -1, 64)
		}
		return strconv.FormatInt(int64(d), 10)
	})
	if u == unitPct {
		s = pctLit.ReplaceAllString(s, "$1")
	}
	prog, err := expr.Compile(s, expr.Env(boundEnv{}), expr.AsFloat64())
	if err != nil {
		return nil, nil, &SyntaxError{Column: strings.Index(src, text) + 1, Msg: "bad bound: " + firstLine(err.Error()),
			Hint: `a bound with a baseline is an expression such as 1.5 * baseline("warmup") or baseline("warmup") + 50ms`}
	}
	var phases []string
	for _, m := range baselineCall.FindAllStringSubmatch(text, -1) {
		if !contains(phases, m[1]) {
			phases = append(phases, m[1])
		}
	}
	return prog, phases, nil
}

// figure is what an aggregate measured over one window.
type figure struct {
	v     float64
	shown string
	// samples are the requests (or metric samples) it rests on; none says
	// why there is no figure.
	samples int
	none    string
	// matched and viol are a share's members and evidence.
	matched int
	viol    []Violation
}

// figurer is an accumulator that gives its figure, whatever the bound.
type figurer interface {
	acc
	figure() figure
}

// figureAcc gives a figure computed from events alone.
type figureAcc func() figure

func (figureAcc) add(*timeline.Request, bool, *classed) {}
func (f figureAcc) figure() figure                      { return f() }
func (f figureAcc) result() CheckResult                 { return CheckResult{} }

// baselinedCheck is an aggregate whose bound reads baselines: inner
// measures the figure, over the window and over each baseline phase.
type baselinedCheck struct {
	src    string
	op     string
	text   string
	bound  *vm.Program
	phases []string
	u      unit
	inner  check
	// requests is set when the figure counts requests, so that a baseline
	// needs min_samples of them.
	requests bool
}

// newBaselined compiles an aggregate whose bound text reads a baseline.
func newBaselined(src, op, text string, u unit, inner check, requests bool) (check, error) {
	prog, phases, err := compileBound(src, text, u)
	if err != nil {
		return nil, err
	}
	return &baselinedCheck{src: src, op: op, text: text, bound: prog, phases: phases, u: u, inner: inner, requests: requests}, nil
}

type baseWindow struct {
	name string
	w    *window
	acc  figurer
}

type baselinedAcc struct {
	c      *baselinedCheck
	w      *window
	own    figurer
	bases  []baseWindow
	noBase string
}

func (c *baselinedCheck) start(w *window) acc {
	a := &baselinedAcc{c: c, w: w, own: c.inner.start(w).(figurer)}
	for _, p := range c.phases {
		bw, err := w.phaseWindow(p)
		if err != nil {
			if a.noBase == "" {
				a.noBase = fmt.Sprintf("baseline(%q): %v", p, err)
			}
			continue
		}
		a.bases = append(a.bases, baseWindow{p, bw, c.inner.start(bw).(figurer)})
	}
	return a
}

func (a *baselinedAcc) add(r *timeline.Request, in bool, k *classed) {
	a.own.add(r, in, k)
	for i := range a.bases {
		b := &a.bases[i]
		bin := b.w.contains(r)
		if bin {
			b.w.n++
		}
		b.acc.add(r, bin, k)
	}
}

func (a *baselinedAcc) result() CheckResult {
	c, w := a.c, a.w
	res := CheckResult{Expect: c.src, Expected: c.op + " " + c.text}
	if a.noBase != "" {
		return inconclusive(res, a.noBase)
	}
	figs := map[string]figure{}
	var shown []string
	for _, b := range a.bases {
		f := b.acc.figure()
		if f.none != "" {
			return inconclusive(res, fmt.Sprintf("baseline(%q) has no figure: %s", b.name, f.none))
		}
		if c.requests {
			min := w.spec.MinSamples
			if min <= 0 {
				min = defaultMinSamples
			}
			if b.w.n < min {
				return inconclusive(res, fmt.Sprintf("baseline(%q) rests on %d requests, fewer than min_samples %d", b.name, b.w.n, min))
			}
		}
		figs[b.name] = f
		shown = append(shown, b.name+": "+f.shown)
	}
	secs := w.end.Sub(w.start).Seconds()
	env := boundEnv{Count: w.n, Seconds: secs, Baseline: func(p string) float64 { return figs[p].v }}
	if secs > 0 {
		env.RPS = float64(w.n) / secs
	}
	out, err := expr.Run(c.bound, env)
	if err != nil {
		return inconclusive(res, "cannot compute the bound: "+err.Error())
	}
	bound, _ := out.(float64)
	// EXPECTED: the bound as written, the baselines put in, its value.
	filled := baselineCall.ReplaceAllStringFunc(c.text, func(m string) string {
		return c.u.format(figs[baselineCall.FindStringSubmatch(m)[1]].v)
	})
	res.Expected += " = " + filled
	if v := c.u.format(bound); v != filled {
		res.Expected += " = " + v
	}
	f := a.own.figure()
	res.Samples = f.samples
	if f.none != "" {
		return inconclusive(res, f.none)
	}
	res.Measured = f.shown + " (" + strings.Join(shown, ", ") + ")"
	res.Matched = f.matched
	res.measured(f.v, c.op, bound, c.u.figureUnit())
	res.Outcome = outcome(compare(f.v, c.op, bound))
	if res.Outcome == Fail {
		res.Violations = f.viol
	}
	return res
}

// format writes a figure or bound in its unit, with at most four
// significant digits.
func (u unit) format(v float64) string {
	switch u {
	case unitDur:
		return fmtDur(time.Duration(v))
	case unitSec:
		return fmtDur(time.Duration(v * float64(time.Second)))
	case unitPct:
		return fmtNum(v) + "%"
	}
	return fmtNum(v)
}

// figureUnit is the unit of CheckResult.measured a figure in u is given in.
func (u unit) figureUnit() string {
	switch u {
	case unitDur:
		return unitNanos
	case unitSec:
		return UnitSeconds
	case unitPct:
		return UnitPercent
	}
	return ""
}

// phaseWindow is the window of the whole named phase, with w's request
// filter and classification: where a baseline is measured.
func (w *window) phaseWindow(name string) (*window, error) {
	spec := *w.spec
	spec.Phase, spec.Settle, spec.Until, spec.Last = name, 0, 0, 0
	bw, err := newWindow(w.tl, &spec)
	if err != nil {
		return nil, err
	}
	bw.baselines, bw.routes = w.baselines, w.routes
	return bw, nil
}

// fmtNum writes a number with at most four significant digits: 0.4712,
// 1235, 12350.
func fmtNum(f float64) string {
	if f == 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	mag := int(math.Floor(math.Log10(math.Abs(f))))
	if mag >= 3 {
		p := math.Pow(10, float64(mag-3))
		return strconv.FormatFloat(math.Round(f/p)*p, 'f', 0, 64)
	}
	p := math.Pow(10, float64(3-mag))
	return strconv.FormatFloat(math.Round(f*p)/p, 'f', -1, 64)
}
