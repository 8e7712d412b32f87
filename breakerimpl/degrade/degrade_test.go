package degrade_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/degrade"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// step is one reading: the signal's value, read after the clock moved on
// by the interval, and the state the switch must be in after it.
type step struct {
	signal  float64
	engaged bool
}

func TestSwitchEngagesAndReleasesWithHysteresis(t *testing.T) {
	tests := []struct {
		name       string
		settings   degrade.Settings
		steps      []step
		wantEvents []string // reasons
	}{
		{name: "at once when For is zero", settings: degrade.Settings{Threshold: 10},
			steps:      []step{{5, false}, {11, true}, {9, false}},
			wantEvents: []string{degrade.ReasonOver, degrade.ReasonUnder}},
		{name: "over for For", settings: degrade.Settings{Threshold: 10, For: 300 * time.Millisecond},
			steps:      []step{{11, false}, {11, false}, {11, false}, {11, true}},
			wantEvents: []string{degrade.ReasonOver}},
		{name: "a reading under breaks the run", settings: degrade.Settings{Threshold: 10, For: 200 * time.Millisecond},
			steps:      []step{{11, false}, {11, false}, {9, false}, {11, false}, {11, false}, {11, true}},
			wantEvents: []string{degrade.ReasonOver}},
		{name: "at the threshold is not over", settings: degrade.Settings{Threshold: 10},
			steps: []step{{10, false}, {10, false}}},
		{name: "hysteresis: under the threshold is not enough", settings: degrade.Settings{Threshold: 10, Release: 5},
			steps:      []step{{11, true}, {9, true}, {6, true}, {5, false}},
			wantEvents: []string{degrade.ReasonOver, degrade.ReasonUnder}},
		{name: "hold", settings: degrade.Settings{Threshold: 10, Release: 5, Hold: 200 * time.Millisecond},
			steps:      []step{{11, true}, {4, true}, {4, true}, {6, true}, {4, true}, {4, true}, {4, false}},
			wantEvents: []string{degrade.ReasonOver, degrade.ReasonUnder}},
		{name: "NaN changes nothing", settings: degrade.Settings{Threshold: 10, For: 100 * time.Millisecond},
			steps:      []step{{11, false}, {math.NaN(), false}, {11, true}, {math.NaN(), true}},
			wantEvents: []string{degrade.ReasonOver}},
		{name: "release at -Inf never releases", settings: degrade.Settings{Threshold: 10, Release: math.Inf(-1)},
			steps:      []step{{11, true}, {0, true}, {-1e300, true}},
			wantEvents: []string{degrade.ReasonOver}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewFake(time.Time{})
			var v float64
			var events []string
			st := tt.settings
			st.Name, st.Clock = "db-p99", clk
			st.Signal = func() float64 { return v }
			st.OnChange = func(e degrade.Event) {
				if e.Name != "db-p99" || !strings.Contains(e.String(), e.Reason) {
					t.Errorf("event %+v: name or String wrong (%s)", e, e)
				}
				events = append(events, e.Reason)
			}
			w := degrade.New(st)
			for i, s := range tt.steps {
				v = s.signal
				if got := w.Engaged(); got != s.engaged {
					t.Fatalf("reading %d (signal %v): engaged %v, want %v", i, s.signal, got, s.engaged)
				}
				clk.Advance(degrade.DefaultInterval)
			}
			if strings.Join(events, ",") != strings.Join(tt.wantEvents, ",") {
				t.Fatalf("events %q, want %q", events, tt.wantEvents)
			}
		})
	}
}

