package fallback

import (
	"hash/maphash"
	"math/bits"
	"unsafe"
)

// Most cache keys are short strings ("item/42", a user id), and hashing one
// is on every successful call's path: maphash.String reaches the runtime's
// hash through three calls, more than a quarter of what remembering a value
// costs. Keys of up to 16 bytes are therefore hashed here, inline, with the
// short-input path of wyhash (final version 4, public domain): two
// overlapping loads and two 64-bit multiplications, under a seed drawn at
// random for each cache. Longer keys go to maphash.String.
//
// The hash only picks a key's set; keys are always compared in full, so a
// weaker hash can cost evictions, never a wrong value.

const (
	wyp0 = 0xa0761d6478bd642f
	wyp1 = 0xe7037ed1a0b428db
)

// load32 reads the four bytes at p+off, little-endian, as the runtime's
// readUnaligned32 does: the compiler makes it one load where the machine
// allows unaligned loads, and byte loads elsewhere.
func load32(p unsafe.Pointer, off int) uint64 {
	q := (*[4]byte)(unsafe.Add(p, off))
	return uint64(q[0]) | uint64(q[1])<<8 | uint64(q[2])<<16 | uint64(q[3])<<24
}

func load8(p unsafe.Pointer, off int) byte { return *(*byte)(unsafe.Add(p, off)) }

// wymix multiplies a and b into 128 bits and folds the halves.
func wymix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// newShortSeed turns a random maphash seed into wyhash's seed.
func newShortSeed(s maphash.Seed) uint64 {
	seed := maphash.String(s, "chaoskit/fallback")
	return seed ^ wymix(seed^wyp0, wyp1)
}

// maxShortKey is the longest key hashShort hashes.
const maxShortKey = 16

// hashShort hashes a key of at most maxShortKey bytes.
func hashShort(seed uint64, key string) uint64 {
	a, b := shortWords(key)
	return mixShort(seed, a, b, len(key))
}

// shortWords loads a key of at most maxShortKey bytes into two words, as
// wyhash does. The loads cover every byte of the key, so the words and the
// key's length together determine the key: Cache.find compares them in
// place of the bytes, without a call to the runtime's memequal.
func shortWords(key string) (a, b uint64) {
	n := len(key)
	p := unsafe.Pointer(unsafe.StringData(key))
	switch {
	case n >= 4:
		// Two pairs of 4-byte loads, which overlap when n < 16; every
		// offset is within the key (q <= 8, n-4-q >= 0), and together they
		// cover it: [0,4) [q,q+4) [n-4-q,n-q) [n-4,n).
		q := (n >> 3) << 2
		a = load32(p, 0)<<32 | load32(p, q)
		b = load32(p, n-4)<<32 | load32(p, n-4-q)
	case n > 0:
		a = uint64(load8(p, 0))<<16 | uint64(load8(p, n>>1))<<8 | uint64(load8(p, n-1))
	}
	return a, b
}

// mixShort is the hash of a key of n bytes whose shortWords are a and b.
func mixShort(seed, a, b uint64, n int) uint64 {
	hi, lo := bits.Mul64(a^wyp1, b^seed)
	return wymix(lo^wyp0^uint64(n), hi^wyp1)
}
