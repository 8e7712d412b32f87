// Package circuitbreaker stops calls to a dependency that keeps failing, so
// that it gets room to recover and callers fail fast instead of piling up.
//
// A Breaker is closed (calls run; a Rule counts their outcomes), open (calls
// are rejected with ErrOpen for Settings.OpenDuration) or half-open (up to
// N probe calls run at a time; M successes in a row close it, any failure
// opens it again). Two rules ship: ErrorRate (hystrix) and
// ConsecutiveFailures (gobreaker).
//
// Call it with Execute, or in two steps with Allow and Permit.Done when the
// work cannot be wrapped in a function. A Breaker is also a
// breakerimpl.Guard, so it goes in a breakerimpl.Pipeline next to a
// fallback.
//
// The hot paths read no clock but the coarse one, take no lock and never
// allocate: a successful call costs a few atomic operations on counters
// striped across cores, a rejection two atomic loads.
package circuitbreaker

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// Errors returned by Allow and Execute when the breaker refuses a call.
// They are the breakerimpl values, so errors.Is works with either name.
var (
	ErrOpen         = breakerimpl.ErrOpen
	ErrHalfOpenFull = breakerimpl.ErrHalfOpenFull
)

// Breaker is a circuit breaker. Make one with New; it is safe for concurrent
// use.
type Breaker struct {
	name              string
	clock             clock.Clock
	coarse            *clock.Coarse // clock, when coarse: read without an interface call
	rule              Rule
	openDuration      int64 // nanoseconds
	halfOpenProbes    int32
	halfOpenSuccesses int32
	slowCall          int64 // nanoseconds; 0 = off
	classify          breakerimpl.Classifier
	onStateChange     func(StateChange)

	period     atomic.Pointer[period] // the current state; replaced whole on every change
	transition sync.Mutex             // serialises changes of state and their events

	// probes counts probe calls running, whatever half-open period admitted
	// them: a probe still running when its period ends keeps its slot until
	// it returns, so a dependency that hangs never sees more than N probes.
	probes atomic.Int32
}

// A permit's id is the generation that admitted it, shifted left, with
// probeBit set for a half-open probe.
const probeBit = 1

// period is one stay in one state. A change of state installs a new period,
// so counts never leak from one stay into the next, and a call admitted in
// an earlier period (an older generation) is not counted in this one.
type period struct {
	state State
	gen   uint64
	until int64 // Open: Nanotime at which probes may start

	window Window      // Closed
	rate   *rateWindow // Closed: window, when it is an ErrorRate's, called directly on the hot path

	passed  atomic.Int32 // HalfOpen: successful probes in a row
	flunked atomic.Bool  // HalfOpen: a probe failed
}

// New returns a closed Breaker with the given settings (see Settings for
// the defaults of zero fields).
func New(s Settings) *Breaker {
	s = s.withDefaults()
	coarse, _ := s.Clock.(*clock.Coarse)
	b := &Breaker{
		name:              s.Name,
		clock:             s.Clock,
		coarse:            coarse,
		rule:              s.Rule,
		openDuration:      int64(s.OpenDuration),
		halfOpenProbes:    int32(s.HalfOpenProbes),
		halfOpenSuccesses: int32(s.HalfOpenSuccesses),
		slowCall:          int64(s.SlowCallThreshold),
		classify:          s.Classify,
		onStateChange:     s.OnStateChange,
	}
	b.period.Store(b.closedPeriod(0))
	return b
}

// closedPeriod returns a new closed period of generation gen with fresh
// counts.
func (b *Breaker) closedPeriod(gen uint64) *period {
	w := b.rule.NewWindow(b.clock)
	rate, _ := w.(*rateWindow)
	return &period{state: Closed, gen: gen, window: w, rate: rate}
}

func (b *Breaker) nanotime() int64 {
	if c := b.coarse; c != nil {
		return c.Nanotime()
	}
	return b.clock.Nanotime()
}

// Name returns Settings.Name.
func (b *Breaker) Name() string { return b.name }

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
		c := Counts{Successes: uint64(p.passed.Load())}
		if p.flunked.Load() {
			c.Failures = 1
		}
		c.Requests = c.Successes + c.Failures
		return c
	}
	return Counts{}
}

// Allow admits a call or refuses it with ErrOpen or ErrHalfOpenFull. When
// it admits, call Done on the returned permit exactly once with the call's
// error. ctx is not used by the breaker; it is there for breakerimpl.Guard.
func (b *Breaker) Allow(ctx context.Context) (breakerimpl.Permit, error) {
	// The closed path is small enough to be inlined into callers.
	if p := b.period.Load(); p.state == Closed && b.slowCall == 0 {
		return breakerimpl.NewPermit(b, p.gen<<1, 0), nil
	}
	return b.allow()
}

