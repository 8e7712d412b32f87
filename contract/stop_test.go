package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// stopAt adds to the shop a stop of the target, signalled at the offset
// from the run's start; requests sent in the 100ms before it are in
// flight for 200ms (the 6 sent 50ms or more before it count), and get no answer when cut is set.
func stopAt(tl *timeline.Timeline, at, took time.Duration, killed, atEnd, cut bool) *timeline.Timeline {
	sig := t0.Add(at)
	data := map[string]any{timeline.StopProcess: "target", timeline.Signalled: sig.UnixNano(), timeline.StopTook: int64(took),
		timeline.StopGrace: int64(time.Second)}
	if killed {
		data[timeline.KilledAfterGrace] = true
	}
	if atEnd {
		data[timeline.StopAtEnd] = true
	}
	tl.Events = append(tl.Events, timeline.Event{Time: sig.Add(took), Kind: timeline.Process, Message: "terminated", Data: data})
	for i := range tl.Requests {
		r := &tl.Requests[i]
		if r.Time.Before(sig) && !r.Time.Before(sig.Add(-100*time.Millisecond)) {
			r.Latency = 200 * time.Millisecond
			if cut {
				r.Status, r.Error = 0, "EOF"
			}
		}
	}
	return tl
}

func TestGracefulStop(t *testing.T) {
	shop := func() *timeline.Timeline { return newShop(10, normal).tl }
	tests := []struct {
		name   string
		spec   Spec
		tl     *timeline.Timeline
		want   Outcome
		substr string
	}{
		{"stopped in time", Spec{Phase: "fault", Expect: []string{`process("target") stops within 1s`}}, stopAt(shop(), 1500*time.Millisecond, 300*time.Millisecond, false, false, false), Pass, "stopped 300ms after SIGTERM by a process fault"},
		{"stopped late", Spec{Phase: "fault", Expect: []string{`process("target") stops within 200ms`}}, stopAt(shop(), 1500*time.Millisecond, 300*time.Millisecond, false, false, false), Fail, "stopped 300ms after SIGTERM"},
		{"killed after its grace", Spec{Phase: "fault", Expect: []string{`process("target") stops within 2s`}}, stopAt(shop(), 1500*time.Millisecond, time.Second, true, false, false), Fail, "killed 1s after SIGTERM by a process fault: still running after its 1s grace"},
		{"no stop in the window", Spec{Phase: "warmup", Expect: []string{`process("target") stops within 1s`}}, stopAt(shop(), 1500*time.Millisecond, 300*time.Millisecond, false, false, false), Inconclusive, "no stop happened in the window"},
		{"another process's stop", Spec{Phase: "fault", Expect: []string{`process("kv") stops within 1s`}}, stopAt(shop(), 1500*time.Millisecond, 300*time.Millisecond, false, false, false), Inconclusive, `process "kv" was not sent SIGTERM`},
		{"the run's end counts for the whole run", Spec{Expect: []string{`process("target") stops within 1s`}}, stopAt(shop(), 3500*time.Millisecond, 2*time.Second, true, true, false), Fail, "at the run's end"},
		{"the run's end not for a phase", Spec{Phase: "recovery", Expect: []string{`process("target") stops within 1s`}}, stopAt(shop(), 3500*time.Millisecond, 2*time.Second, true, true, false), Inconclusive, "no stop happened"},
		{"drained", Spec{Phase: "fault", Expect: []string{`process("target") drains`}}, stopAt(shop(), 1500*time.Millisecond, 300*time.Millisecond, false, false, false), Pass, "6 of 6 in flight answered"},
		{"cut", Spec{Phase: "fault", Expect: []string{`process("target") drains`}}, stopAt(shop(), 1500*time.Millisecond, 10*time.Millisecond, false, false, true), Fail, "0 of 6 in flight answered"},
		{"nothing in flight", Spec{Phase: "fault", Expect: []string{`process("target") drains`}}, func() *timeline.Timeline {
			tl := stopAt(shop(), 1500*time.Millisecond, 10*time.Millisecond, false, false, false)
			for i := range tl.Requests {
				tl.Requests[i].Latency = time.Millisecond // every answer came before the signal
			}
			return tl
		}(), Inconclusive, "no request was in flight at SIGTERM"},
		{"no stop to drain", Spec{Phase: "warmup", Expect: []string{`process("target") drains`}}, shop(), Inconclusive, "no stop happened"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Name, tt.spec.MinSamples = tt.name, 1
			c, err := Compile(conv(tt.spec))
			if err != nil {
				t.Fatal(err)
			}
			v := c.Evaluate(tt.tl)
			ch := v.Checks[0]
			text := ch.Measured + " | " + ch.Reason
			if v.Outcome != tt.want || !strings.Contains(text, tt.substr) {
				t.Errorf("got %s: %s; want %s with %q", v.Outcome, text, tt.want, tt.substr)
			}
		})
	}
	if _, err := Compile(conv(Spec{Name: "x", Expect: []string{`process("kv") drains`}})); err == nil || !strings.Contains(err.Error(), "only the target can be judged to drain") {
		t.Errorf("drains on a dependency: %v", err)
	}
	m := Measure(stopAt(shop(), 3500*time.Millisecond, 2*time.Second, true, true, false), convCls(Classification{}))
	if len(m.Findings) != 1 || m.Findings[0].Kind != "killed_after_grace" || !strings.Contains(m.Findings[0].Message, `process "target" did not stop on SIGTERM at the run's end: it was killed after its 1s grace`) {
		t.Errorf("findings %+v", m.Findings)
	}
}
