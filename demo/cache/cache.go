// Package cache is the demo's last-known-good product cache: breakerimpl's
// fallback.Cache, which remembers the latest copy the database served for
// each key and stands in for the database when it fails, with the counts
// the demo's state endpoint shows and a failpoint of its own (cacheGet),
// because a cache can fail too.
package cache

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/inject"
)

// cacheGet is the fault point that stands for the cache failing: a switch,
// live in any build of the demo.
var cacheGet = inject.NewSwitch("cacheGet")

// Errors Recover fails with: the library's.
var (
	ErrMiss  = fallback.ErrNotCached
	ErrStale = fallback.ErrTooStale
)

// LastKnownGood is a last-known-good cache of values keyed by K.
type LastKnownGood[K comparable, V any] struct {
	name                string
	copies              *fallback.Cache[K, V]
	maxStaleness        time.Duration
	hits, misses, stale atomic.Int64
}

// New returns a cache of at most size entries that serves copies no older
// than maxStaleness (zero: any age) under the source name name.
func New[K comparable, V any](name string, size int, maxStaleness time.Duration) *LastKnownGood[K, V] {
	return newOnClock[K, V](name, size, maxStaleness, nil)
}

// newOnClock is New with the clock that measures ages (nil: the default).
func newOnClock[K comparable, V any](name string, size int, maxStaleness time.Duration, c clock.Clock) *LastKnownGood[K, V] {
	return &LastKnownGood[K, V]{
		name:         name,
		copies:       fallback.NewCache[K, V](fallback.CacheSettings{Name: name, MaxEntries: size, MaxStaleness: maxStaleness, Clock: c}),
		maxStaleness: maxStaleness,
	}
}

// Remember implements breakerimpl.Fallback: it keeps v as key's latest copy.
func (c *LastKnownGood[K, V]) Remember(key K, v V) { c.copies.Remember(key, v) }

// Recover implements breakerimpl.Fallback: it serves key's latest copy with
// its age. The cacheGet failpoint stands for the cache itself failing.
func (c *LastKnownGood[K, V]) Recover(ctx context.Context, key K, err error) (breakerimpl.Result[V], error) {
	if v, ok := cacheGet.Eval(); ok {
		if err := inject.Fire(ctx, v); err != nil {
			return breakerimpl.Result[V]{Source: c.name}, fmt.Errorf("cache get: %w", err)
		}
	}
	res, rerr := c.copies.Recover(ctx, key, err)
	switch {
	case rerr == nil:
		c.hits.Add(1)
	case errors.Is(rerr, ErrStale):
		c.stale.Add(1)
	default:
		c.misses.Add(1)
	}
	return res, rerr
}

// Peek returns key's copy and its age without counting a hit, checking
// staleness or moving the key up the order of eviction.
func (c *LastKnownGood[K, V]) Peek(key K) (V, time.Duration, bool) { return c.copies.Peek(key) }

// Stats is the cache's state for the demo's state endpoint.
type Stats struct {
	Entries      int   `json:"entries"`
	Hits         int64 `json:"hits"`
	Misses       int64 `json:"misses"`
	Stale        int64 `json:"stale"`
	MaxStaleness int64 `json:"max_staleness_ms"`
}

// Stats returns the cache's counters.
func (c *LastKnownGood[K, V]) Stats() Stats {
	return Stats{Entries: c.copies.Len(), Hits: c.hits.Load(), Misses: c.misses.Load(), Stale: c.stale.Load(), MaxStaleness: c.maxStaleness.Milliseconds()}
}
