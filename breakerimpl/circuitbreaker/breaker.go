// Package circuitbreaker stops calls to a dependency that keeps failing, so
// that it gets room to recover and callers fail fast instead of piling up.
//
// A Breaker is closed (calls run; a Rule counts their outcomes), open (calls
// are rejected with ErrOpen for Settings.OpenDuration, growing with backoff
// while the dependency keeps failing) or half-open (up to N probe calls run
// at a time; M successes in a row close it, any failure opens it again, and
// so does a stay longer than Settings.MaxHalfOpenWait). Three rules ship:
// ErrorRate (hystrix), ConsecutiveFailures (gobreaker) and Adaptive (the
// Google SRE client-side throttle, as in go-zero, which never opens but
// rejects a share of calls).
//
// Call it with Execute, or in two steps with Allow and Permit.Done when the
// work cannot be wrapped in a function. A Breaker is also a
// breakerimpl.Guard, so it goes in a breakerimpl.Pipeline next to a
// fallback.
//
// Operators can force it open or closed and hand it back (ForceOpen,
// ForceClosed, ResumeAutomatic), and change its settings under load
// (Update) without losing counts. Every change is published to
// Settings.OnStateChange with the counts that caused it; Snapshot returns
// the state and lifetime counters for metrics (the prombreaker package
// exports them to Prometheus) and LogStateChanges logs changes with
// log/slog.
//
// Allow and Done take no lock and never allocate while the breaker is
// closed or open: the state is one atomic pointer, a success or a
// rejection adds to atomic counters, and the time is read from
// Settings.Clock, by default a coarse clock whose reading is an atomic
// load; a success reads none (a timer marks the end of its window's
// bucket). Changes of state take a lock; the half-open state's probe
// slots have one of their own.
package circuitbreaker

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/internal/rolling"
)

// Errors returned by Allow and Execute when the breaker refuses a call.
// ErrOpen and ErrHalfOpenFull are the breakerimpl values, so errors.Is
// works with either name; ErrThrottled is also a breakerimpl.ErrRejected.
var (
	ErrOpen         = breakerimpl.ErrOpen
	ErrHalfOpenFull = breakerimpl.ErrHalfOpenFull
	ErrThrottled    = fmt.Errorf("circuitbreaker: adaptive throttling: %w", breakerimpl.ErrRejected)
)

// Breaker is a circuit breaker. Make one with New; it is safe for concurrent
// use.
type Breaker struct {
	name   string
	clock  clock.Clock
	period atomic.Pointer[period] // the current state; replaced whole on every change
	probes probeSlots
	_      [128]byte // keeps the counts every call writes off the line of period, which every call reads

	// counts are the lifetime counts of the calls admitted in closed
	// periods, by outcome, and of the adaptive throttle's rejections (by
	// the slots of rule.go). The windows of ErrorRate and Adaptive count
	// in them, each from its period's start; with the other rules the
	// breaker counts in them itself.
	counts rolling.Totals

	// Lifetime counts of the rest: outcomes of probes and of calls that
	// outlived the period that admitted them, rejections while open or
	// half-open, ignored calls, and slow calls (also in the failures).
	otherSuccesses, otherFailures, rejections, ignored, slowCalls atomic.Uint64

	mu             sync.Mutex // serialises changes of state and settings, and their events
	changes        uint64
	overrideReason string
	overrideAt     time.Time
}

// A permit's id is the generation that admitted it, shifted left by two,
// with probeBit set for a half-open probe and timedBit when its start was
// taken for slow-call detection.
const (
	probeBit = 1
	timedBit = 2
	genShift = 2
)

// period is one stay in one state, with the settings in force. A change of
// state installs a new period, so counts never leak from one stay into the
// next, and a call admitted in an earlier period (an older generation) is
// not counted in this one. A change of settings or override that keeps the
// state installs a copy with the same generation and the same counts.
// A period is never modified once installed.
type period struct {
	state    State
	override Override
	gen      uint64
	since    int64 // Nanotime the state began
	cfg      *Settings

	// until is when the stay's time is up. Open: the open duration ends and
	// the next call is a probe (math.MaxInt64 when forced open). HalfOpen:
	// the probes have not decided within MaxHalfOpenWait, and the breaker
	// opens again.
	until   int64
	openFor time.Duration // Open
	streak  int           // Open, HalfOpen: openings in a row without closing

	window Window // Closed: the rule's counts
	// outcomes is window's counts when the rule is ErrorRate or Adaptive,
	// which count in the breaker's counts; nil for other rules.
	outcomes *outcomes
	throttle *throttleWindow // Closed, adaptive rule, not forced closed
	half     *halfOpen       // HalfOpen

	// admitsAll: closed, not throttled, calls not timed: every call is
	// admitted, and a success need only be counted.
	admitsAll bool
}