// The signal is read at most once an Interval, however many calls ask.
func TestSwitchReadsOncePerInterval(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	var reads atomic.Int64
	w := degrade.New(degrade.Settings{Threshold: 1, Interval: time.Second, Clock: clk, Signal: func() float64 { reads.Add(1); return 0 }})
	for range 100 {
		w.Allow(context.Background())
	}
	clk.Advance(999 * time.Millisecond)
	w.Snapshot()
	if n := reads.Load(); n != 1 {
		t.Fatalf("%d readings within an interval, want 1", n)
	}
	clk.Advance(time.Millisecond)
	w.Engaged()
	if n := reads.Load(); n != 2 {
		t.Fatalf("%d readings after an interval, want 2", n)
	}
}

// Engaged, the switch refuses calls but lets one probe through every
// ProbeInterval; a Pipeline serves the fallback with Reason "degraded".
func TestSwitchProbesAndPipeline(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	v := 100.0
	w := degrade.New(degrade.Settings{Threshold: 50, Clock: clk, Interval: 10 * time.Millisecond, ProbeInterval: 100 * time.Millisecond,
		Signal: func() float64 { return v }})
	p := breakerimpl.Pipeline[int, string]{Degrade: w, Fallback: fallback.Static[int, string]{Name: "cache", Value: "old"}}
	primary := 0
	fn := func(context.Context) (string, error) { primary++; return "new", nil }
	res, err := p.Execute(context.Background(), 1, fn)
	if err != nil || res.Source != "cache" || res.Reason != breakerimpl.ReasonDegraded {
		t.Fatalf("engaged: %+v, %v; want the fallback with reason degraded", res, err)
	}
	for range 50 {
		p.Execute(context.Background(), 1, fn)
	}
	if primary != 0 {
		t.Fatalf("%d calls reached the primary before the first probe was due", primary)
	}
	clk.Advance(100 * time.Millisecond)
	for range 50 {
		p.Execute(context.Background(), 1, fn)
	}
	if primary != 1 {
		t.Fatalf("%d calls reached the primary in one probe interval, want 1", primary)
	}
	s := w.Snapshot()
	if !s.Engaged || s.Probes != 1 || s.Refused != 100 || s.Engagements != 1 || s.Signal != 100 || s.Override != degrade.OverrideAutomatic {
		t.Fatalf("snapshot %+v", s)
	}
	if !errors.Is(degrade.ErrEngaged, breakerimpl.ErrDegraded) {
		t.Fatal("ErrEngaged is not an ErrDegraded")
	}
	// No probes: nothing gets through.
	np := degrade.New(degrade.Settings{Threshold: 50, Clock: clk, ProbeInterval: -1, Signal: func() float64 { return v }})
	for range 10 {
		clk.Advance(time.Second)
		if _, err := np.Allow(context.Background()); !errors.Is(err, degrade.ErrEngaged) {
			t.Fatalf("a switch without probes admitted a call: %v", err)
		}
	}
}

func TestSwitchOverrides(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	v := 0.0
	var events []degrade.Event
	w := degrade.New(degrade.Settings{Threshold: 1, Clock: clk, Signal: func() float64 { return v }, OnChange: func(e degrade.Event) { events = append(events, e) }})
	w.ForceEngage()
	if !w.Engaged() {
		t.Fatal("ForceEngage left it released")
	}
	clk.Advance(time.Second)
	if !w.Engaged() {
		t.Fatal("a low signal released a forced switch")
	}
	w.ResumeAutomatic()
	clk.Advance(time.Second)
	if w.Engaged() {
		t.Fatal("back to automatic, a low signal did not release it")
	}
	v = 2
	w.ForceRelease()
	clk.Advance(time.Second)
	if w.Engaged() || w.Snapshot().Override != degrade.OverrideReleased {
		t.Fatal("a high signal engaged a switch forced released")
	}
	var reasons []string
	for _, e := range events {
		reasons = append(reasons, e.Reason)
	}
	// ForceRelease of a released switch changes nothing but is an event.
	if got := strings.Join(reasons, ","); got != "forced,automatic,signal-under-release,forced" || !events[0].Engaged || events[3].Engaged {
		t.Fatalf("events %q", reasons)
	}
}
