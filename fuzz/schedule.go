// Package fuzz searches for the faults nobody thought of. A fuzz scenario
// declares a fault space (plan.FaultSpace) and invariants (its
// contracts); this package draws fault schedules from the space,
// deterministically from a seed or from bytes, renders each as an ordinary
// scenario, searches for one that breaks an invariant, shrinks it to a
// minimal one that `chaoskit run` replays, and explores single faults and
// pairs of them systematically. Schedules are run by a Trier; package
// fuzz/trials runs them for real.
package fuzz

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/fault"
	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/plan"
)

// Fault is one fault of a schedule.
type Fault struct {
	// Point is the failpoint as the fault space names it, or proxy/NAME
	// for a proxy fault; Path its full path (proxy/NAME).
	Point string
	Path  string
	// Proxy names the proxy of a proxy fault, Process the process of a
	// process fault; both empty for a failpoint.
	Proxy   string
	Process string
	// Action and Value are what the fault does (see inject.Fault; for an
	// HTTP or gRPC proxy, abort with the status Value, or delay for it).
	Action inject.Action
	Value  string
	// Match restricts a fault on an HTTP or gRPC proxy to some requests.
	Match *fault.Match
	// Probability is the share of evaluations that fire; 0 means always.
	Probability float64
	// After and For place the fault in its phase: on After into it, for
	// For (0: to the phase's end).
	After time.Duration
	For   time.Duration
}

// Key names the fault's point and action, the unit coverage counts:
// "store/productQuery=timeout".
func (f Fault) Key() string { return f.Point + "=" + string(f.Action) }

// String describes the fault in one short phrase:
// "store/productQuery=latency(120ms) 45% +300ms for 1s".
func (f Fault) String() string {
	var b strings.Builder
	b.WriteString(f.Key())
	if f.Value != "" {
		fmt.Fprintf(&b, "(%s)", f.Value)
	}
	if f.Probability > 0 && f.Probability < 1 {
		fmt.Fprintf(&b, " %s%%", strconv.FormatFloat(math.Round(f.Probability*1000)/10, 'f', -1, 64))
	}
	if f.After > 0 {
		fmt.Fprintf(&b, " +%v", f.After)
	}
	if f.For > 0 {
		fmt.Fprintf(&b, " for %v", f.For)
	}
	return b.String()
}

// hasProbability says whether the fault can act on a share of the
// traffic: a proxy that is down is down for every connection, and a
// process is killed, paused or restarted whole.
func (f Fault) hasProbability() bool {
	return !(f.Proxy != "" && f.Action == "down") && f.Process == ""
}

// window returns when the fault is on, as offsets into a phase of length d.
func (f Fault) window(d time.Duration) (on, off time.Duration) {
	on, off = f.After, d
	if f.For > 0 {
		off = f.After + f.For
	}
	return on, off
}

// Phase is one phase of a schedule.
type Phase struct {
	Name     string
	Duration time.Duration
	Faults   []Fault
}

// Schedule is one trial: phases with their faults, and the load's rate.
type Schedule struct {
	Phases []Phase
	// RateScale multiplies the scenario's rate; 0 and 1 leave it as
	// written. Shrinking lowers it.
	RateScale float64
}

// Clone returns a deep copy of s.
func (s Schedule) Clone() Schedule {
	out := Schedule{RateScale: s.RateScale, Phases: make([]Phase, len(s.Phases))}
	for i, p := range s.Phases {
		p.Faults = slices.Clone(p.Faults)
		out.Phases[i] = p
	}
	return out
}

// Faults counts the schedule's faults.
func (s Schedule) Faults() int {
	n := 0
	for _, p := range s.Phases {
		n += len(p.Faults)
	}
	return n
}

// Duration is the schedule's total length.
func (s Schedule) Duration() time.Duration {
	var d time.Duration
	for _, p := range s.Phases {
		d += p.Duration
	}
	return d
}