type halfOpen struct {
	passed  atomic.Int32 // successful probes in a row
	flunked atomic.Bool  // a probe failed
}

// probeSlots are the N slots of half-open probes. A probe holds its slot
// until it returns, even past the end of the half-open stay that admitted
// it, so that a slow dependency never has more than N probes at once. The
// exception is a stay that ends for want of an answer (MaxHalfOpenWait):
// its probes, and any older ones, are abandoned, so that a probe that
// never returns cannot keep the next stays from probing.
type probeSlots struct {
	mu      sync.Mutex
	running int
	// abandoned is the generation of the last half-open stay whose probes
	// were abandoned: probes admitted in it, or before, hold no slot.
	abandoned uint64
}

// take takes one of n slots for a probe, if one is free.
func (s *probeSlots) take(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running >= n {
		return false
	}
	s.running++
	return true
}

// give gives back the slot of a probe admitted in generation gen.
func (s *probeSlots) give(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen > s.abandoned {
		s.running--
	}
}

// abandon frees the slots of the probes admitted in generation gen or
// before, which is every probe running.
func (s *probeSlots) abandon(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running, s.abandoned = 0, gen
}

func (s *probeSlots) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// New returns a closed Breaker with the given settings (see Settings for
// the defaults of zero fields).
func New(s Settings) *Breaker {
	s = s.withDefaults()
	b := &Breaker{name: s.Name, clock: s.Clock}
	p := &period{state: Closed, cfg: &s, since: b.clock.Nanotime()}
	b.newWindow(p)
	b.install(p)
	return b
}

// newWindow gives closed period p fresh counts from its rule.
func (b *Breaker) newWindow(p *period) {
	if r, ok := p.cfg.Rule.(countingRule); ok {
		p.window, p.outcomes = r.newWindowOver(&b.counts, b.clock)
		return
	}
	p.window, p.outcomes = p.cfg.Rule.NewWindow(b.clock), nil
}

// Name returns Settings.Name.
func (b *Breaker) Name() string { return b.name }

// Settings returns the settings in force, defaults filled in.
func (b *Breaker) Settings() Settings { return *b.period.Load().cfg }

// State returns the current state. An open breaker whose open duration has
// ended reports, and becomes, half-open; a half-open one whose stay is
// longer than MaxHalfOpenWait, open.
func (b *Breaker) State() State {
	p := b.period.Load()
	if p.state != Closed && b.clock.Nanotime() >= p.until {
		p = b.timeUp(p)
	}
	return p.state
}

// timeUp ends open or half-open period p, whose time is up, and returns the
// period now current.
func (b *Breaker) timeUp(p *period) *period {
	if p.state == Open {
		return b.change(p, HalfOpen, OpenElapsed)
	}
	return b.change(p, Open, ProbesTimedOut)
}

// Counts returns the counts of the current state: the rule's window when
// closed, the probes when half-open, nothing when open.
func (b *Breaker) Counts() Counts { return b.period.Load().counts() }

func (p *period) counts() Counts {
	switch p.state {
	case Closed:
		return p.window.Counts()
	case HalfOpen:
		c := Counts{Successes: uint64(p.half.passed.Load())}
		if p.half.flunked.Load() {
			c.Failures = 1
		}
		c.Requests = c.Successes + c.Failures
		return c
	}
	return Counts{}
}

