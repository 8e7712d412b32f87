package fallback

import (
	"fmt"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Every byte of a short key reaches its hash: changing any one of them, in
// keys of every length the inline path takes, changes the hash.
func TestHashShortUsesEveryByte(t *testing.T) {
	long := maphash.MakeSeed()
	seed := newShortSeed(long)
	for n := 1; n <= maxShortKey; n++ {
		key := []byte(strings.Repeat("k", n))
		base := hashShort(seed, string(key))
		for i := range key {
			changed := append([]byte(nil), key...)
			changed[i] ^= 1
			if hashShort(seed, string(changed)) == base {
				t.Errorf("len %d: flipping a bit of byte %d leaves the hash unchanged", n, i)
			}
		}
	}
	if hashShort(seed, "") == hashShort(seed, "\x00") {
		t.Error(`"" and "\x00" hash alike: the length is not mixed in`)
	}
}

// Two caches draw different seeds, so keys that collide in one do not in
// the other.
func TestHashShortSeeded(t *testing.T) {
	l1, l2 := maphash.MakeSeed(), maphash.MakeSeed()
	if hashShort(newShortSeed(l1), "item/1") == hashShort(newShortSeed(l2), "item/1") {
		t.Error("two seeds gave the same hash")
	}
}

// Keys that differ only in a counter, as request keys do, spread over the
// cache's sets as a uniform hash would spread them: 100,000 keys in 4,096
// sets give a chi-square statistic within six standard deviations of its
// expected value (4,095, standard deviation 90.5). A hash that lost a byte
// of the key, or its length, lands far beyond.
func TestHashShortSpreadsSequentialKeys(t *testing.T) {
	long := maphash.MakeSeed()
	seed := newShortSeed(long)
	for _, format := range []string{"item/%d", "%d", "user:%08d", "k%d", "%x/x"} {
		const keys, sets = 100_000, 4096
		var load [sets]float64
		for i := range keys {
			load[hashShort(seed, fmt.Sprintf(format, i))&(sets-1)]++
		}
		mean, chi2 := float64(keys)/sets, 0.0
		for _, n := range load {
			chi2 += (n - mean) * (n - mean) / mean
		}
		if limit := sets - 1 + 6*math.Sqrt(2*(sets-1)); chi2 > limit {
			t.Errorf("%q: chi-square %.0f over %d sets, above %.0f", format, chi2, sets, limit)
		}
	}
}

// shortWords loses nothing: a short key is rebuilt from its length and its
// two words, for every length and for random bytes, which is what lets
// Cache.find compare words and length in place of the key's bytes.
func TestShortWordsDetermineTheKey(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= maxShortKey; n++ {
		for range 200 {
			key := make([]byte, n)
			for i := range key {
				key[i] = byte(rnd.Uint32())
			}
			a, b := shortWords(string(key))
			if got := keyFromWords(n, a, b); got != string(key) {
				t.Fatalf("len %d: key %q rebuilt from its words as %q", n, key, got)
			}
		}
	}
}

// keyFromWords inverts shortWords for a key of n bytes.
func keyFromWords(n int, a, b uint64) string {
	key := make([]byte, n)
	put32 := func(off int, w uint64) {
		for i := range 4 {
			key[off+i] = byte(w >> (8 * i))
		}
	}
	switch {
	case n >= 4:
		q := (n >> 3) << 2
		put32(0, a>>32)
		put32(q, a)
		put32(n-4, b>>32)
		put32(n-4-q, b)
	case n > 0:
		key[0], key[n>>1], key[n-1] = byte(a>>16), byte(a>>8), byte(a)
	}
	return string(key)
}

// find never takes an entry for another key whose hash is equal: it
// compares the keys (for short ones, their words and length). Each case
// plants an entry for stored under the hash of looked, as a collision would.
func TestFindComparesKeysNotHashes(t *testing.T) {
	c := NewCache[string, int](CacheSettings{})
	for _, tc := range []struct{ stored, looked string }{
		{"item/1", "item/2"}, // same length, other words
		{"abcdabcd", "abcd"}, // same words, other length
		{"a", "aa"},          // same words, other length
		{"", "\x00"},         // zero words
		{"a key of 17 bytes", "a key of 17 byteZ"}, // past the short path
	} {
		_, h := c.find(tc.looked) // the hash, from the cache with nothing planted
		plant := func(key string) *entry[string, int] {
			e := &entry[string, int]{hash: h, key: key}
			if len(key) <= maxShortKey {
				e.words[0], e.words[1] = shortWords(key)
			}
			c.sets[h&c.mask].slots[0].Store(e)
			return e
		}
		plant(tc.stored)
		if e, _ := c.find(tc.looked); e != nil {
			t.Errorf("looking up %q found the entry of %q", tc.looked, tc.stored)
		}
		want := plant(tc.looked)
		if e, _ := c.find(tc.looked); e != want {
			t.Errorf("looking up %q missed its own entry", tc.looked)
		}
		c.sets[h&c.mask].slots[0].Store(nil)
	}
}

func BenchmarkHashShort(b *testing.B) {
	long := maphash.MakeSeed()
	seed := newShortSeed(long)
	for _, key := range []string{"item/1", "user:00001234"} {
		b.Run(fmt.Sprintf("short/%d", len(key)), func(b *testing.B) {
			for range b.N {
				sink += hashShort(seed, key)
			}
		})
		b.Run(fmt.Sprintf("maphash/%d", len(key)), func(b *testing.B) {
			for range b.N {
				sink += maphash.String(long, key)
			}
		})
	}
}

var sink uint64
