// Package degrade is a switch that forces the fallback while a measured
// signal says the dependency is degraded: its p99 latency, its error rate,
// its health score, anything a func can read. It is the metrics-driven
// kill switch of the pattern catalogue, and a breakerimpl.Pipeline takes a
// *Switch as its Degrade guard.
//
// The switch engages when the signal stays over Threshold for For, and
// releases with hysteresis: when the signal stays at or under Release (at
// most Threshold) for Hold. A signal hovering around the threshold does not
// flap it: it must fall well under it, and stay there.
//
//	released ──(signal > Threshold for For)──▶ engaged
//	engaged  ──(signal ≤ Release  for Hold)──▶ released
//
// While engaged, Allow refuses calls with ErrEngaged (a
// breakerimpl.ErrDegraded, Reason "degraded"), so that the fallback
// serves, but admits one call every ProbeInterval: a signal measured on the
// dependency's own calls would otherwise never see it recover.
//
// The signal is read at most once every Interval, by the Allow, State or
// Snapshot that finds it due; a switch with no calls and no one watching
// reads nothing and has no goroutine or timer. "For" and "Hold" are
// therefore measured between readings: the switch engages at the first
// reading at least For after the first of an unbroken run of readings over
// the threshold.
package degrade

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// ErrEngaged is the error of a call an engaged Switch refused. It matches
// breakerimpl.ErrDegraded with errors.Is.
var ErrEngaged error = engaged{}

type engaged struct{}

func (engaged) Error() string { return "degrade: switch engaged, fallback forced" }
func (engaged) Unwrap() error { return breakerimpl.ErrDegraded }

// DefaultInterval is the Interval of Settings that leave it zero.
const DefaultInterval = 100 * time.Millisecond

// Settings configures a Switch.
//
// Name names the switch in events and snapshots.
//
// Signal is read to decide; it is required. It must be safe for concurrent
// use, quick, and must not call the Switch. A NaN reading changes nothing.
//
// Threshold: the switch engages when the signal stays over it for For
// (zero: at the first reading over it).
//
// Release: the switch releases when the signal stays at or under it for
// Hold (zero: at the first such reading). Zero or more than Threshold
// means Threshold; to release only at a signal of zero, use a tiny value.
// A Release of -Inf never releases.
//
// Interval is the least time between two readings; zero means 100ms.
//
// ProbeInterval: while engaged, one call in every ProbeInterval is let
// through to the dependency. Zero means Interval; negative means none
// (then the signal must not depend on the calls the switch refuses).
//
// OnChange is told every change, on the goroutine that read the signal. It
// must be quick and must not call the Switch.
//
// Clock is the time source; nil means clock.Default().
type Settings struct {
	Name               string
	Signal             func() float64
	Threshold, Release float64
	For, Hold          time.Duration
	Interval           time.Duration
	ProbeInterval      time.Duration
	OnChange           func(Event)
	Clock              clock.Clock
}

// Reason codes of switch events.
const (
	// ReasonOver: the signal stayed over the threshold for For.
	ReasonOver = "signal-over-threshold"
	// ReasonUnder: the signal stayed at or under the release level for Hold.
	ReasonUnder = "signal-under-release"
	// ReasonForced and ReasonAutomatic: an operator forced the switch, or
	// gave it back to the signal (ForceEngage, ForceRelease,
	// ResumeAutomatic).
	ReasonForced    = "forced"
	ReasonAutomatic = "automatic"
)

// Event is a change of the switch.
type Event struct {
	Name    string
	Engaged bool    // the new state
	Reason  string  // ReasonOver, ReasonUnder, ReasonForced or ReasonAutomatic
	Signal  float64 // the reading that caused it (NaN for an operator's)
	// Lasted is how long the signal had been over (or under) before the
	// change.
	Lasted time.Duration
}

// String describes the event on one line, for logs and %v.
func (e Event) String() string {
	to := "released"
	if e.Engaged {
		to = "engaged"
	}
	return fmt.Sprintf("degrade switch %s: %s (%s, signal %g for %v)", e.Name, to, e.Reason, e.Signal, e.Lasted)
}