// Allow admits a call or refuses it with ErrOpen, ErrHalfOpenFull or
// ErrThrottled. When it admits, call Done on the returned permit exactly
// once with the call's error. ctx is not used by the breaker; it is there
// for breakerimpl.Guard.
func (b *Breaker) Allow(context.Context) (breakerimpl.Permit, error) {
	for {
		p := b.period.Load()
		if p.state == Closed {
			if t := p.throttle; t != nil && !t.admit(p.cfg.Rand) {
				return breakerimpl.Permit{}, ErrThrottled // counted by the window
			}
			return b.permit(p, 0), nil
		}
		if b.clock.Nanotime() >= p.until {
			b.timeUp(p)
			continue
		}
		if p.state == Open {
			b.rejections.Add(1)
			return breakerimpl.Permit{}, ErrOpen
		}
		if !b.probes.take(p.cfg.HalfOpenProbes) {
			b.rejections.Add(1)
			return breakerimpl.Permit{}, ErrHalfOpenFull
		}
		if b.period.Load().gen != p.gen {
			// The half-open period ended while we joined it: give the slot
			// back and look again.
			b.probes.give(p.gen)
			continue
		}
		return b.permit(p, probeBit), nil
	}
}

// permit returns a permit of period p, timed if slow calls are detected.
func (b *Breaker) permit(p *period, flags uint64) breakerimpl.Permit {
	var start int64
	if p.cfg.SlowCallThreshold > 0 {
		flags |= timedBit
		start = b.clock.Nanotime()
	}
	return breakerimpl.NewPermit(b, p.gen<<genShift|flags, start)
}

// Done records the end of a call admitted by Allow; use Permit.Done rather
// than calling it directly. A permit from an earlier state (the breaker
// changed state while the call ran) counts in the lifetime counters but
// not in the current state's.
func (b *Breaker) Done(pm breakerimpl.Permit, err error) {
	id := pm.ID()
	if id&probeBit != 0 {
		b.probes.give(id >> genShift)
	}
	p := b.period.Load()
	o, slow := breakerimpl.Success, false
	if err != nil || id&timedBit != 0 {
		o, slow = b.outcome(p.cfg, pm, err)
	}
	if slow {
		b.slowCalls.Add(1)
	}
	current := p.gen == id>>genShift
	switch {
	case o == breakerimpl.Ignored:
		b.ignored.Add(1)
	case !current || p.state != Closed:
		if o == breakerimpl.Success {
			b.otherSuccesses.Add(1)
		} else {
			b.otherFailures.Add(1)
		}
		if current && p.state == HalfOpen {
			b.probed(p, o)
		}
	case o == breakerimpl.Success:
		b.succeeded(p)
	default:
		if p.outcomes == nil {
			b.counts[slotFailures].Add(1)
		}
		trip := false
		if sw, ok := p.window.(slowWindow); ok && slow {
			trip = sw.Slow()
		} else {
			trip = p.window.Failure()
		}
		if trip && p.override == Automatic {
			b.change(p, Open, Tripped)
		}
	}
}

// succeeded counts a success in closed period p.
func (b *Breaker) succeeded(p *period) {
	if w := p.outcomes; w != nil {
		w.Success() // in the breaker's counts too
	} else {
		b.counts[slotSuccesses].Add(1)
		p.window.Success()
	}
}

// probed records the outcome of a probe of half-open period p.
func (b *Breaker) probed(p *period, o breakerimpl.Outcome) {
	if o == breakerimpl.Failure {
		p.half.flunked.Store(true)
		b.change(p, Open, ProbeFailed)
	} else if p.half.passed.Add(1) >= int32(p.cfg.HalfOpenSuccesses) {
		b.change(p, Closed, ProbesSucceeded)
	}
}

// outcome classifies the end of a call: nil is a success unless the call
// was slow, a panic is a failure, and other errors go to Classify.
func (b *Breaker) outcome(s *Settings, pm breakerimpl.Permit, err error) (o breakerimpl.Outcome, slow bool) {
	if err != nil {
		if _, panicked := err.(*breakerimpl.PanicError); panicked {
			return breakerimpl.Failure, false
		}
		if o = s.Classify(err); o != breakerimpl.Success {
			return o, false
		}
	}
	if pm.ID()&timedBit != 0 && s.SlowCallThreshold > 0 && b.clock.Nanotime()-pm.Start() > int64(s.SlowCallThreshold) {
		return breakerimpl.Failure, true
	}
	return breakerimpl.Success, false
}

// change moves the breaker from period p to a new period in state to,
// unless another caller changed the state first, publishes the change, and
// returns the period now current.
func (b *Breaker) change(p *period, to State, why Transition) *period {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.period.Load()
	if cur.gen != p.gen {
		return cur
	}
	return b.enter(cur, to, cur.override, why, "")
}

