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
	s := m.Series
	if s.Bucket != 50*time.Millisecond || s.End != 3*time.Second || len(s.Buckets) != 61 {
		t.Fatalf("series bucket %v end %v n %d", s.Bucket, s.End, len(s.Buckets))
	}
	b := s.Buckets[20] // 1.00s-1.05s: requests 0..4 of the fault phase
	if b.At != time.Second || b.Requests != 5 || b.Classes[Rejected] != 1 || b.Classes[Fallback] != 4 || b.P99 != 2*time.Millisecond {
		t.Errorf("bucket 20 = %+v", b)
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

func TestBreakerBands(t *testing.T) {
	t.Run("from state samples", func(t *testing.T) {
		tl := newShop(10, normal).breaker(breakerOpen(1300*time.Millisecond, 2500*time.Millisecond)).tl
		bands := Measure(tl, convCls(Classification{})).Series.Breakers
		want := []StateSpan{{0, 1300 * time.Millisecond, "closed"}, {1300 * time.Millisecond, 2500 * time.Millisecond, "open"}, {2500 * time.Millisecond, 3 * time.Second, "closed"}}
		if len(bands) != 1 || bands[0].Name != "db" || bands[0].From != "state samples" || !equalSpans(bands[0].Spans, want) {
			t.Errorf("bands = %+v", bands)
		}
	})
	t.Run("from the response header", func(t *testing.T) {
		tl := newShop(10, func(phase string, i int, r *timeline.Request) {
			normal(phase, i, r)
			r.Headers["X-Breaker-State"] = "closed"
			if phase == "fault" && i >= 10 {
				r.Headers["X-Breaker-State"] = "open"
			}
		}).tl
		bands := Measure(tl, convCls(Classification{})).Series.Breakers
		if len(bands) != 1 || bands[0].From != "response header" || len(bands[0].Spans) != 3 || bands[0].Spans[1].State != "open" ||
			bands[0].Spans[1].From != 1102*time.Millisecond || bands[0].Spans[2].From != 2001*time.Millisecond {
			t.Errorf("bands = %+v", bands)
		}
	})
	t.Run("none", func(t *testing.T) {
		if b := Measure(newShop(10, normal).tl, convCls(Classification{})).Series.Breakers; b != nil {
			t.Errorf("bands = %+v", b)
		}
	})
}

func equalSpans(a, b []StateSpan) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
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
		got, ok := BreakerState(tt.data, "db")
		if got != tt.want || ok != tt.ok {
			t.Errorf("BreakerState(%v) = %q %v", tt.data, got, ok)
		}
	}
}
