package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// TestProbeChecks judges probe readings after the window: the first
// reading decides without within; with it, any reading up to the
// deadline that holds passes, one that could not be read leaves the
// verdict unknown, and readings that stop short of the deadline decide
// nothing.
func TestProbeChecks(t *testing.T) {
	end := t0.Add(3 * time.Second)
	// readings adds readings of probe clicks at +at after the run.
	readings := func(rs ...any) *timeline.Timeline {
		s := newShop(10, normal)
		for i := 0; i < len(rs); i += 2 {
			e := timeline.Event{Time: end.Add(rs[i].(time.Duration)), Kind: timeline.Probe, Message: "clicks"}
			switch v := rs[i+1].(type) {
			case float64:
				e.Data = map[string]any{"value": v, "final": true}
			case string:
				e.Data = map[string]any{"error": v, "final": true}
			}
			s.event(e)
		}
		return s.tl
	}
	ms := time.Millisecond
	tests := []struct {
		name, expect string
		tl           *timeline.Timeline
		want         Outcome
		substr       string
	}{
		{"caught up within the deadline", `probe("clicks") >= acked within 1s`, readings(10*ms, 250.0, 500*ms, 300.0, time.Second, 300.0), Pass, "300 at +500ms"},
		{"never caught up", `probe("clicks") >= acked within 1s`, readings(10*ms, 250.0, 500*ms, 290.0, time.Second, 290.0), Fail, "290 at +1s"},
		{"a reading that failed may have been the one", `probe("clicks") >= acked within 1s`, readings(10*ms, 250.0, 500*ms, "connection refused", time.Second, 290.0), Inconclusive, "could not be read at +500ms: connection refused"},
		{"readings short of the deadline", `probe("clicks") >= acked within 4s`, readings(10*ms, 250.0, time.Second, 290.0), Inconclusive, "up to +1s after the window only"},
		{"the first reading decides without within", `probe("clicks") == count`, readings(10*ms, 300.0, 500*ms, 0.0), Pass, "300 at +10ms"},
		{"the first reading fails", `probe("clicks") < 0.5 * count`, readings(10*ms, 300.0), Fail, "300"},
		{"no reading", `probe("clicks") >= 1`, readings(), Inconclusive, `probe "clicks" was not read after the window closed`},
		{"a reading that is not a number", `probe("clicks") >= 1`, readings(10*ms, "\"abc\" is not a number"), Inconclusive, "not a number"},
		{"readings past the deadline are not looked at", `probe("clicks") >= acked within 1s`, readings(10*ms, 250.0, time.Second, 250.0, 2*time.Second, 300.0), Fail, "250"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Compile(Spec{Name: tt.name, Expect: []string{tt.expect}})
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
}

func TestProbeForm(t *testing.T) {
	if got := ProbeNames(`probe( "clicks" ) >= acked within 5s`); len(got) != 1 || got[0] != "clicks" {
		t.Errorf("ProbeNames = %q", got)
	}
	if d := ProbeWithin(`probe("clicks") >= acked within 5s`); d != 5*time.Second {
		t.Errorf("ProbeWithin = %v", d)
	}
	if d := ProbeWithin(`probe("lag") == 0`); d != 0 {
		t.Errorf("ProbeWithin without within = %v", d)
	}
	if _, err := Compile(Spec{Name: "x", Expect: []string{`probe("clicks") >= ackd within 5s`}}); err == nil || !strings.Contains(err.Error(), "bad bound") {
		t.Errorf("a bound with an unknown name: %v", err)
	}
}
