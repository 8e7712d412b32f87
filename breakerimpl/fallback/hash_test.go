package fallback

import (
	"fmt"
	"hash/maphash"
	"math"
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
