package contract

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/chaoskit/chaoskit/timeline"
)

// probeForm is `probe("clicks") >= acked within 5s`: a figure chaoskit
// reads from a dependency (an SQL query, a Redis command, an HTTP GET),
// judged once the window has closed, or within a deadline after it.
var probeForm = regexp.MustCompile(`^probe\(\s*"([^"]+)"\s*\)\s*` + opPat + `\s*(.+?)(?:\s+within\s+` + durPat + `)?$`)

// ProbeNames returns the probes an expectation reads, so that a scenario
// can check they are declared.
func ProbeNames(expect string) []string {
	s := strings.Join(strings.Fields(expect), " ")
	if m := probeForm.FindStringSubmatch(s); m != nil {
		return []string{m[1]}
	}
	if m := probeIncreaseForm.FindStringSubmatch(s); m != nil {
		return []string{m[1]}
	}
	return nil
}

// ProbeDuringPhases says whether an expectation reads its probe during
// the phases (increase(probe("calls"))), so that the probe must be read
// at an interval rather than only after the last phase.
func ProbeDuringPhases(expect string) bool {
	return probeIncreaseForm.MatchString(strings.Join(strings.Fields(expect), " "))
}

// ProbeWithin returns how long after its window an expectation on a probe
// waits for the probe to satisfy it (0: it reads the first value after
// the window), so that the run samples the probe that long after its
// last phase.
func ProbeWithin(expect string) time.Duration {
	s := strings.Join(strings.Fields(expect), " ")
	m := probeForm.FindStringSubmatch(s)
	if m == nil || m[4] == "" {
		return 0
	}
	d, _ := time.ParseDuration(m[4])
	return d
}

// probeEnv is what the bound of a probe expectation sees: the window's
// requests, those answered 2xx (acknowledged), their rate and the
// window's length.
type probeEnv struct {
	Count   int     `expr:"count"`
	Acked   int     `expr:"acked"`
	RPS     float64 `expr:"rps"`
	Seconds float64 `expr:"seconds"`
}

// probeCheck judges a probe's samples (timeline.Probe events) after the
// window: without within, the first sample at or after the window's end
// decides; with it, the bound must hold at some sample up to within after
// the end (an eventual check, as a consumer catches up), and a probe that
// could not be read there leaves it unknown, never passed.
type probeCheck struct {
	src    string
	name   string
	op     string
	bound  *vm.Program
	text   string
	within time.Duration
}

func compileProbe(src string, m []string) (check, error) {
	prog, err := expr.Compile(m[3], expr.Env(probeEnv{}), expr.AsFloat64())
	if err != nil {
		return nil, &SyntaxError{Column: strings.Index(src, m[3]) + 1, Msg: "bad bound: " + firstLine(err.Error()),
			Hint: "a bound is a number or an expression of count, acked (requests answered 2xx), rps and seconds, e.g. acked"}
	}
	c := &probeCheck{src: src, name: m[1], op: m[2], bound: prog, text: m[3]}
	if m[4] != "" {
		c.within, _ = time.ParseDuration(m[4])
	}
	return c, nil
}

// ProbeSample is one reading of a probe.
type ProbeSample struct {
	// Time is when the reading was made, its answer in; Sent when it was
	// asked for (Time less the reading's took_ns, Time when the record
	// does not say). The figure it holds was taken between the two.
	Time  time.Time
	Sent  time.Time
	Value float64
	// Err is why the probe could not be read; Value is then meaningless.
	Err string
}

// ProbeSamples returns the readings of probe name on the timeline, in
// time order.
func ProbeSamples(tl *timeline.Timeline, name string) []ProbeSample {
	var out []ProbeSample
	for _, e := range tl.Events {
		if e.Kind != timeline.Probe || e.Message != name {
			continue
		}
		s := ProbeSample{Time: e.Time, Sent: e.Time}
		if took, ok := timeline.Number(e.Data["took_ns"]); ok && took > 0 {
			s.Sent = e.Time.Add(-time.Duration(took))
		}
		if msg, ok := e.Data["error"].(string); ok {
			s.Err = msg
		} else if v, ok := timeline.Number(e.Data["value"]); ok {
			s.Value = v
		} else {
			s.Err = "the sample holds no value"
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

type probeAcc struct {
	c     *probeCheck
	w     *window
	acked int
}

func (c *probeCheck) start(w *window) acc { return &probeAcc{c: c, w: w} }

func (a *probeAcc) add(r *timeline.Request, in bool, _ *classed) {
	if in && r.Status/100 == 2 {
		a.acked++
	}
}

func (a *probeAcc) result() CheckResult {
	c, w := a.c, a.w
	res := CheckResult{Expect: c.src}
	secs := w.end.Sub(w.start).Seconds()
	env := probeEnv{Count: w.n, Acked: a.acked, Seconds: secs}
	if secs > 0 {
		env.RPS = float64(w.n) / secs
	}
	out, err := expr.Run(c.bound, env)
	bound, _ := out.(float64)
	res.Expected = boundText(c.op, c.text, bound)
	if c.within > 0 {
		res.Expected += " within " + fmtDur(c.within)
	}
	if err != nil {
		return inconclusive(res, "cannot compute the bound: "+err.Error())
	}
	var after []ProbeSample
	for _, s := range ProbeSamples(w.tl, c.name) {
		if !s.Time.Before(w.end) && (c.within == 0 || !s.Time.After(w.end.Add(c.within))) {
			after = append(after, s)
		}
	}
	if len(after) == 0 {
		return inconclusive(res, fmt.Sprintf("probe %q was not read after the window closed", c.name))
	}
	if c.within == 0 {
		after = after[:1]
	}
	unknown := ""
	var last *ProbeSample
	for i := range after {
		s := &after[i]
		res.Samples++
		if s.Err != "" {
			if unknown == "" {
				unknown = fmt.Sprintf("probe %q could not be read at +%s: %s", c.name, fmtDur(s.Time.Sub(w.end)), s.Err)
			}
			continue
		}
		last = s
		if compare(s.Value, c.op, bound) {
			res.Measured = fmt.Sprintf("%s at +%s after the window", fmtNum(s.Value), fmtDur(s.Time.Sub(w.end)))
			res.Outcome = Pass
			res.measured(s.Value, c.op, bound, "")
			return res
		}
	}
	if last != nil {
		res.Measured = fmt.Sprintf("%s at +%s after the window", fmtNum(last.Value), fmtDur(last.Time.Sub(w.end)))
		res.measured(last.Value, c.op, bound, "")
	}
	switch {
	case unknown != "":
		// A reading that failed might have been the one that held.
		return inconclusive(res, unknown)
	case c.within > 0 && w.end.Add(c.within).Sub(last.Time) > c.within/4:
		return inconclusive(res, fmt.Sprintf("probe %q was read up to +%s after the window only, short of the %s it had", c.name, fmtDur(last.Time.Sub(w.end)), fmtDur(c.within)))
	}
	res.Outcome = Fail
	return res
}
