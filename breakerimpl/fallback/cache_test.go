package fallback_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
)

func TestCacheServesTheLatestValueWithItsAge(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	c := fallback.NewCache[int, string](fallback.CacheSettings{Name: "lkg", MaxStaleness: time.Minute, Clock: clk})
	ctx := context.Background()
	if _, err := c.Recover(ctx, 1, errDown); !errors.Is(err, fallback.ErrNotCached) {
		t.Fatalf("empty cache: %v, want ErrNotCached", err)
	}
	c.Remember(1, "a")
	clk.Advance(10 * time.Second)
	c.Remember(1, "b")
	clk.Advance(20 * time.Second)
	res, err := c.Recover(ctx, 1, errDown)
	if err != nil || res.Value != "b" || res.Age != 20*time.Second || res.Source != "lkg" {
		t.Fatalf("Recover = %+v, %v; want b, 20s old, from lkg", res, err)
	}
	clk.Advance(40*time.Second + 1)
	if _, err := c.Recover(ctx, 1, errDown); !errors.Is(err, fallback.ErrTooStale) {
		t.Fatalf("past MaxStaleness: %v, want ErrTooStale", err)
	}
	if v, age, ok := c.Get(1); !ok || v != "b" || age != time.Minute+1 {
		t.Fatalf("Get = %v %v %v: Get serves any age", v, age, ok)
	}
	if c.Len() != 1 {
		t.Fatalf("Len %d, want 1", c.Len())
	}
}

func TestCacheNeverHoldsMoreThanMaxEntries(t *testing.T) {
	for _, max := range []int{1, 7, 8, 100, 1000} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			clk := clock.NewFake(time.Time{})
			c := fallback.NewCache[int, int](fallback.CacheSettings{MaxEntries: max, Clock: clk})
			for i := range 10 * max {
				clk.Advance(time.Millisecond)
				c.Remember(i, i)
				if c.Len() > max {
					t.Fatalf("after %d keys: %d entries, at most %d allowed", i+1, c.Len(), max)
				}
			}
			if c.Len() < max*3/4 {
				t.Fatalf("%d entries of %d: the cache evicts far too early", c.Len(), max)
			}
			kept := 0
			for i := range 10 * max {
				if _, _, ok := c.Get(i); ok {
					kept++
				}
			}
			if kept != c.Len() {
				t.Fatalf("%d keys found, Len says %d", kept, c.Len())
			}
		})
	}
}

// TestCacheEvictsTheLeastRecentlyUsed fills a cache, keeps using half of
// the keys, then adds new ones: every key in use survives, and each new
// key takes the place of an idle one.
func TestCacheEvictsTheLeastRecentlyUsed(t *testing.T) {
	const max = 1000
	clk := clock.NewFake(time.Time{})
	c := fallback.NewCache[int, int](fallback.CacheSettings{MaxEntries: max, Clock: clk})
	for i := range max {
		c.Remember(i, i)
	}
	for i := range max / 4 { // add a quarter as many new keys, using the even ones all along
		clk.Advance(time.Millisecond)
		for k := 0; k < max; k += 2 {
			if i%10 == 0 {
				c.Remember(k, k)
			}
		}
		c.Remember(max+i, i)
	}
	var hot, idle int
	for k := range max {
		if _, _, ok := c.Get(k); ok {
			if k%2 == 0 {
				hot++
			} else {
				idle++
			}
		}
	}
	t.Logf("kept %d of %d keys in use, %d of %d idle", hot, max/2, idle, max/2)
	if hot != max/2 || idle != max/2-max/4 {
		t.Fatalf("kept %d of %d keys in use and %d of %d idle ones", hot, max/2, idle, max/2)
	}
}

// Peek serves like Get but leaves the order of eviction alone.
func TestCachePeekIsNotAUse(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	c := fallback.NewCache[int, string](fallback.CacheSettings{MaxEntries: 2, Clock: clk})
	c.Remember(1, "one")
	c.Remember(2, "two")
	clk.Advance(time.Second)
	if v, age, ok := c.Peek(1); !ok || v != "one" || age != time.Second {
		t.Fatalf("Peek(1) = %v, %v, %v; want one, 1s", v, age, ok)
	}
	c.Remember(3, "three") // evicts 1, the least recently used: Peek did not use it
	if _, _, ok := c.Peek(1); ok {
		t.Fatal("Peek counted as a use: key 1 was kept over key 2")
	}
	c.Get(2)
	c.Remember(4, "four") // evicts 3: Get used 2
	if _, _, ok := c.Peek(2); !ok {
		t.Fatal("Get did not count as a use: key 2 was evicted")
	}
}

