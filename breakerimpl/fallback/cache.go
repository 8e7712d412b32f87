package fallback

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// Errors a Cache returns when it cannot serve. Test with errors.Is.
var (
	// ErrNotCached: the primary never served this key (or the entry was
	// evicted to make room).
	ErrNotCached = errors.New("fallback: no cached value")
	// ErrTooStale: the cached value is older than CacheSettings.MaxStaleness.
	ErrTooStale = errors.New("fallback: cached value too stale")
)

// DefaultMaxEntries is the size of a Cache whose settings leave MaxEntries
// zero.
const DefaultMaxEntries = 10_000

// CacheSettings configures a Cache. The zero value is usable.
//
// Name is the Source of the results the cache serves; "cache" if empty.
//
// MaxEntries bounds the number of keys kept. When a new key needs room,
// an entry that has been neither remembered nor served for a long while is
// dropped: the least recently used of a few candidates, an approximation
// of LRU (see Cache). Zero or less means DefaultMaxEntries.
//
// MaxStaleness is the age beyond which a value is not served (Recover
// returns ErrTooStale) but kept, in case the primary never comes back and a
// later setting allows it. Zero or less means any age is served.
//
// Clock measures ages. Nil means clock.Default(), whose reading is one
// atomic load (ages are then accurate to about a millisecond).
type CacheSettings struct {
	Name         string
	MaxEntries   int
	MaxStaleness time.Duration
	Clock        clock.Clock
}

// Cache is a last-known-good fallback: it remembers the latest value the
// primary served for each key and serves it, with its age, when the primary
// fails. It is safe for concurrent use.
//
// Remember is on every successful call's path, so the cache is built for
// it: keys hash to a set of eight slots (one cache line of pointers), found
// without a lock; remembering a key already cached overwrites its entry in
// place under that entry's own lock and allocates nothing. Only a new key
// takes the cache-wide lock. When the key's set is full, or the cache
// holds MaxEntries keys, the least recently used entry of the set (or of a
// few sets sampled in turn) is dropped. Eviction is therefore approximate,
// as in Redis or a CPU cache, rather than strict LRU, which would need a
// shared list updated on every call.
type Cache[K comparable, T any] struct {
	name         string
	maxStaleness time.Duration
	clock        clock.Clock
	coarse       *clock.Coarse // clock, when coarse: read without an interface call
	seed         maphash.Seed
	shortSeed    uint64 // hashShort's seed for string keys, drawn from seed
	sets         []set[K, T]
	mask         uint64
	maxEntries   int
	stringKeys   bool // K is string: hashed with hashShort or maphash.String

	mu    sync.Mutex // held to add or drop entries
	count atomic.Int64
	hand  uint64 // next set to sample for eviction; under mu
}

const ways = 8

type set[K comparable, T any] struct {
	slots [ways]atomic.Pointer[entry[K, T]]
}

type entry[K comparable, T any] struct {
	hash uint64
	key  K
	// words are the shortWords of a string key of at most maxShortKey
	// bytes; zero for other keys.
	words [2]uint64
	// used is the Nanotime the entry was last remembered or served, for
	// eviction. It is written only when it changes, so a key remembered
	// many times within one tick of a coarse clock costs no extra write.
	used atomic.Int64

	mu    sync.Mutex
	value T
	at    int64 // Nanotime when value was remembered
}

// set stores v, remembered at now.
func (e *entry[K, T]) set(v T, now int64) {
	e.mu.Lock()
	e.value, e.at = v, now
	e.mu.Unlock()
}

// NewCache returns an empty Cache.
func NewCache[K comparable, T any](s CacheSettings) *Cache[K, T] {
	if s.MaxEntries <= 0 {
		s.MaxEntries = DefaultMaxEntries
	}
	if s.Clock == nil {
		s.Clock = clock.Default()
	}
	coarse, _ := s.Clock.(*clock.Coarse)
	// Twice as many slots as entries keeps sets from filling up long before
	// the cache does.
	nsets := 1 << bits.Len(uint((2*s.MaxEntries+ways-1)/ways-1))
	seed := maphash.MakeSeed()
	return &Cache[K, T]{
		name:         nameOr(s.Name, "cache"),
		maxStaleness: s.MaxStaleness,
		clock:        s.Clock,
		coarse:       coarse,
		seed:         seed,
		shortSeed:    newShortSeed(seed),
		sets:         make([]set[K, T], nsets),
		mask:         uint64(nsets - 1),
		maxEntries:   s.MaxEntries,
		stringKeys:   isString[K](),
	}
}

// isString reports whether K is string itself (not merely a type whose
// underlying type is string, which any(key).(string) would not match).
func isString[K comparable]() bool {
	var k K
	_, ok := any(k).(string)
	return ok
}

func (c *Cache[K, T]) nanotime() int64 {
	if k := c.coarse; k != nil {
		return k.Nanotime()
	}
	return c.clock.Nanotime()
}

