// Package cache is the demo's last-known-good product cache: an in-process
// LRU (hashicorp/golang-lru/v2) that remembers the latest copy the database
// served for each key and stands in for the database when it fails. It is a
// breakerimpl fallback, and it has its own failpoint (cacheGet), because a
// cache can fail too.
package cache

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/pingcap/failpoint"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/inject"
)

// Errors Recover fails with.
var (
	ErrMiss  = errors.New("cache: no copy of this key")
	ErrStale = errors.New("cache: copy older than the maximum staleness")
)

// LastKnownGood is a last-known-good cache of values keyed by K.
type LastKnownGood[K comparable, V any] struct {
	name         string
	maxStaleness time.Duration
	now          func() time.Time
	entries      *lru.Cache[K, entry[V]]
	hits, misses atomic.Int64
	stale        atomic.Int64
}

type entry[V any] struct {
	v  V
	at time.Time
}

// New returns a cache of at most size entries that serves copies no older
// than maxStaleness (zero: any age) under the source name name.
func New[K comparable, V any](name string, size int, maxStaleness time.Duration) *LastKnownGood[K, V] {
	entries, err := lru.New[K, entry[V]](size)
	if err != nil {
		panic(fmt.Sprintf("cache size %d: %v", size, err))
	}
	return &LastKnownGood[K, V]{name: name, maxStaleness: maxStaleness, now: time.Now, entries: entries}
}

// Remember implements breakerimpl.Fallback: it keeps v as key's latest copy.
func (c *LastKnownGood[K, V]) Remember(key K, v V) {
	c.entries.Add(key, entry[V]{v: v, at: c.now()})
}

// Recover implements breakerimpl.Fallback: it serves key's latest copy with
// its age. The cacheGet failpoint stands for the cache itself failing.
func (c *LastKnownGood[K, V]) Recover(ctx context.Context, key K, _ error) (breakerimpl.Result[V], error) {
	res := breakerimpl.Result[V]{Source: c.name}
	failpoint.Inject("cacheGet", func(v failpoint.Value) {
		if err := inject.Fire(ctx, v); err != nil {
			failpoint.Return(res, fmt.Errorf("cache get: %w", err))
		}
	})
	e, ok := c.entries.Get(key)
	if !ok {
		c.misses.Add(1)
		return res, ErrMiss
	}
	age := c.now().Sub(e.at)
	if c.maxStaleness > 0 && age > c.maxStaleness {
		c.stale.Add(1)
		return res, fmt.Errorf("%w (%v > %v)", ErrStale, age.Round(time.Millisecond), c.maxStaleness)
	}
	c.hits.Add(1)
	res.Value, res.Age = e.v, age
	return res, nil
}

// Peek returns key's copy without counting a hit or checking staleness.
func (c *LastKnownGood[K, V]) Peek(key K) (V, time.Duration, bool) {
	e, ok := c.entries.Peek(key)
	if !ok {
		var zero V
		return zero, 0, false
	}
	return e.v, c.now().Sub(e.at), true
}

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
	return Stats{Entries: c.entries.Len(), Hits: c.hits.Load(), Misses: c.misses.Load(), Stale: c.stale.Load(), MaxStaleness: c.maxStaleness.Milliseconds()}
}