func (b *Breaker) allow() (breakerimpl.Permit, error) {
	for {
		p := b.period.Load()
		switch p.state {
		case Closed:
			var start int64
			if b.slowCall > 0 {
				start = b.nanotime()
			}
			return breakerimpl.NewPermit(b, p.gen<<1, start), nil
		case Open:
			if b.nanotime() < p.until {
				return breakerimpl.Permit{}, ErrOpen
			}
			b.change(p, HalfOpen, OpenElapsed)
		default:
			if !b.takeProbe() {
				return breakerimpl.Permit{}, ErrHalfOpenFull
			}
			if b.period.Load() != p {
				// The half-open period ended while we joined it: give the
				// slot back and look again.
				b.probes.Add(-1)
				continue
			}
			var start int64
			if b.slowCall > 0 {
				start = b.nanotime()
			}
			return breakerimpl.NewPermit(b, p.gen<<1|probeBit, start), nil
		}
	}
}

// takeProbe takes one of the N probe slots if one is free.
func (b *Breaker) takeProbe() bool {
	for {
		running := b.probes.Load()
		if running >= b.halfOpenProbes {
			return false
		}
		if b.probes.CompareAndSwap(running, running+1) {
			return true
		}
	}
}

// Done records the end of a call admitted by Allow; use Permit.Done rather
// than calling it directly. A permit from an earlier state (the breaker
// changed state while the call ran) is not counted.
func (b *Breaker) Done(pm breakerimpl.Permit, err error) {
	// The success of a closed ErrorRate breaker is small enough to inline.
	if p := b.period.Load(); err == nil && b.slowCall == 0 && p.rate != nil && p.gen<<1 == pm.ID() {
		p.rate.Success()
		return
	}
	b.done(pm, err)
}

func (b *Breaker) done(pm breakerimpl.Permit, err error) {
	if pm.ID()&probeBit != 0 {
		b.probes.Add(-1)
	}
	p := b.period.Load()
	if p.gen != pm.ID()>>1 {
		return
	}
	o := b.outcome(pm, err)
	switch p.state {
	case Closed:
		switch o {
		case breakerimpl.Success:
			p.window.Success()
		case breakerimpl.Failure:
			if p.window.Failure() {
				b.change(p, Open, Tripped)
			}
		}
	case HalfOpen:
		switch o {
		case breakerimpl.Success:
			if p.passed.Add(1) >= b.halfOpenSuccesses {
				b.change(p, Closed, ProbesSucceeded)
			}
		case breakerimpl.Failure:
			p.flunked.Store(true)
			b.change(p, Open, ProbeFailed)
		}
	}
}

// outcome classifies the end of a call: nil is a success unless the call
// was slow, a panic is a failure, and other errors go to Classify.
func (b *Breaker) outcome(pm breakerimpl.Permit, err error) breakerimpl.Outcome {
	o := breakerimpl.Success
	if err != nil {
		if _, panicked := err.(*breakerimpl.PanicError); panicked {
			return breakerimpl.Failure
		}
		o = b.classify(err)
	}
	if o == breakerimpl.Success && b.slowCall > 0 && b.nanotime()-pm.Start() > b.slowCall {
		o = breakerimpl.Failure
	}
	return o
}

// change moves the breaker from period p to a new period in state to,
// unless another caller changed it first, publishes the change, and returns
// the period now current.
func (b *Breaker) change(p *period, to State, why Transition) *period {
	b.transition.Lock()
	defer b.transition.Unlock()
	if cur := b.period.Load(); cur != p {
		return cur
	}
	next := &period{state: to, gen: p.gen + 1}
	switch to {
	case Open:
		next.until = b.nanotime() + b.openDuration
	case Closed:
		next = b.closedPeriod(next.gen)
	}
	counts := p.counts()
	b.period.Store(next)
	if b.onStateChange != nil {
		b.onStateChange(StateChange{
			Name: b.name, From: p.state, To: to, Reason: why,
			Counts: counts, At: b.clock.Now(), Generation: next.gen,
		})
	}
	return next
}

// Execute runs fn(ctx) if b admits the call and records its outcome. When b
// refuses, fn does not run and the error is ErrOpen or ErrHalfOpenFull. A
// panic in fn counts as a failure and is raised again.
func Execute[T any](ctx context.Context, b *Breaker, fn func(context.Context) (T, error)) (T, error) {
	p := b.period.Load()
	if p.state == Open && b.nanotime() < p.until {
		var zero T
		return zero, ErrOpen
	}
	if p.state != Closed || b.slowCall != 0 {
		return breakerimpl.Run(ctx, b, fn)
	}
	// The closed breaker without slow-call detection, written out: the
	// permit is implied by p, and a success is recorded without the
	// interface calls of breakerimpl.Run (see BenchmarkBreaker).
	finished := false
	defer func() {
		if !finished {
			b.panicked(p, recover())
		}
	}()
	v, err := fn(ctx)
	finished = true
	switch {
	case err != nil || b.period.Load() != p:
		b.Done(breakerimpl.NewPermit(b, p.gen<<1, 0), err)
	case p.rate != nil:
		p.rate.Success()
	default:
		p.window.Success()
	}
	return v, err
}

// panicked records a call admitted in period p that panicked with r (nil
// for runtime.Goexit) as a failure, and raises the panic again.
func (b *Breaker) panicked(p *period, r any) {
	b.Done(breakerimpl.NewPermit(b, p.gen<<1, 0), breakerimpl.NewPanicError(r))
	if r != nil { // runtime.Goexit goes on by itself
		panic(r)
	}
}
