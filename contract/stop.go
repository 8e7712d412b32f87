package contract

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// A graceful stop, in two promises: a process sent SIGTERM (a terminate or
// restart process fault, or the stop at the run's end) is gone within a
// bound, and the requests the target was serving when it got SIGTERM are
// answered before it goes (drain), as http.Server.Shutdown does.
var stopForm = regexp.MustCompile(`^process\(\s*"([^"]+)"\s*\)\s+(?:stops\s+within\s+(\S+)|(drains))$`)

// targetProcess is the name process faults give the target (plan's
// TargetProcess): only its requests are recorded, so only it can be
// judged to drain.
const targetProcess = "target"

// DrainMargin is how long before SIGTERM a request must have been sent to
// count as in flight at it: one sent closer may not have reached the
// service yet, and a service that stops accepting is right to refuse it.
const DrainMargin = 50 * time.Millisecond

func compileStop(src string, m []string) (check, error) {
	c := &stopCheck{src: src, name: m[1], drains: m[3] != "", wantText: m[2]}
	if c.drains {
		if c.name != targetProcess {
			return nil, valueError(src, `"`+c.name+`"`, fmt.Sprintf("only the target's requests are recorded, so only the target can be judged to drain, not %q", c.name), `write process("target") drains`)
		}
		return c, nil
	}
	var err error
	c.want, err = durationArg(src, m[2])
	return c, err
}

// stopCheck judges process("NAME") stops within D and process("target")
// drains on the stops of the process in the window: those whose signal
// was sent in it, and for a window on the whole run also the stop at the
// run's end.
type stopCheck struct {
	src      string
	name     string
	drains   bool
	want     time.Duration
	wantText string
}

// stops are the process's stops the window holds.
func (c *stopCheck) stops(w *window) []timeline.Stop {
	var out []timeline.Stop
	for _, st := range w.tl.Stops() {
		if st.Process != c.name {
			continue
		}
		if (st.AtEnd && w.spec.Phase == "") || (!st.Signalled.Before(w.start) && !st.Signalled.After(w.end)) {
			out = append(out, st)
		}
	}
	return out
}

// noStop says why there is nothing to judge.
func (c *stopCheck) noStop(w *window) string {
	where := "the run's end stops only a target chaoskit started"
	if w.spec.Phase != "" {
		where = "the stop at the run's end counts only for a window on the whole run"
	}
	return fmt.Sprintf("no stop happened in the window: process %q was not sent SIGTERM in it (a terminate or restart process fault does; %s)", c.name, where)
}

func (c *stopCheck) start(w *window) acc {
	stops := c.stops(w)
	if !c.drains {
		return eventCheck(func() CheckResult { return c.judgeStops(w, stops) })
	}
	return &drainAcc{c: c, w: w, stops: stops, res: CheckResult{Expect: c.src, Expected: "every request in flight at SIGTERM answered"}}
}

func (c *stopCheck) judgeStops(w *window, stops []timeline.Stop) CheckResult {
	res := CheckResult{Expect: c.src, Expected: "within " + c.wantText, Samples: len(stops)}
	if len(stops) == 0 {
		return inconclusive(res, c.noStop(w))
	}
	worst := stops[0]
	for _, st := range stops[1:] {
		if st.Killed && !worst.Killed || st.Took > worst.Took {
			worst = st
		}
	}
	res.Measured = stopText(worst)
	if len(stops) > 1 {
		res.Measured += fmt.Sprintf(" (the slowest of %d stops)", len(stops))
	}
	if worst.Killed || worst.Took > c.want {
		res.Outcome, res.Margin = Fail, -100
		if !worst.Killed && c.want > 0 {
			res.Margin = -100 * float64(worst.Took-c.want) / float64(c.want)
		}
		return res
	}
	res.Outcome, res.Margin = Pass, 100
	if c.want > 0 {
		res.Margin = 100 * float64(c.want-worst.Took) / float64(c.want)
	}
	return res
}

// stopText says how a stop went: "stopped 120ms after SIGTERM".
func stopText(st timeline.Stop) string {
	when := "at the run's end"
	if !st.AtEnd {
		when = "by a process fault"
	}
	if st.Killed {
		return fmt.Sprintf("killed %s after SIGTERM %s: still running after its %s grace", fmtDur(st.Took), when, fmtDur(st.Grace))
	}
	return fmt.Sprintf("stopped %s after SIGTERM %s", fmtDur(st.Took), when)
}

// drainAcc finds the requests in flight at each stop: sent at least
// DrainMargin before its signal and not answered before it. Each must
// have got an answer (a status); a reset, a refusal or a timeout is a
// request the stop cut.
type drainAcc struct {
	c        *stopCheck
	w        *window
	stops    []timeline.Stop
	inFlight int
	res      CheckResult
}

func (a *drainAcc) add(r *timeline.Request, _ bool, k *classed) {
	if len(a.stops) == 0 || !a.w.selects(r) {
		return
	}
	for _, st := range a.stops {
		if r.Time.After(st.Signalled.Add(-DrainMargin)) || !r.End().After(st.Signalled) {
			continue
		}
		a.inFlight++
		if r.Status == 0 && len(a.res.Violations) < MaxViolations {
			c, src := k.get()
			v := a.w.requestViolation(r, c, src)
			v.Detail = fmt.Sprintf("in flight at SIGTERM (sent %s before it), cut by the stop", fmtDur(st.Signalled.Sub(r.Time)))
			a.res.Violations = append(a.res.Violations, v)
		}
		if r.Status != 0 {
			a.res.Matched++
		}
		return
	}
}

func (a *drainAcc) result() CheckResult {
	res := a.res
	res.Samples = a.inFlight
	if len(a.stops) == 0 {
		return inconclusive(res, a.c.noStop(a.w))
	}
	if a.inFlight == 0 {
		return inconclusive(res, "no request was in flight at SIGTERM (sent "+fmtDur(DrainMargin)+" or more before it and not yet answered), so the stop drained nothing")
	}
	res.Measured = strconv.Itoa(res.Matched) + " of " + strconv.Itoa(a.inFlight) + " in flight answered"
	if res.Matched < a.inFlight {
		res.Outcome, res.Margin = Fail, -100*float64(a.inFlight-res.Matched)/float64(a.inFlight)
		return res
	}
	res.Outcome, res.Margin = Pass, 100
	return res
}

// stopFindings are the processes that had to be killed after their grace:
// a service that ignores SIGTERM (or hangs in its shutdown) loses whatever
// it would have done on the way out, and its deploys wait out every grace.
func stopFindings(tl *timeline.Timeline) []Finding {
	var out []Finding
	phases := tl.Phases()
	for _, st := range tl.Stops() {
		if !st.Killed {
			continue
		}
		f := Finding{Kind: "killed_after_grace"}
		when := "at the run's end"
		if !st.AtEnd {
			when = "by a process fault"
			for _, p := range phases {
				if !st.Signalled.Before(p.Start) && !st.Signalled.After(p.End) {
					f.Phase = p.Name
					when += " in phase " + strconv.Quote(p.Name)
				}
			}
		}
		f.Message = fmt.Sprintf("process %q did not stop on SIGTERM %s: it was killed after its %s grace (stop_grace); assert a graceful stop with process(%q) stops within DURATION",
			st.Process, when, fmtDur(st.Grace), st.Process)
		out = append(out, f)
	}
	return out
}