func TestCacheRememberDoesNotAllocate(t *testing.T) {
	c := fallback.NewCache[string, [4]int](fallback.CacheSettings{})
	c.Remember("k", [4]int{1})
	if n := testing.AllocsPerRun(100, func() { c.Remember("k", [4]int{2}) }); n != 0 {
		t.Fatalf("Remember of a cached key: %v allocations", n)
	}
}

func TestCacheConcurrentUse(t *testing.T) {
	c := fallback.NewCache[int, [2]int](fallback.CacheSettings{MaxEntries: 64})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5000 {
				k := (w*7 + i) % 100
				c.Remember(k, [2]int{k, i})
				if v, _, ok := c.Get(k); ok && v[0] != k {
					t.Errorf("key %d served %v: a torn or misplaced value", k, v)
					return
				}
			}
		}()
	}
	wg.Wait()
	if c.Len() > 64 {
		t.Fatalf("%d entries, at most 64", c.Len())
	}
}

// Remember writes every change, even one a shortcut for repeated values
// might miss: a new value within the same clock reading, the same value at
// a later one (its age starts again), and values that == cannot tell apart
// but readers can (-0 after 0).
func TestRememberWritesEveryChange(t *testing.T) {
	type row struct {
		ID   int
		Name string
	}
	clk := clock.NewFake(time.Time{})
	rows := fallback.NewCache[string, row](fallback.CacheSettings{Clock: clk})
	rows.Remember("k", row{1, "one"})
	rows.Remember("k", row{1, "one"})
	rows.Remember("k", row{1, "uno"})
	if v, _, _ := rows.Get("k"); v != (row{1, "uno"}) {
		t.Fatalf("Get = %+v after a new value in the same tick, want {1 uno}", v)
	}
	clk.Advance(time.Second)
	rows.Remember("k", row{1, "uno"})
	clk.Advance(time.Second)
	if _, age, _ := rows.Get("k"); age != time.Second {
		t.Fatalf("age %v, want 1s: remembering the same value again makes it fresh", age)
	}

	floats := fallback.NewCache[string, float64](fallback.CacheSettings{Clock: clk})
	floats.Remember("k", 0)
	floats.Remember("k", math.Copysign(0, -1))
	if v, _, _ := floats.Get("k"); !math.Signbit(v) {
		t.Fatal("0 kept over -0: == is not sameness for floats")
	}
}

// Writers of one key race with each other and with readers: a reader
// never sees a value torn between two writes, and the last write wins.
func TestRememberUnderContention(t *testing.T) {
	type pair struct{ A, B int }
	c := fallback.NewCache[string, pair](fallback.CacheSettings{})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				n := i % 3 * (w + 1) // repeats, so some calls find their value there
				c.Remember("k", pair{n, n})
			}
		}()
	}
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		if v, _, ok := c.Get("k"); ok && v.A != v.B {
			close(stop)
			t.Fatalf("Get = %+v: torn between two writes", v)
		}
	}
	close(stop)
	wg.Wait()
	c.Remember("k", pair{-1, -1})
	if v, _, _ := c.Get("k"); v != (pair{-1, -1}) {
		t.Fatalf("Get = %+v after the last write, want {-1 -1}", v)
	}
}

// A cache of string keys serves, for every key it still holds, the value
// last remembered for that key and no other: checked against a map over
// random keys of up to 20 bytes, drawn from two letters so that keys share
// prefixes and lengths.
func TestCacheStringKeysAgainstAMap(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	c := fallback.NewCache[string, int](fallback.CacheSettings{MaxEntries: 64})
	latest := map[string]int{}
	served := 0
	for i := range 200_000 {
		key := make([]byte, rnd.IntN(20))
		for j := range key {
			key[j] = "ab"[rnd.IntN(2)]
		}
		k := string(key)
		if rnd.IntN(2) == 0 {
			c.Remember(k, i)
			latest[k] = i
			continue
		}
		v, _, ok := c.Get(k)
		if !ok {
			continue
		}
		served++
		if want, seen := latest[k]; !seen || v != want {
			t.Fatalf("Get(%q) = %d; the last value remembered for it is %d (remembered: %v)", k, v, want, seen)
		}
	}
	if served < 10_000 {
		t.Fatalf("only %d of about 100,000 look-ups were served: the test checks too little", served)
	}
}
