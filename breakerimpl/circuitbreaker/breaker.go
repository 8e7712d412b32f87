// Package circuitbreaker stops calls to a dependency that keeps failing, so
// that it gets room to recover and callers fail fast instead of piling up.
//
// A Breaker is closed (calls run; a Rule counts their outcomes), open (calls
// are rejected with ErrOpen for Settings.OpenDuration, growing with backoff
// while the dependency keeps failing) or half-open (up to N probe calls run
// at a time; M successes in a row close it, any failure opens it again).
// Three rules ship: ErrorRate (hystrix), ConsecutiveFailures (gobreaker) and
// Adaptive (the Google SRE client-side throttle, as in go-zero, which never
// opens but rejects a share of calls).
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
// The hot paths take no lock, never allocate and read no clock: a
// successful call, like a rejection, costs one compare-and-swap on a
// counter striped across cores. Timers on Settings.Clock tell them when
// time matters: one marks the end of a rolling window's live bucket, which
// the next success turns over, and one the end of an open duration, after
// which the next call is let through as a probe. Calls that need a reading
// (failures, slow-call timing, half-open) take it from the clock, which by
// default is a coarse one that costs an atomic load.
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
)

// Errors returned by Allow and Execute when the breaker refuses a call.
// ErrOpen and ErrHalfOpenFull are the breakerimpl values, so errors.Is
// works with either name; ErrThrottled is also an breakerimpl.ErrRejected.
var (
	ErrOpen         = breakerimpl.ErrOpen
	ErrHalfOpenFull = breakerimpl.ErrHalfOpenFull
	ErrThrottled    = fmt.Errorf("circuitbreaker: adaptive throttling: %w", breakerimpl.ErrRejected)
)