// Scale returns the rate multiplier, 1 when the schedule leaves the rate
// as written.
func (s Schedule) Scale() float64 {
	if s.RateScale <= 0 {
		return 1
	}
	return s.RateScale
}

// String describes the schedule on one line:
// "warmup 1.5s | faults-1 2s: store/productQuery=timeout | recovery 3s".
func (s Schedule) String() string {
	parts := make([]string, len(s.Phases))
	for i, p := range s.Phases {
		part := fmt.Sprintf("%s %v", p.Name, p.Duration)
		if len(p.Faults) > 0 {
			fs := make([]string, len(p.Faults))
			for j, f := range p.Faults {
				fs[j] = f.String()
			}
			part += ": " + strings.Join(fs, ", ")
		}
		parts[i] = part
	}
	out := strings.Join(parts, " | ")
	if s.Scale() != 1 {
		out += fmt.Sprintf(" (rate ×%s)", strconv.FormatFloat(s.Scale(), 'f', -1, 64))
	}
	return out
}

// Validate checks what every schedule must satisfy to become a valid
// scenario: named phases of positive length, faults inside their phase,
// one fault at a time per failpoint, actions the fault space allows.
func (s Schedule) Validate(fz *plan.FaultSpace) error {
	if len(s.Phases) == 0 {
		return errors.New("schedule has no phases")
	}
	allowed := map[string]bool{}
	for _, ff := range fz.Faults {
		for _, a := range ff.Actions {
			allowed[ff.Path+"="+a] = true
		}
	}
	names := map[string]bool{}
	for _, p := range s.Phases {
		switch {
		case p.Name == "" || names[p.Name]:
			return fmt.Errorf("phase name %q is empty or used twice", p.Name)
		case p.Duration <= 0 || p.Duration > plan.MaxPhase:
			return fmt.Errorf("phase %s lasts %v", p.Name, p.Duration)
		}
		names[p.Name] = true
		type span struct{ on, off time.Duration }
		on := map[string][]span{}
		for _, f := range p.Faults {
			a, b := f.window(p.Duration)
			switch {
			case !allowed[f.Path+"="+string(f.Action)]:
				return fmt.Errorf("phase %s: fault %s is outside the fault space", p.Name, f.Key())
			case f.After < 0 || f.For < 0 || a >= p.Duration || b > p.Duration:
				return fmt.Errorf("phase %s: fault %s is not inside the phase (%v)", p.Name, f, p.Duration)
			case f.Probability < 0 || f.Probability > 1:
				return fmt.Errorf("phase %s: fault %s has probability %v", p.Name, f.Key(), f.Probability)
			}
			for _, w := range on[f.Path] {
				if a < w.off && w.on < b {
					return fmt.Errorf("phase %s: two faults on %s at once", p.Name, f.Point)
				}
			}
			on[f.Path] = append(on[f.Path], span{a, b})
		}
	}
	return nil
}

// Extract returns the schedule a loaded scenario runs: its phases and
// faults. It is the inverse of Render for the phases.
func Extract(sc *plan.Scenario) Schedule {
	var s Schedule
	for _, p := range sc.Phases {
		ph := Phase{Name: p.Name, Duration: p.Duration.D()}
		for _, f := range p.Faults {
			ff := Fault{Point: f.Point, Path: f.Path, Action: inject.Action(f.Action), Value: f.Value,
				Probability: f.Probability, After: f.After.D(), For: f.For.D()}
			if f.Process != "" {
				ff.Point, ff.Process = f.Path, f.Process
			}
			if f.Proxy != "" {
				ff.Point, ff.Proxy, ff.Match = f.Path, f.Proxy, f.Match
				if f.Action == "latency" {
					ff.Value = f.Latency.D().String()
				}
			}
			ph.Faults = append(ph.Faults, ff)
		}
		s.Phases = append(s.Phases, ph)
	}
	return s
}