// enter installs a new period in state to after cur and publishes the
// change. b.mu is held.
func (b *Breaker) enter(cur *period, to State, ov Override, why Transition, detail string) *period {
	next := &period{state: to, override: ov, gen: cur.gen + 1, since: b.clock.Nanotime(), cfg: cur.cfg}
	switch to {
	case Open:
		if ov == ForcedOpen {
			next.until = math.MaxInt64
			break
		}
		if cur.state == HalfOpen {
			next.streak = cur.streak + 1
		}
		next.openFor = next.cfg.openDuration(next.streak)
		next.until = next.since + int64(next.openFor)
	case HalfOpen:
		next.half = &halfOpen{}
		next.streak = cur.streak
		next.until = next.since + int64(next.cfg.MaxHalfOpenWait)
	case Closed:
		b.newWindow(next)
	}
	if why == ProbesTimedOut {
		b.probes.abandon(cur.gen)
	}
	counts := cur.counts()
	b.install(next)
	b.publish(next, StateChange{From: cur.state, To: to, Reason: why, Detail: detail, Counts: counts, OpenFor: next.openFor})
	return next
}

// install makes next the current period, after deriving its throttle from
// its state, window and override. next is a new state (enter), or a copy
// of the current period with the same state and generation (a change of
// settings or override), so that calls running keep counting. b.mu is
// held, or b is being made.
func (b *Breaker) install(next *period) {
	next.throttle = nil
	if tw, ok := next.window.(*throttleWindow); ok && next.state == Closed && next.override != ForcedClosed {
		next.throttle = tw
	}
	next.admitsAll = next.state == Closed && next.throttle == nil && next.cfg.SlowCallThreshold == 0
	b.period.Store(next)
}

// publish numbers e, completes it and hands it to the listener. b.mu is
// held.
func (b *Breaker) publish(p *period, e StateChange) {
	b.changes++
	e.Name, e.Override, e.Generation = b.name, p.override, b.changes
	if f := p.cfg.OnStateChange; f != nil {
		e.At = b.clock.Now()
		f(e)
	}
}

// ForceOpen opens the breaker until ResumeAutomatic or ForceClosed, whatever
// its rule says: every call is rejected with ErrOpen. reason is recorded in
// the event and in Snapshot.
func (b *Breaker) ForceOpen(reason string) { b.force(ForcedOpen, reason) }

// ForceClosed closes the breaker until ResumeAutomatic or ForceOpen: every
// call runs, outcomes are counted, nothing trips and nothing is throttled.
// reason is recorded in the event and in Snapshot.
func (b *Breaker) ForceClosed(reason string) { b.force(ForcedClosed, reason) }

// ResumeAutomatic hands the breaker back to its rule. A breaker forced open
// becomes half-open, so that probes decide whether the dependency is back;
// one forced closed stays closed with the counts it gathered meanwhile, and
// trips at the next failure if they call for it. reason is recorded.
func (b *Breaker) ResumeAutomatic(reason string) { b.force(Automatic, reason) }

func (b *Breaker) force(ov Override, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.period.Load()
	b.overrideReason, b.overrideAt = reason, b.clock.Now()
	if ov == Automatic {
		b.overrideReason, b.overrideAt = "", time.Time{}
	}
	switch {
	case ov == ForcedOpen:
		b.enter(cur, Open, ForcedOpen, ManualOpen, reason)
	case ov == ForcedClosed && cur.state != Closed:
		b.enter(cur, Closed, ForcedClosed, ManualClose, reason)
	case ov == Automatic && cur.override == ForcedOpen:
		b.enter(cur, HalfOpen, Automatic, ManualResume, reason)
	default:
		// The state stays: closed (forced closed or back to automatic), or
		// a breaker already automatic told to resume.
		next := *cur
		next.override = ov
		b.install(&next)
		why := ManualClose
		if ov == Automatic {
			why = ManualResume
		}
		b.publish(&next, StateChange{From: cur.state, To: cur.state, Reason: why, Detail: reason, Counts: cur.counts()})
	}
}