// Snapshot is the state of a switch, for metrics.
type Snapshot struct {
	Name               string
	Engaged            bool
	Override           string  // OverrideAutomatic, OverrideEngaged or OverrideReleased
	Signal             float64 // the last reading, NaN before the first
	Threshold, Release float64
	Engagements        uint64 // times it engaged, since creation
	Refused            uint64 // calls it refused, since creation
	Probes             uint64 // calls let through while engaged, since creation
}

// Switch is a degrade switch. Make one with New; it is safe for concurrent
// use.
type Switch struct {
	cfg     Settings
	engaged atomic.Bool
	next    atomic.Int64 // Nanotime of the next reading
	probeAt atomic.Int64 // Nanotime from which the next probe may go
	probeIv atomic.Int64 // cfg.ProbeInterval, which Allow reads without the lock

	refused, probes, engagements atomic.Uint64

	mu       sync.Mutex
	since    int64 // first reading of the current run over (released) or under (engaged); -1 for none
	signal   float64
	override string // OverrideAutomatic, OverrideEngaged or OverrideReleased
}

// New returns a Switch with the given settings. It starts released. It
// panics if s.Signal is nil.
func New(s Settings) *Switch {
	if s.Signal == nil {
		panic("degrade: Settings.Signal is nil")
	}
	if s.Clock == nil {
		s.Clock = clock.Default()
	}
	w := &Switch{cfg: s, since: -1, signal: math.NaN(), override: OverrideAutomatic}
	w.tuneLocked(Tuning{Threshold: s.Threshold, Release: s.Release, For: s.For, Hold: s.Hold, Interval: s.Interval, ProbeInterval: s.ProbeInterval})
	return w
}

// Tuning is the part of Settings a Switch takes while it runs (see Tune):
// the fields of the same names, with the same meaning and defaults.
type Tuning struct {
	Threshold, Release float64
	For, Hold          time.Duration
	Interval           time.Duration
	ProbeInterval      time.Duration
}

// Tuning returns the figures in force, defaults filled in.
func (w *Switch) Tuning() Tuning {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.cfg
	return Tuning{Threshold: c.Threshold, Release: c.Release, For: c.For, Hold: c.Hold, Interval: c.Interval, ProbeInterval: c.ProbeInterval}
}

// Tune puts new figures in force, with the defaults of Settings for the
// fields left zero. The state stays as it is; a run of readings over (or
// under) the threshold starts again, and the signal is read at the next
// call. Package reload calls it when a policy file changes.
func (w *Switch) Tune(t Tuning) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tuneLocked(t)
}

func (w *Switch) tuneLocked(t Tuning) {
	if t.Release == 0 || t.Release > t.Threshold {
		t.Release = t.Threshold
	}
	if t.Interval <= 0 {
		t.Interval = DefaultInterval
	}
	if t.ProbeInterval == 0 {
		t.ProbeInterval = t.Interval
	}
	w.cfg.Threshold, w.cfg.Release = t.Threshold, t.Release
	w.cfg.For, w.cfg.Hold = t.For, t.Hold
	w.cfg.Interval, w.cfg.ProbeInterval = t.Interval, t.ProbeInterval
	w.probeIv.Store(int64(t.ProbeInterval))
	w.since = -1
	w.next.Store(math.MinInt64)
}

// Engaged reports whether the switch forces the fallback now, reading the
// signal if a reading is due.
func (w *Switch) Engaged() bool {
	w.poll(w.cfg.Clock.Nanotime())
	return w.engaged.Load()
}

