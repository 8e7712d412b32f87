package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// TestProbeIncrease judges increase(probe(...)) over the fault phase
// (+1s to +2s, 100 requests) from readings every 100ms at +50ms, +150ms,
// ..., each 5ms long: on both ends, and inconclusive with the reason when
// an edge reading is missing or unknown, the counter went down, or the
// readings leave a gap.
func TestProbeIncrease(t *testing.T) {
	ms := time.Millisecond
	// counter reads value(at) at +at since the run's start; a value < 0
	// is a reading that failed; took is how long each reading took.
	counter := func(from, to time.Duration, took time.Duration, value func(at time.Duration) float64) *timeline.Timeline {
		s := newShop(10, normal)
		for at := from; at <= to; at += 100 * ms {
			e := timeline.Event{Time: t0.Add(at), Kind: timeline.Probe, Message: "calls", Data: map[string]any{"took_ns": float64(took)}}
			if v := value(at); v >= 0 {
				e.Data["value"] = v
			} else {
				e.Data["error"] = "connection refused"
			}
			s.event(e)
		}
		return s.tl
	}
	perSecond := func(n float64) func(time.Duration) float64 {
		return func(at time.Duration) float64 { return 1000 + n*at.Seconds() }
	}
	except := func(f func(time.Duration) float64, bad ...time.Duration) func(time.Duration) float64 {
		return func(at time.Duration) float64 {
			for _, b := range bad {
				if at == b {
					return -1
				}
			}
			return f(at)
		}
	}
	run := func(from, to time.Duration, value func(time.Duration) float64) *timeline.Timeline {
		return counter(from, to, 5*ms, value)
	}
	const budget = `increase(probe("calls")) <= 1.2 * count`
	tests := []struct {
		name, expect string
		tl           *timeline.Timeline
		want         Outcome
		substr       string
	}{
		{"within the budget on both ends", budget, run(50*ms, 3*time.Second, perSecond(100)), Pass, "90 to 110 (from 1095 at -50ms to 1205 at +1.05s, 12 readings, 100 requests)"},
		{"a storm fails on both ends", budget, run(50*ms, 3*time.Second, perSecond(170)), Fail, "153 to 187"},
		{"the ends disagree", budget, run(50*ms, 3*time.Second, perSecond(110)), Inconclusive, "grew by 99 to 121 in the window"},
		{"a lower bound on both ends", `increase(probe("calls")) >= 0.5 * count`, run(50*ms, 3*time.Second, perSecond(100)), Pass, "90 to 110"},
		{"no reading before the window", budget, run(1050*ms, 3*time.Second, perSecond(100)), Inconclusive, `probe "calls" has no reading at or before the window's start`},
		{"no reading after the window", budget, run(50*ms, 1950*ms, perSecond(100)), Inconclusive, `probe "calls" has no reading at or after the window's end (+1s)`},
		{"an unknown reading at the start", budget, run(50*ms, 3*time.Second, except(perSecond(100), 950*ms)), Inconclusive, `could not be read at the window's start (-50ms): connection refused`},
		{"an unknown reading at the end", budget, run(50*ms, 3*time.Second, except(perSecond(100), 2050*ms)), Inconclusive, `could not be read at the window's end (+1.05s): connection refused`},
		{"an unknown reading inside is passed over", budget, run(50*ms, 3*time.Second, except(perSecond(100), 1450*ms)), Pass, "11 readings"},
		{"a gap in the readings", budget, run(50*ms, 3*time.Second, except(perSecond(100), 1150*ms, 1250*ms, 1350*ms, 1450*ms, 1550*ms, 1650*ms)), Inconclusive, "leave a gap of 700ms"},
		{"a reset", budget, run(50*ms, 3*time.Second, func(at time.Duration) float64 {
			if at > 1500*ms {
				return 100 * (at - 1500*ms).Seconds()
			}
			return perSecond(100)(at)
		}), Inconclusive, `went down from 1145 to 5 at +550ms: the counter was reset`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Compile(Spec{Name: tt.name, Phase: "fault", Expect: []string{tt.expect}})
			if err != nil {
				t.Fatal(err)
			}
			v := c.Evaluate(tt.tl)
			ch := v.Checks[0]
			if v.Outcome != tt.want || !strings.Contains(ch.Measured+" | "+ch.Reason, tt.substr) {
				t.Errorf("verdict %s measured %q reason %q expected %q; want %s with %q", v.Outcome, ch.Measured, ch.Reason, ch.Expected, tt.want, tt.substr)
			}
		})
	}

	// A reading answered after the window's end but asked for before it
	// may hold the counter from inside the window: it is not the end's
	// edge. At 105/s the edges at -50ms and +1.15s give 126, above the
	// bound; taking the reading answered at +1.05s (asked at +950ms) for
	// the edge would give 115.5 and pass.
	slow := counter(50*ms, 3*time.Second, 100*ms, perSecond(105))
	c, err := Compile(Spec{Name: "slow", Phase: "fault", Expect: []string{budget}})
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Evaluate(slow); v.Outcome != Inconclusive || !strings.Contains(v.Checks[0].Reason, "grew by 84 to 126") {
		t.Errorf("readings 100ms long: %s %q %q; want inconclusive, 84 to 126", v.Outcome, v.Checks[0].Measured, v.Checks[0].Reason)
	}
}

// TestIntervalOutcome judges a figure known between two ends.
func TestIntervalOutcome(t *testing.T) {
	for _, tt := range []struct {
		lo, hi float64
		op     string
		bound  float64
		want   Outcome
		near   float64
	}{
		{90, 110, "<=", 120, Pass, 110},
		{130, 150, "<=", 120, Fail, 130},
		{110, 130, "<=", 120, Inconclusive, 130},
		{110, 130, ">", 100, Pass, 110},
		{80, 90, ">", 100, Fail, 90},
		{100, 100, "==", 100, Pass, 100},
		{90, 110, "==", 100, Inconclusive, 90},
		{110, 120, "==", 100, Fail, 110},
		{110, 120, "!=", 100, Pass, 110},
		{90, 110, "!=", 100, Inconclusive, 90},
		{100, 100, "!=", 100, Fail, 100},
	} {
		got, near := intervalOutcome(tt.lo, tt.hi, tt.op, tt.bound)
		if got != tt.want || near != tt.near {
			t.Errorf("[%v, %v] %s %v = %s at %v; want %s at %v", tt.lo, tt.hi, tt.op, tt.bound, got, near, tt.want, tt.near)
		}
	}
}

func TestProbeIncreaseForm(t *testing.T) {
	e := `increase( probe("calls") ) <= 1.2 * count`
	if got := ProbeNames(e); len(got) != 1 || got[0] != "calls" {
		t.Errorf("ProbeNames = %q", got)
	}
	if !ProbeDuringPhases(e) || ProbeDuringPhases(`probe("calls") >= acked`) {
		t.Errorf("ProbeDuringPhases tells the increase form from the read after the window wrongly")
	}
	if ProbeWithin(e) != 0 {
		t.Errorf("ProbeWithin = %v", ProbeWithin(e))
	}
	for _, tt := range []struct{ expect, want string }{
		{`increase(probe("calls")) <= 1.2 * cnt`, "bad bound"},
		{`increase(probe("calls")) <= 1.2 * baseline("warmup")`, "not compared with a baseline"},
	} {
		if _, err := Compile(Spec{Name: "x", Expect: []string{tt.expect}}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v; want %q", tt.expect, err, tt.want)
		}
	}
}