// find returns the entry for key, or nil, and the key's hash.
func (c *Cache[K, T]) find(key K) (*entry[K, T], uint64) {
	var h uint64
	if c.stringKeys {
		// Without maphash.Comparable's look-up of the map type's hasher
		// and the indirect call to it; short keys without maphash's
		// three calls, and compared by their words and length rather
		// than by a call to memequal (hash.go).
		k := any(key).(string)
		if n := len(k); n <= maxShortKey {
			a, b := shortWords(k)
			h = mixShort(c.shortSeed, a, b, n)
			s := &c.sets[h&c.mask]
			for i := range s.slots {
				// K is string, so e.key's length is read as one.
				if e := s.slots[i].Load(); e != nil && e.hash == h && e.words == [2]uint64{a, b} && len(*(*string)(unsafe.Pointer(&e.key))) == n {
					return e, h
				}
			}
			return nil, h
		}
		h = maphash.String(c.seed, k)
	} else {
		h = maphash.Comparable(c.seed, key)
	}
	s := &c.sets[h&c.mask]
	for i := range s.slots {
		if e := s.slots[i].Load(); e != nil && e.hash == h && e.key == key {
			return e, h
		}
	}
	return nil, h
}

// Remember stores v as the latest value for key. For a key already in the
// cache it takes no shared lock and does not allocate.
func (c *Cache[K, T]) Remember(key K, v T) {
	var now int64
	if k := c.coarse; k != nil { // c.nanotime(), inlined
		now = k.Nanotime()
	} else {
		now = c.clock.Nanotime()
	}
	e, h := c.find(key)
	if e == nil {
		c.insert(h, key, v, now)
		return
	}
	e.mu.Lock() // e.set(v, now), written out: the call costs a tenth of Remember
	e.value, e.at = v, now
	e.mu.Unlock()
	if e.used.Load() != now {
		e.used.Store(now)
	}
}

// insert adds an entry for a key that find did not see.
func (c *Cache[K, T]) insert(h uint64, key K, v T, now int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &c.sets[h&c.mask]
	free := -1
	for i := range s.slots {
		e := s.slots[i].Load()
		if e == nil {
			if free < 0 {
				free = i
			}
			continue
		}
		if e.hash == h && e.key == key { // added meanwhile
			e.set(v, now)
			e.used.Store(now)
			return
		}
	}
	e := &entry[K, T]{hash: h, key: key, value: v, at: now}
	if c.stringKeys {
		if k := any(key).(string); len(k) <= maxShortKey {
			e.words[0], e.words[1] = shortWords(k)
		}
	}
	e.used.Store(now)
	switch {
	case free < 0: // the set is full: replace its least recently used
		s.slots[oldest(s)].Store(e)
		return
	case int(c.count.Load()) >= c.maxEntries:
		c.evict()
	}
	s.slots[free].Store(e)
	c.count.Add(1)
}

// oldest returns the slot of the least recently used entry of a full set.
func oldest[K comparable, T any](s *set[K, T]) int {
	victim, at := 0, int64(0)
	for i := range s.slots {
		if e := s.slots[i].Load(); e != nil {
			if u := e.used.Load(); i == 0 || u < at {
				victim, at = i, u
			}
		}
	}
	return victim
}

// evict drops the least recently used entry among the first ways entries
// found from the sampling hand onwards. c.mu is held and the cache is not
// empty.
func (c *Cache[K, T]) evict() {
	var victim *atomic.Pointer[entry[K, T]]
	var at int64
	seen := 0
	for n := uint64(0); n <= c.mask && seen < ways; n++ {
		s := &c.sets[c.hand]
		c.hand = (c.hand + 1) & c.mask
		for i := range s.slots {
			if e := s.slots[i].Load(); e != nil {
				if u := e.used.Load(); victim == nil || u < at {
					victim, at = &s.slots[i], u
				}
				seen++
			}
		}
	}
	if victim != nil {
		victim.Store(nil)
		c.count.Add(-1)
	}
}

// Recover serves the latest value remembered for key, with its age in
// Result.Age. It fails with ErrNotCached or ErrTooStale.
func (c *Cache[K, T]) Recover(_ context.Context, key K, _ error) (breakerimpl.Result[T], error) {
	v, age, ok := c.Get(key)
	if !ok {
		return breakerimpl.Result[T]{}, ErrNotCached
	}
	if c.maxStaleness > 0 && age > c.maxStaleness {
		return breakerimpl.Result[T]{}, fmt.Errorf("%w: %v old, at most %v allowed", ErrTooStale, age, c.maxStaleness)
	}
	return breakerimpl.Result[T]{Value: v, Source: c.name, Age: age}, nil
}

// Get returns the latest value remembered for key and its age, whatever the
// age, and whether there is one. It counts as a use of the entry.
func (c *Cache[K, T]) Get(key K) (v T, age time.Duration, ok bool) {
	e, _ := c.find(key)
	if e == nil {
		return v, 0, false
	}
	now := c.nanotime()
	e.mu.Lock()
	v, at := e.value, e.at
	e.mu.Unlock()
	if e.used.Load() != now {
		e.used.Store(now)
	}
	return v, time.Duration(max(now-at, 0)), true
}

// Len returns the number of keys cached.
func (c *Cache[K, T]) Len() int { return int(c.count.Load()) }
