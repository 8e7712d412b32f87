package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// overran is the shop with its fault phase (planned 1s, every request
// sent within it) ending `ran` after it started: requests held past the
// plan kept it going.
func overran(ran time.Duration) *timeline.Timeline {
	tl := newShop(10, normal).tl
	for i, e := range tl.Events {
		if e.Kind == timeline.PhaseEnd && e.Phase == "fault" {
			tl.Events[i].Time = t0.Add(time.Second + ran)
		}
	}
	return tl
}

func TestPhaseOverrun(t *testing.T) {
	last := Spec{Name: "end of the fault", Phase: "fault", Last: 300 * time.Millisecond, MinSamples: 20, Expect: []string{`status == 200 for >= 99%`}}
	whole := Spec{Name: "the whole run", Expect: []string{`status == 200 for >= 99%`}}
	later := Spec{Name: "recovery", Phase: "recovery", Expect: []string{`status == 200 for >= 99%`}}
	tests := []struct {
		name    string
		ran     time.Duration
		spec    Spec
		samples int
		note    string // "" for none
	}{
		// The window's last 300ms is laid on the plan: requests 70..99 of the
		// phase, not the 300ms of held answers after the planned end.
		{"last counts back from the planned end", 1600 * time.Millisecond, last, 30, `phase "fault" ran 1.6s of a planned 1s (600ms over)`},
		{"the whole run says which phase overran", 1600 * time.Millisecond, whole, 300, `every later phase started that much later`},
		{"a later phase's own window is not moved", 1600 * time.Millisecond, later, 100, ""},
		{"the last answers' few ms are no overrun", 1150 * time.Millisecond, last, 30, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Compile(conv(tt.spec))
			if err != nil {
				t.Fatal(err)
			}
			v := c.Evaluate(overran(tt.ran))
			if v.Outcome != Pass || v.Samples != tt.samples {
				t.Errorf("got %s on %d requests (%s); want pass on %d", v.Outcome, v.Samples, v.Reason, tt.samples)
			}
			notes := strings.Join(v.Notes, " | ")
			if (tt.note == "") != (notes == "") || !strings.Contains(notes, tt.note) {
				t.Errorf("notes %q; want %q", notes, tt.note)
			}
		})
	}

	m := Measure(overran(1600*time.Millisecond), convCls(Classification{}))
	if pm := m.Phases[1]; pm.Name != "fault" || pm.Planned != time.Second || pm.Overrun != 600*time.Millisecond {
		t.Errorf("phase figures %+v; want fault planned 1s, 600ms over", pm)
	}
	var found []string
	for _, f := range m.Findings {
		if f.Kind == "phase_overrun" {
			found = append(found, f.Message)
		}
	}
	if len(found) != 1 || !strings.Contains(found[0], `phase "fault" ran 1.6s of a planned 1s (600ms over): requests in flight at its planned end held it`) {
		t.Errorf("overrun findings %q", found)
	}
	if m := Measure(overran(1150*time.Millisecond), convCls(Classification{})); m.Phases[1].Overrun != 0 || len(m.Findings) != 0 {
		t.Errorf("150ms past the plan: %+v, findings %v; want no overrun", m.Phases[1], m.Findings)
	}
}
