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

type paddedUint64 struct {
	atomic.Uint64
	_ [cacheLine - 8]byte
}

type paddedInt64 struct {
	atomic.Int64
	_ [cacheLine - 8]byte
}

type paddedMutex struct {
	sync.Mutex
	_ [cacheLine - 8]byte
}

// stripes is a set of counters split into stripes, so that cores adding at
// the same time touch different cache lines: a shared counter would bounce
// between cores on every call and make a parallel run slower per call than
// a serial one. A read sums the stripes.
//
// As in Java's LongAdder, adds go to the first stripe until two of them
// collide there (a compare-and-swap fails); from then on each add uses the
// stripe of the processor (the runtime's P) it runs on, so goroutines
// running at the same moment never share a stripe. A serial caller thus
// pays for one compare-and-swap and nothing more. A
// random stripe (math/rand/v2 costs 8 ns here, more than the rest of a
// call) or one picked from the goroutine's stack address (cheap, but two
// goroutines collide one time in eight) both did worse in
// BenchmarkBreakerSuccess/error-rate/parallel.
type stripes struct {
	words     []atomic.Uint64
	stride    int    // words per stripe, a whole number of cache lines
	mask      uint32 // stripes - 1
	contended atomic.Bool
}

// newStripes returns n counters with a stripe per processor (rounded up to
// a power of two, at most 64; beyond that processors share stripes).
func newStripes(n int) stripes {
	count := 1 << bits.Len(uint(runtime.GOMAXPROCS(0)-1))
	count = min(count, 64)
	const perLine = cacheLine / 8
	stride := (n + perLine - 1) / perLine * perLine
	return stripes{words: make([]atomic.Uint64, count*stride), stride: stride, mask: uint32(count - 1)}
}

func (s *stripes) add(i int, delta uint64) {
	if !s.contended.Load() {
		w := &s.words[i]
		if old := w.Load(); w.CompareAndSwap(old, old+delta) {
			return
		}
		s.contended.Store(true)
	}
	s.words[s.stripe()*s.stride+i].Add(delta)
}

// stripe returns the stripe of the processor the caller runs on. The
// goroutine may move to another processor right after; the add is atomic,
// so that costs at most a shared cache line, never a count.
func (s *stripes) stripe() int {
	id := runtime_procPin()
	runtime_procUnpin()
	return id & int(s.mask)
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

func (s *stripes) sum(i int) uint64 {
	var n uint64
	for j := i; j < len(s.words); j += s.stride {
		n += s.words[j].Load()
	}
	return n
}

// clear zeroes counters from through to, inclusive, in every stripe.
func (s *stripes) clear(from, to int) {
	for base := 0; base < len(s.words); base += s.stride {
		for i := from; i <= to; i++ {
			s.words[base+i].Store(0)
		}
	}
}
