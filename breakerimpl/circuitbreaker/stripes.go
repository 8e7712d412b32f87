package circuitbreaker

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	_ "unsafe" // for go:linkname
)

// cacheLine is the padding unit that keeps hot atomics of different cores
// apart (128 bytes: two 64-byte lines, because x86 prefetches lines in
// adjacent pairs).
const cacheLine = 128

type paddedInt64 struct {
	atomic.Int64
	_ [cacheLine - 8]byte
}

type paddedUint64 struct {
	atomic.Uint64
	_ [cacheLine - 8]byte
}

type paddedBool struct {
	atomic.Bool
	_ [cacheLine - 4]byte
}

type paddedMutex struct {
	sync.Mutex
	_ [cacheLine - 8]byte
}

// counter is a monotonic counter split into stripes, so that cores adding
// at the same time touch different cache lines: a shared counter would
// bounce between cores on every call and make a parallel run slower per
// call than a serial one. A read sums the stripes.
//
// As in Java's LongAdder, adds go to one word, first, until two of them
// collide there (a compare-and-swap fails); from then on each add uses the
// stripe of the processor (the runtime's P) it runs on, so goroutines
// running at the same moment never share a stripe. A serial caller thus
// pays for one compare-and-swap and nothing more. A random stripe
// (math/rand/v2 costs 8 ns here, more than the rest of a call) or one
// picked from the goroutine's stack address (cheap, but two goroutines
// collide one time in eight) both did worse in
// BenchmarkBreakerSuccess/error-rate/parallel.
//
// Counts never decrease and are never cleared: a rolling window keeps
// marks of the total at its bucket boundaries instead, so no add can be
// lost to a concurrent reset.
//
// The first stripe is a field rather than an element of words, and a
// Breaker holds its counters rather than pointers to them, so that a
// serial add reaches the word it swaps without loading a pointer first:
// on the success path, every load the swap waits for costs time.
type counter struct {
	_         [cacheLine]byte // read on every add: keep other objects' writes off its line
	first     atomic.Uint64   // adds until contended
	contended atomic.Bool
	mask      uint32 // stripes - 1
	words     []paddedUint64
	_         [cacheLine]byte
}

// newCounter returns a counter ready for use.
func newCounter() *counter {
	c := new(counter)
	c.init()
	return c
}

// init gives c a stripe per processor (rounded up to a power of two, at
// most 64; beyond that processors share stripes).
func (c *counter) init() {
	n := 1 << bits.Len(uint(runtime.GOMAXPROCS(0)-1))
	n = min(n, 64)
	c.words, c.mask = make([]paddedUint64, n), uint32(n-1)
}

// inc adds one. It is too big for the inliner (cost 105, budget 80), so
// the hot paths write it out: if !c.tryInc() { c.incStriped() }.
func (c *counter) inc() {
	if !c.tryInc() {
		c.incStriped()
	}
}

// tryInc adds one on the first word, unless it is contended, and reports
// whether it did. Callers that get false add on a stripe (incStriped).
func (c *counter) tryInc() bool { return !c.contended.Load() && c.incFirst() }

func (c *counter) incFirst() bool {
	old := c.first.Load()
	return c.first.CompareAndSwap(old, old+1)
}

func (c *counter) incStriped() {
	if !c.contended.Load() {
		c.contended.Store(true)
	}
	c.words[c.stripe()].Add(1)
}

// stripe returns the stripe of the processor the caller runs on. The
// goroutine may move to another processor right after; the add is atomic,
// so that costs at most a shared cache line, never a count.
func (c *counter) stripe() uint32 {
	id := runtime_procPin()
	runtime_procUnpin()
	return uint32(id) & c.mask
}

// runtime.procPin and procUnpin are what sync.Pool uses to find its
// per-processor shard. The runtime keeps them reachable by linkname for
// packages outside the standard library ("Do not remove or change the type
// signature"); they cost about a nanosecond.
//
//go:linkname runtime_procPin runtime.procPin
func runtime_procPin() int

//go:linkname runtime_procUnpin runtime.procUnpin
func runtime_procUnpin()

// load returns the total. Adds that run concurrently may or may not be in
// it; an add that finished before load began always is.
func (c *counter) load() uint64 {
	n := c.first.Load()
	for i := range c.words {
		n += c.words[i].Load()
	}
	return n
}