// Update changes the breaker's settings at run time: change is given a copy
// of the settings in force (defaults filled in) and edits it. Name and
// Clock cannot change; edits to them are ignored.
//
// Counts are kept: a new threshold (MinRequests, Percent, K, Threshold,
// Protection, MaxRejectRate) applies to the counts of the current window,
// judged at the next call; only a change of the rule's kind or of its
// window's span or buckets starts fresh counts, published as a
// Reconfigured change. A new open duration applies to the current open
// stay, and a new MaxHalfOpenWait to the current half-open stay, counted
// from its start. Calls running keep their permits.
func (b *Breaker) Update(change func(*Settings)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.period.Load()
	s := *cur.cfg
	change(&s)
	s.Name, s.Clock = b.name, b.clock
	s = s.withDefaults()
	next := *cur
	next.cfg = &s
	switch cur.state {
	case Closed:
		if sameRule(cur.cfg.Rule, s.Rule) {
			break
		}
		if w, ok := cur.window.(reconfigurable); ok && w.reconfigure(s.Rule) {
			break
		}
		b.newWindow(&next)
		b.install(&next)
		b.publish(&next, StateChange{From: Closed, To: Closed, Reason: Reconfigured, Counts: cur.counts()})
		return
	case Open:
		if cur.override != ForcedOpen {
			next.openFor = s.openDuration(cur.streak)
			next.until = cur.since + int64(next.openFor)
		}
	case HalfOpen:
		next.until = cur.since + int64(s.MaxHalfOpenWait)
	}
	b.install(&next)
}

// sameRule reports whether a and b are equal rule values.
func sameRule(a, b Rule) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) || !reflect.TypeOf(a).Comparable() {
		return false
	}
	return a == b
}

// Snapshot returns the state, override and lifetime counters. It takes the
// breaker's lock; call it for metrics and status, not on every request.
func (b *Breaker) Snapshot() Snapshot {
	state := b.State()
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.period.Load()
	now, wall := b.clock.Nanotime(), b.clock.Now()
	s := Snapshot{
		Name:           b.name,
		State:          state,
		Override:       p.override,
		OverrideReason: b.overrideReason,
		OverrideAt:     b.overrideAt,
		Since:          wall.Add(-time.Duration(now - p.since)),
		Window:         p.counts(),
		ProbesRunning:  b.probes.count(),
		Successes:      uint64(b.counts[slotSuccesses].Load()) + b.otherSuccesses.Load(),
		Failures:       uint64(b.counts[slotFailures].Load()) + b.otherFailures.Load(),
		Ignored:        b.ignored.Load(),
		SlowCalls:      b.slowCalls.Load(),
		Rejections:     uint64(b.counts[slotRejected].Load()) + b.rejections.Load(),
		StateChanges:   b.changes,
	}
	if p.state == Open && p.override != ForcedOpen {
		s.RetryAfter = time.Duration(max(p.until-now, 0))
	}
	s.Requests = s.Successes + s.Failures + s.Ignored + s.Rejections
	return s
}

// RetryAfter returns how long the breaker will go on rejecting calls: the
// rest of the open duration when open, zero otherwise (and when forced open,
// since no one knows). It is cheap enough for every rejected request.
func (b *Breaker) RetryAfter() time.Duration {
	p := b.period.Load()
	if p.state != Open || p.override == ForcedOpen {
		return 0
	}
	return time.Duration(max(p.until-b.clock.Nanotime(), 0))
}

// Execute runs fn(ctx) if b admits the call and records its outcome. When b
// refuses, fn does not run and the error is ErrOpen, ErrHalfOpenFull or
// ErrThrottled. A panic in fn counts as a failure and is raised again.
//
// It is breakerimpl.Run with the breaker's methods called directly, and a
// shortcut for the usual call, a success while the breaker admits every
// call: Allow would only hand out p's permit, and Done only count the
// success in p.
func Execute[T any](ctx context.Context, b *Breaker, fn func(context.Context) (T, error)) (v T, err error) {
	p := b.period.Load()
	var pm breakerimpl.Permit
	if p.admitsAll {
		pm = breakerimpl.NewPermit(b, p.gen<<genShift, 0)
	} else if pm, err = b.Allow(ctx); err != nil {
		return v, err
	}
	finished := false
	defer func() {
		if !finished {
			pm.Panicked(recover())
		}
	}()
	v, err = fn(ctx)
	finished = true
	if err == nil && p.admitsAll && b.period.Load() == p {
		b.succeeded(p)
	} else {
		b.Done(pm, err)
	}
	return v, err
}