// poll reads the signal if a reading is due.
func (w *Switch) poll(now int64) {
	if now < w.next.Load() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if now < w.next.Load() {
		return // another caller read it
	}
	w.next.Store(now + int64(w.cfg.Interval))
	v := w.cfg.Signal()
	if math.IsNaN(v) {
		return
	}
	w.signal = v
	if w.override != OverrideAutomatic {
		return
	}
	on := w.engaged.Load()
	bad := v > w.cfg.Threshold
	if on {
		bad = v > w.cfg.Release
	}
	if on == bad {
		w.since = -1 // the run that would change it is broken
		return
	}
	if w.since < 0 {
		w.since = now
	}
	need := w.cfg.For
	if on {
		need = w.cfg.Hold
	}
	lasted := time.Duration(now - w.since)
	if lasted < need {
		return
	}
	reason := ReasonOver
	if on {
		reason = ReasonUnder
	}
	w.set(!on, Event{Name: w.cfg.Name, Engaged: !on, Reason: reason, Signal: v, Lasted: lasted}, now)
}

// set changes the state, w.mu held.
func (w *Switch) set(on bool, e Event, now int64) {
	w.since = -1
	if w.engaged.Load() == on {
		return
	}
	w.engaged.Store(on)
	if on {
		w.engagements.Add(1)
		w.probeAt.Store(now + w.probeIv.Load())
	}
	if f := w.cfg.OnChange; f != nil {
		f(e)
	}
}

// ForceEngage engages the switch whatever the signal says, until
// ResumeAutomatic: an operator's kill switch.
func (w *Switch) ForceEngage() { w.force(OverrideEngaged) }

// ForceRelease releases the switch and keeps it released whatever the
// signal says, until ResumeAutomatic.
func (w *Switch) ForceRelease() { w.force(OverrideReleased) }

// ResumeAutomatic gives the switch back to its signal, in the state it is
// in.
func (w *Switch) ResumeAutomatic() { w.force(OverrideAutomatic) }

// Overrides an operator can put in force.
const (
	OverrideAutomatic = "automatic"
	OverrideEngaged   = "engaged"
	OverrideReleased  = "released"
)

func (w *Switch) force(o string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.override == o {
		return
	}
	w.override = o
	w.since = -1
	on := w.engaged.Load()
	e := Event{Name: w.cfg.Name, Engaged: on, Reason: ReasonAutomatic, Signal: math.NaN()}
	if o != OverrideAutomatic {
		on = o == OverrideEngaged
		e.Engaged, e.Reason = on, ReasonForced
	}
	if on != w.engaged.Load() {
		w.set(on, e, w.cfg.Clock.Nanotime())
	} else if f := w.cfg.OnChange; f != nil {
		f(e)
	}
}

// Snapshot returns the switch's state and counters, reading the signal if
// a reading is due.
func (w *Switch) Snapshot() Snapshot {
	w.poll(w.cfg.Clock.Nanotime())
	w.mu.Lock()
	defer w.mu.Unlock()
	s := Snapshot{
		Name: w.cfg.Name, Engaged: w.engaged.Load(), Override: w.override, Signal: w.signal,
		Threshold: w.cfg.Threshold, Release: w.cfg.Release,
		Engagements: w.engagements.Load(), Refused: w.refused.Load(), Probes: w.probes.Load(),
	}
	return s
}

// Allow implements breakerimpl.Guard: while the switch is engaged it
// refuses the call with ErrEngaged, but for one probe every ProbeInterval.
// An admitted call's Permit does nothing when done.
func (w *Switch) Allow(context.Context) (breakerimpl.Permit, error) {
	now := w.cfg.Clock.Nanotime()
	w.poll(now)
	if !w.engaged.Load() {
		return breakerimpl.Permit{}, nil
	}
	if pi := w.probeIv.Load(); pi > 0 {
		if at := w.probeAt.Load(); now >= at && w.probeAt.CompareAndSwap(at, now+pi) {
			w.probes.Add(1)
			return breakerimpl.Permit{}, nil
		}
	}
	w.refused.Add(1)
	return breakerimpl.Permit{}, ErrEngaged
}

// Done implements breakerimpl.Guard; the switch learns nothing from a
// call's end (its signal does).
func (w *Switch) Done(breakerimpl.Permit, error) {}
