package contract

import (
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

func TestMeasure(t *testing.T) {
	m := Measure(newShop(10, faultPhase(every(10), fast503)).tl, convCls(Classification{}))
	if len(m.Phases) != 3 || !m.Start.Equal(t0) {
		t.Fatalf("phases = %+v", m.Phases)
	}
	f := m.Phases[1]
	if f.Name != "fault" || f.Start != time.Second || f.Duration != time.Second || f.Requests != 100 || f.RPS != 100 {
		t.Errorf("fault phase = %+v", f)
	}
	if f.Classes[Fallback] != 90 || f.Classes[Rejected] != 10 || f.Statuses["503"] != 10 || f.Statuses["200"] != 90 {
		t.Errorf("fault phase classes %v statuses %v", f.Classes, f.Statuses)
	}
	if f.P50 != 2*time.Millisecond || f.Max != 2*time.Millisecond || m.Phases[0].P99 != time.Millisecond {
		t.Errorf("latencies = %v %v %v", f.P50, f.Max, m.Phases[0].P99)
	}
	if len(m.Faults) != 1 || m.Faults[0].On != time.Second || m.Faults[0].Off != 2*time.Second || *m.Faults[0].Hits != 10 || m.Faults[0].Open {
		t.Errorf("faults = %+v", m.Faults)
	}
}

func TestMeasureOpenFault(t *testing.T) {
	tl := newShop(10, normal).tl
	var kept []timeline.Event
	for _, e := range tl.Events {
		if e.Kind != timeline.FaultOff {
			kept = append(kept, e)
		}
	}
	tl.Events = kept
	m := Measure(tl, convCls(Classification{}))
	if !m.Faults[0].Open || m.Faults[0].Off != 3*time.Second {
		t.Errorf("an unclosed fault lasts to the end: %+v", m.Faults[0])
	}
}

// The breakers a run's samples state, and where from: state samples
// first; none without either (the chart then reads the response header).
func TestBreakerNames(t *testing.T) {
	tl := newShop(10, normal).breaker(breakerOpen(1300*time.Millisecond, 2500*time.Millisecond)).tl
	if names, from := BreakerNames(tl); len(names) != 1 || names[0] != "db" || from != "state samples" {
		t.Errorf("names %q from %q", names, from)
	}
	if names, from := BreakerNames(newShop(10, normal).tl); names != nil || from != "" {
		t.Errorf("names %q from %q", names, from)
	}
}

func TestBreakerState(t *testing.T) {
	for _, tt := range []struct {
		data map[string]any
		want string
		ok   bool
	}{
		{map[string]any{"breakers": map[string]any{"db": map[string]any{"state": "half_open"}}}, "half-open", true},
		{map[string]any{"breakers": map[string]any{"db": "OPEN"}}, "open", true},
		{map[string]any{"breakers": map[string]any{"cache": "open"}}, "", false},
		{map[string]any{"breakers": map[string]any{"db": map[string]any{"failures": 3.0}}}, "", false},
		{map[string]any{}, "", false},
	} {
		got, ok := breakerState(tt.data, "db")
		if got != tt.want || ok != tt.ok {
			t.Errorf("breakerState(%v) = %q %v", tt.data, got, ok)
		}
	}
}
