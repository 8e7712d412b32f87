package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// stateTimeline is a 2 s "fault" phase of 100 requests with a state sample
// every 100 ms: calls grows by perSample each sample, and the breaker "db"
// is open from openAt (never, if negative).
func stateTimeline(perSample float64, openAt time.Duration) *timeline.Timeline {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tl := &timeline.Timeline{Meta: timeline.Meta{Scenario: "s", Start: t0}}
	tl.Events = append(tl.Events, timeline.Event{Time: t0, Kind: timeline.PhaseStart, Phase: "fault"})
	for i := 0; i < 100; i++ {
		tl.Requests = append(tl.Requests, timeline.Request{Phase: "fault", Time: t0.Add(time.Duration(i) * 20 * time.Millisecond), Status: 200, Target: "GET /x"})
	}
	for i := 0; i <= 20; i++ {
		at := time.Duration(i) * 100 * time.Millisecond
		state := "closed"
		if openAt >= 0 && at >= openAt {
			state = "open"
		}
		tl.Events = append(tl.Events, timeline.Event{Time: t0.Add(at), Kind: timeline.State, Data: map[string]any{
			"upstream": map[string]any{"calls": float64(1000) + perSample*float64(i)},
			"breakers": map[string]any{"db": map[string]any{"state": state}},
		}})
	}
	tl.Events = append(tl.Events, timeline.Event{Time: t0.Add(2 * time.Second), Kind: timeline.PhaseEnd, Phase: "fault"})
	return tl
}

func TestStateForms(t *testing.T) {
	tests := []struct {
		expect   string
		tl       *timeline.Timeline
		want     Outcome
		measured string
	}{
		{`increase("upstream.calls") <= 1.1 * count`, stateTimeline(5, -1), Pass, "100 (from 1000 to 1100 over 2s, 100 requests)"},
		{`increase("upstream.calls") <= 1.1 * count`, stateTimeline(6, -1), Fail, "120 (from 1000 to 1120 over 2s, 100 requests)"},
		{`increase("upstream.calls") < 50`, stateTimeline(0, -1), Pass, "0 (from 1000 to 1000 over 2s, 100 requests)"},
		{`increase("upstream.calls") >= 2 * rps`, stateTimeline(5, -1), Pass, "100 (from 1000 to 1100 over 2s, 100 requests)"},
		{`increase("no.such.counter") <= 10`, stateTimeline(5, -1), Inconclusive, ""},
		{`breaker("db") never opens`, stateTimeline(0, -1), Pass, "closed in all 21 samples"},
		{`breaker("db") never opens`, stateTimeline(0, 1500*time.Millisecond), Fail, "open at +1.5s"},
		{`breaker("other") never opens`, stateTimeline(0, -1), Inconclusive, ""},
	}
	for _, tt := range tests {
		c, err := Compile(conv(Spec{Name: "c", Phase: "fault", Expect: []string{tt.expect}}))
		if err != nil {
			t.Fatalf("%s: %v", tt.expect, err)
		}
		v := c.Evaluate(tt.tl)
		got := v.Checks[0]
		if got.Outcome != tt.want || (tt.measured != "" && got.Measured != tt.measured) {
			t.Errorf("%s: %s %q (%s), want %s %q", tt.expect, got.Outcome, got.Measured, got.Reason, tt.want, tt.measured)
		}
	}
}

func TestIncreaseBoundErrors(t *testing.T) {
	_, err := Compile(conv(Spec{Name: "c", Expect: []string{`increase("a.b") <= 1.1 * cnt`}}))
	if err == nil || !strings.Contains(err.Error(), "bad bound") {
		t.Errorf("err = %v", err)
	}
}
