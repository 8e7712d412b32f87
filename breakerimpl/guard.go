package breakerimpl

import "context"

// Guard is a policy that decides, before a call runs, whether it may run,
// and learns how it went afterwards: circuit breakers now, bulkheads, rate
// limiters and load shedders later. It is the two-step form every such
// policy shares, for callers that cannot hand over a function, and the form
// [Pipeline] composes without allocating.
//
// Implementations must be safe for concurrent use.
type Guard interface {
	// Allow admits a call or refuses it with an error such as ErrOpen. A
	// nil error comes with a Permit whose Done must be called exactly once,
	// when the call has finished.
	Allow(ctx context.Context) (Permit, error)
	// Done records how the call admitted with p ended: err is what it
	// returned (a *PanicError if it panicked). Callers use Permit.Done.
	Done(p Permit, err error)
}

// Permit is a Guard's leave to run one call. It is a small value: copying
// it costs nothing and it never allocates. The zero Permit's Done does
// nothing.
type Permit struct {
	guard Guard
	id    uint64
	start int64
}

// NewPermit is for Guard implementations: it returns a permit whose Done
// calls g.Done. id and start are the guard's own bookkeeping (say, the
// generation that admitted the call and its start on the guard's clock).
func NewPermit(g Guard, id uint64, start int64) Permit {
	return Permit{guard: g, id: id, start: start}
}

// ID returns the id the guard gave the permit.
func (p Permit) ID() uint64 { return p.id }

// Start returns the start the guard gave the permit.
func (p Permit) Start() int64 { return p.start }

// Done reports the end of the call: err is what it returned, nil for
// success. Call it exactly once.
func (p Permit) Done(err error) {
	if p.guard != nil {
		p.guard.Done(p, err)
	}
}

// Panicked is Done for a call that panicked: r is what recover returned
// in the caller's deferred function (nil for runtime.Goexit, as in
// t.FailNow). It reports a *PanicError, a failure, and raises the panic
// again; a Goexit goes on by itself.
func (p Permit) Panicked(r any) {
	p.Done(panicError(r))
	if r != nil {
		panic(r)
	}
}

// panicError is the *PanicError of a call that panicked with r (nil for
// runtime.Goexit).
func panicError(r any) *PanicError {
	if r == nil {
		return &PanicError{Value: "runtime.Goexit"}
	}
	return NewPanicError(r)
}
