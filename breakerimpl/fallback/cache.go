package fallback

import (
	"context"
	"errors"
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

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
// the least recently used entry (remembered or served longest ago) is
// dropped. Zero or less means DefaultMaxEntries.
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
// fails. It is an LRU of hashicorp/golang-lru/v2 (one lock, a map and a
// list) whose entries are the values and when they were remembered;
// remembering a key already cached overwrites its entry and allocates
// nothing. It is safe for concurrent use.
//
// golang-lru's expirable LRU is not used: it drops entries past their
// age, where a last-known-good cache keeps them (see MaxStaleness), and
// it reads the wall clock on a goroutine of its own that never ends.
type Cache[K comparable, T any] struct {
	name         string
	maxStaleness time.Duration
	clock        clock.Clock
	entries      *lru.Cache[K, entry[T]]
}

type entry[T any] struct {
	value T
	at    int64 // Nanotime when the value was remembered
}

// NewCache returns an empty Cache.
func NewCache[K comparable, T any](s CacheSettings) *Cache[K, T] {
	if s.MaxEntries <= 0 {
		s.MaxEntries = DefaultMaxEntries
	}
	if s.Clock == nil {
		s.Clock = clock.Default()
	}
	entries, err := lru.New[K, entry[T]](s.MaxEntries)
	if err != nil {
		panic(err) // only for a size below one, which the default rules out
	}
	return &Cache[K, T]{name: nameOr(s.Name, "cache"), maxStaleness: s.MaxStaleness, clock: s.Clock, entries: entries}
}

// Remember stores v as the latest value for key.
func (c *Cache[K, T]) Remember(key K, v T) {
	c.entries.Add(key, entry[T]{value: v, at: c.clock.Nanotime()})
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
	e, ok := c.entries.Get(key)
	return c.aged(e, ok)
}

// Peek is Get without counting as a use: the entry keeps its place in the
// order of eviction.
func (c *Cache[K, T]) Peek(key K) (v T, age time.Duration, ok bool) {
	e, ok := c.entries.Peek(key)
	return c.aged(e, ok)
}

func (c *Cache[K, T]) aged(e entry[T], ok bool) (T, time.Duration, bool) {
	if !ok {
		return e.value, 0, false
	}
	return e.value, time.Duration(max(c.clock.Nanotime()-e.at, 0)), true
}

// Len returns the number of keys cached.
func (c *Cache[K, T]) Len() int { return c.entries.Len() }
