//go:build !race

package timeout

import (
	"context"
	_ "unsafe" // for go:linkname
)

// Every call with a cancellable parent needs a context of its own: it must
// carry that parent's values and cancellation as well as the shared
// deadline, and the work it is handed to may keep it. Allocating each one
// costs more than the rest of a call through a whole Pipeline (a small
// allocation is about 60 ns on a busy two-core machine; see
// BenchmarkTimeout), so contexts are carved from slabs of slabSize, one
// slab per processor (the runtime's P), as sync.Pool keeps its shards:
// one allocation serves slabSize calls.
//
// No context is ever handed out twice or reused, so a context the work
// keeps stays valid for good. The price is memory: a slab, and the parents
// of the contexts carved from it, stay reachable while any of its contexts
// is, or while it is its processor's current slab; at most slabSize-1
// parents of finished calls per processor, besides those the work keeps.
//
// Race-detector builds allocate each context on its own (see
// alloc_race.go): the detector cannot see that a processor's slab is used
// by one goroutine at a time.
const slabSize = 32

type slab [slabSize]callContext

// cursor is a processor's current slab and how much of it is used. Only
// the goroutine running on that processor, pinned to it, reads or writes
// it.
type cursor struct {
	s *slab
	n int
	_ [cacheLine - 16]byte // one per processor: keep them on separate cache lines
}

const cacheLine = 128

// cursors has a cursor per processor id; a processor beyond them (after
// GOMAXPROCS grew past len(cursors)) allocates each context on its own.
var cursors [64]cursor

// newCallContext returns a context for a call with the cancellable parent
// and deadline d.
func newCallContext(parent context.Context, d *deadline) *callContext {
	var c *callContext
	pid := runtime_procPin()
	if pid >= len(cursors) {
		runtime_procUnpin()
		return &callContext{Context: parent, d: d}
	}
	if cur := &cursors[pid]; cur.n < slabSize && cur.s != nil {
		c = &cur.s[cur.n]
		cur.n++
	}
	runtime_procUnpin()
	if c == nil {
		c = refill()
	}
	// c is this call's alone from here: no other call is handed it.
	c.Context, c.d = parent, d
	return c
}

// refill starts a new slab for the processor the caller runs on, and
// returns its first context. The slab is allocated unpinned (allocation
// may have to help the garbage collector, which a pinned goroutine
// cannot); if the goroutine moved meanwhile, the new slab goes to the
// processor it is on now.
func refill() *callContext {
	s := new(slab)
	if pid := runtime_procPin(); pid < len(cursors) {
		cur := &cursors[pid]
		cur.s, cur.n = s, 1
	}
	runtime_procUnpin()
	return &s[0]
}

// runtime.procPin and procUnpin are what sync.Pool uses to find its
// per-processor shard; they keep the goroutine on its processor, with
// preemption off, in between. The runtime keeps them reachable by linkname
// for packages outside the standard library.
//
//go:linkname runtime_procPin runtime.procPin
func runtime_procPin() int

//go:linkname runtime_procUnpin runtime.procUnpin
func runtime_procUnpin()