// Breaker is a circuit breaker. Make one with New; it is safe for concurrent
// use.
type Breaker struct {
	period atomic.Pointer[period] // the current state; replaced whole on every change
	// shut is nonzero while the breaker is open and its open duration has
	// not ended (or it is forced open), so that a rejection reads one word
	// and no clock. A timer clears it when the duration ends; the next call
	// then finds the open period on the slow path and moves to half-open.
	// Zero says nothing: the period decides.
	shut atomic.Uint64
	_    [cacheLine - 16]byte

	// successes counts the successes of calls admitted in the current
	// closed period (the rolling windows read it); rejections every call
	// turned away. Both are on hot paths, hence striped.
	successes  counter
	rejections counter

	name   string
	clock  clock.Clock
	coarse *clock.Coarse // clock, when coarse: read without an interface call

	_ [cacheLine]byte // the fields above are read on every call; those below are written

	// probes counts probe calls running, whatever half-open period admitted
	// them: a probe still running when its period ends keeps its slot until
	// it returns, so a dependency that hangs never sees more than N probes.
	probes atomic.Int32

	// Lifetime counts off the hot path.
	otherSuccesses, failures, ignored, slowCalls atomic.Uint64

	mu             sync.Mutex // serialises changes of state and settings, and their events
	changes        uint64
	shutTag        uint64      // the last value stored in shut
	shutTimer      clock.Timer // clears shut at the end of the open duration
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
// state installs a copy with the same generation and the same counters.
// A period is never modified once installed.
type period struct {
	state    State
	override Override
	// fast: closed, no slow-call timing, no throttling. Allow admits
	// without looking further and a success only needs recording.
	fast  bool
	gen   uint64
	since int64 // Nanotime the state began
	cfg   *Settings

	until   int64 // Open: Nanotime at which probes may start
	openFor time.Duration
	streak  int // Open, HalfOpen: openings in a row without closing

	// Closed: the rule's window, and views of it for the hot paths.
	window   Window
	roll     *rolling           // a built-in rolling window: tick it on success
	consec   *consecutiveWindow // a built-in run counter: reset it on success
	custom   Window             // any other rule's window: tell it of successes
	throttle *throttleWindow    // the adaptive rule, unless forced closed

	half *halfOpen // HalfOpen

	_ [cacheLine]byte // read on every call: keep other objects' writes off its lines
}

type halfOpen struct {
	passed  atomic.Int32 // successful probes in a row
	flunked atomic.Bool  // a probe failed
}

// New returns a closed Breaker with the given settings (see Settings for
// the defaults of zero fields).
func New(s Settings) *Breaker {
	s = s.withDefaults()
	coarse, _ := s.Clock.(*clock.Coarse)
	b := &Breaker{
		name:   s.Name,
		clock:  s.Clock,
		coarse: coarse,
	}
	b.successes.init()
	b.rejections.init()
	p := &period{state: Closed, cfg: &s, since: b.nanotime()}
	b.newWindow(p)
	p.settle()
	b.period.Store(p)
	return b
}

// newWindow gives closed period p fresh counts from its rule.
func (b *Breaker) newWindow(p *period) {
	p.roll, p.consec, p.custom, p.throttle = nil, nil, nil, nil
	r, ok := p.cfg.Rule.(builtinRule)
	if !ok {
		p.window = p.cfg.Rule.NewWindow(b.clock)
		p.custom = p.window
		return
	}
	p.window = r.newWindow(b.clock, &b.successes)
	switch w := p.window.(type) {
	case *errorRateWindow:
		p.roll = w.rolling
	case *throttleWindow:
		p.roll = w.rolling
	case *consecutiveWindow:
		p.consec = w
	}
}

// settle derives the hot-path views of p from its state, window, override
// and settings.
func (p *period) settle() {
	p.throttle = nil
	if tw, ok := p.window.(*throttleWindow); ok && p.state == Closed && p.override != ForcedClosed && p.roll != nil {
		p.throttle = tw
	}
	p.fast = p.state == Closed && p.cfg.SlowCallThreshold == 0 && p.throttle == nil
}

func (b *Breaker) nanotime() int64 {
	if c := b.coarse; c != nil {
		return c.Nanotime()
	}
	return b.clockNanotime()
}

func (b *Breaker) clockNanotime() int64 { return b.clock.Nanotime() }

// Name returns Settings.Name.
func (b *Breaker) Name() string { return b.name }

// Settings returns the settings in force, defaults filled in.
func (b *Breaker) Settings() Settings { return *b.period.Load().cfg }

// State returns the current state. An open breaker whose open duration has
// ended reports, and becomes, half-open.
func (b *Breaker) State() State {
	p := b.period.Load()
	if p.state == Open && b.nanotime() >= p.until {
		p = b.change(p, HalfOpen, OpenElapsed)
	}
	return p.state
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
func (b *Breaker) Allow(ctx context.Context) (breakerimpl.Permit, error) {
	// The closed path is small enough to be inlined into callers.
	if p := b.period.Load(); p.fast {
		return breakerimpl.NewPermit(b, p.gen<<genShift, 0), nil
	}
	return b.allow()
}

func (b *Breaker) allow() (breakerimpl.Permit, error) {
	if b.shut.Load() != 0 && b.rejections.tryInc() {
		return breakerimpl.Permit{}, ErrOpen
	}
	for {
		p := b.period.Load()
		switch p.state {
		case Closed:
			if t := p.throttle; t != nil && !t.admit(p.cfg.Rand) {
				b.rejections.inc()
				return breakerimpl.Permit{}, ErrThrottled
			}
			return b.permit(p, 0), nil
		case Open:
			if b.nanotime() < p.until {
				b.rejections.inc()
				return breakerimpl.Permit{}, ErrOpen
			}
			b.change(p, HalfOpen, OpenElapsed)
		default:
			if !b.takeProbe(int32(p.cfg.HalfOpenProbes)) {
				b.rejections.inc()
				return breakerimpl.Permit{}, ErrHalfOpenFull
			}
			if b.period.Load().gen != p.gen {
				// The half-open period ended while we joined it: give the
				// slot back and look again.
				b.probes.Add(-1)
				continue
			}
			return b.permit(p, probeBit), nil
		}
	}
}

// permit returns a permit of period p, timed if slow calls are detected.
func (b *Breaker) permit(p *period, flags uint64) breakerimpl.Permit {
	var start int64
	if p.cfg.SlowCallThreshold > 0 {
		flags |= timedBit
		start = b.nanotime()
	}
	return breakerimpl.NewPermit(b, p.gen<<genShift|flags, start)
}

// takeProbe takes one of the n probe slots if one is free.
func (b *Breaker) takeProbe(n int32) bool {
	for {
		running := b.probes.Load()
		if running >= n {
			return false
		}
		if b.probes.CompareAndSwap(running, running+1) {
			return true
		}
	}
}

// Done records the end of a call admitted by Allow; use Permit.Done rather
// than calling it directly. A permit from an earlier state (the breaker
// changed state while the call ran) counts in the lifetime counters but
// not in the current state's.
func (b *Breaker) Done(pm breakerimpl.Permit, err error) {
	if p := b.period.Load(); err == nil && p.fast && p.gen<<genShift == pm.ID() {
		// succeeded, written out so that everything in it is inlined.
		if r := p.roll; r != nil {
			if r.due.Load() {
				r.tick()
			}
		} else {
			b.succeededRun(p)
		}
		if c := &b.successes; !c.tryInc() { // c.inc(), inlined
			c.incStriped()
		}
		return
	}
	b.done(pm, err)
}

// succeeded records a success of the current closed period p.
func (b *Breaker) succeeded(p *period) {
	if r := p.roll; r != nil {
		if r.due.Load() {
			r.tick()
		}
	} else {
		b.succeededRun(p)
	}
	if c := &b.successes; !c.tryInc() { // c.inc(), inlined
		c.incStriped()
	}
}

// succeededRun is the part of succeeded for rules without a rolling window.
func (b *Breaker) succeededRun(p *period) {
	if c := p.consec; c != nil {
		if c.failures.Load() != 0 {
			c.failures.Store(0)
		}
	} else {
		p.custom.Success()
	}
}

func (b *Breaker) done(pm breakerimpl.Permit, err error) {
	id := pm.ID()
	if id&probeBit != 0 {
		b.probes.Add(-1)
	}
	p := b.period.Load()
	current := p.gen == id>>genShift
	o, slow := b.outcome(p.cfg, pm, err)
	switch o {
	case breakerimpl.Success:
		if current && p.state == Closed {
			b.succeeded(p)
		} else {
			b.otherSuccesses.Add(1)
		}
	case breakerimpl.Failure:
		b.failures.Add(1)
		if slow {
			b.slowCalls.Add(1)
		}
	default:
		b.ignored.Add(1)
	}
	if !current || o != breakerimpl.Failure && (o != breakerimpl.Success || p.state != HalfOpen) {
		return
	}
	switch p.state {
	case Closed:
		if p.window.Failure() && p.override == Automatic {
			b.change(p, Open, Tripped)
		}
	case HalfOpen:
		if o == breakerimpl.Failure {
			p.half.flunked.Store(true)
			b.change(p, Open, ProbeFailed)
		} else if p.half.passed.Add(1) >= int32(p.cfg.HalfOpenSuccesses) {
			b.change(p, Closed, ProbesSucceeded)
		}
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
	if pm.ID()&timedBit != 0 && s.SlowCallThreshold > 0 && b.nanotime()-pm.Start() > int64(s.SlowCallThreshold) {
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
	next := &period{state: to, override: ov, gen: cur.gen + 1, since: b.nanotime(), cfg: cur.cfg}
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
	case Closed:
		b.newWindow(next)
	}
	counts := cur.counts()
	b.install(next)
	b.publish(next, StateChange{From: cur.state, To: to, Reason: why, Detail: detail, Counts: counts, OpenFor: next.openFor})
	return next
}

// install makes next the current period, and sets shut for as long as
// next refuses every call. next is a new state (enter), or a copy of the
// current period with the same state and generation (a change of settings
// or override), so that calls running keep counting. b.mu is held.
func (b *Breaker) install(next *period) {
	next.settle()
	// Clear shut before the store, set it after: shut is never set while
	// a period that admits calls is current.
	b.shut.Store(0)
	if b.shutTimer != nil {
		b.shutTimer.Stop()
		b.shutTimer = nil
	}
	b.period.Store(next)
	if next.state != Open {
		return
	}
	wait := next.until - b.nanotime()
	if wait <= 0 {
		return
	}
	b.shutTag++
	tag := b.shutTag
	b.shut.Store(tag)
	if next.until != math.MaxInt64 { // forced open: until an operator says otherwise
		// A timer that fires after a later install finds another tag and
		// leaves shut alone.
		b.shutTimer = b.clock.AfterFunc(time.Duration(wait), func() { b.shut.CompareAndSwap(tag, 0) })
	}
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
// Counts are kept: a new threshold (MinRequests, Percent, K, Threshold)
// applies to the counts of the current window, judged at the next failure;
// only a change of the rule's kind or of its window's span or buckets
// starts fresh counts, published as a Reconfigured change. A new open
// duration applies to the current open stay, counted from its start. Calls
// running keep their permits.
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
		if w, ok := cur.window.(reconfigurable); ok && next.custom == nil && w.reconfigure(s.Rule) {
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
	now, wall := b.nanotime(), b.clock.Now()
	s := Snapshot{
		Name:           b.name,
		State:          state,
		Override:       p.override,
		OverrideReason: b.overrideReason,
		OverrideAt:     b.overrideAt,
		Since:          wall.Add(-time.Duration(now - p.since)),
		Window:         p.counts(),
		ProbesRunning:  int(b.probes.Load()),
		Successes:      b.successes.load() + b.otherSuccesses.Load(),
		Failures:       b.failures.Load(),
		Ignored:        b.ignored.Load(),
		SlowCalls:      b.slowCalls.Load(),
		Rejections:     b.rejections.load(),
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
	return time.Duration(max(p.until-b.nanotime(), 0))
}

// Execute runs fn(ctx) if b admits the call and records its outcome. When b
// refuses, fn does not run and the error is ErrOpen, ErrHalfOpenFull or
// ErrThrottled. A panic in fn counts as a failure and is raised again.
func Execute[T any](ctx context.Context, b *Breaker, fn func(context.Context) (T, error)) (v T, err error) {
	// An open breaker, while shut: one load and the count. When the count's
	// first word is contended, the path below counts on a stripe.
	if b.shut.Load() != 0 && b.rejections.tryInc() {
		return v, ErrOpen
	}
	p := b.period.Load()
	if !p.fast {
		var now int64
		if c := b.coarse; c != nil { // b.nanotime(), inlined
			now = c.Nanotime()
		} else {
			now = b.clockNanotime()
		}
		if p.state == Open && now < p.until {
			if c := &b.rejections; !c.tryInc() { // c.inc(), inlined
				c.incStriped()
			}
			return v, ErrOpen
		}
		return breakerimpl.Run(ctx, b, fn)
	}
	// A closed breaker, written out: the permit is implied by p, and the
	// deferred function records the outcome itself, so the only calls made
	// besides fn are Execute and that one (a deferred method call would add
	// a wrapper; see BenchmarkBreakerSuccess). It recovers a panic, counts
	// it as a failure and raises it again.
	finished := false
	defer func() {
		if !finished {
			b.panicked(p, recover())
			return
		}
		if err != nil || b.period.Load() != p {
			b.done(breakerimpl.NewPermit(b, p.gen<<genShift, 0), err)
			return
		}
		// b.succeeded(p), written out so that everything in it is inlined.
		if r := p.roll; r != nil {
			if r.due.Load() {
				r.tick()
			}
		} else {
			b.succeededRun(p)
		}
		if c := &b.successes; !c.tryInc() { // c.inc(), inlined
			c.incStriped()
		}
	}()
	v, err = fn(ctx)
	finished = true
	return v, err
}

// panicked records a call of period p that panicked with r (nil for
// runtime.Goexit) as a failure, and raises the panic again. It is kept out
// of finish so that finish's frame stays small.
//
//go:noinline
func (b *Breaker) panicked(p *period, r any) {
	b.done(breakerimpl.NewPermit(b, p.gen<<genShift, 0), breakerimpl.NewPanicError(r))
	if r != nil { // runtime.Goexit goes on by itself
		panic(r)
	}
}
