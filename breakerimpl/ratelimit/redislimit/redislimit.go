// Package redislimit holds rate limiters whose counts live in Redis, so that
// every instance of a service shares one limit per key: a token bucket
// (TokenBucket) and a fixed-window counter (FixedWindow, go-zero's period
// limiter). Each decision is one Lua script, run atomically by Redis.
//
// While Redis is unreachable or slow (a call that errs or takes longer than
// Settings.Timeout), a limiter falls back to an in-memory limiter of
// breakerimpl/ratelimit with the same settings, one per key, checks
// Redis's health in the background (a PING every
// Settings.HealthInterval), and returns to Redis when it answers. Both
// transitions are published to Settings.OnEvent (FellBack, Recovered) and
// counted in the Snapshot. In memory the limit holds per instance, not for
// the fleet: n instances admit up to n times the rate until Redis is back.
//
// The time a script decides on is the limiter's clock (Settings.Clock),
// sent with each call, not Redis's: tests drive a real Redis with a fake
// clock, and the in-memory fallback keeps the same time. Instances sharing
// a key need clocks in step (NTP), as with go-zero's limiters; an instance
// ahead by d refills a bucket up to d × Rate early.
//
// A refusal is ratelimit.ErrLimited, which matches breakerimpl.ErrRejected;
// Key returns a breakerimpl.Guard for one key, for httpx.RateLimit and
// breakerimpl.Pipeline.
package redislimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
)

// Client is what a limiter needs of a go-redis client: scripts and PING.
// *redis.Client, *redis.ClusterClient and *redis.Ring are Clients. The
// limiter never closes it.
type Client interface {
	redis.Scripter
	Ping(ctx context.Context) *redis.StatusCmd
}

// Options returns go-redis options for a client of addr fit for limiters:
// it honours the context's deadline (ContextTimeoutEnabled; without it a
// go-redis client bounds a read by its ReadTimeout, 3 s by default, and
// Settings.Timeout cannot cut a slow call short), and it neither retries a
// command nor redials, since a limiter answers from memory rather than
// wait. Change any field before redis.NewClient.
//
// A go-redis client whose dials fail PoolSize times in a row stops dialing
// and probes once a second until a dial succeeds; until then every command,
// the health check's PING included, fails at once. So a limiter may return
// to Redis up to a second later than HealthInterval alone would say.
func Options(addr string) *redis.Options {
	return &redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialerRetries:         1,
		DialTimeout:           time.Second,
	}
}

// Default settings.
const (
	// DefaultTimeout bounds one Redis call. A limiter in front of a call
	// should cost far less than the call; Redis on the same network answers
	// in about a millisecond, so 50 ms means it is in trouble.
	DefaultTimeout = 50 * time.Millisecond
	// DefaultHealthInterval is the time between PINGs while in memory:
	// back within a quarter second of Redis, for four PINGs a second.
	DefaultHealthInterval = 250 * time.Millisecond
	// DefaultMaxKeys bounds the keys held in memory while Redis is away.
	DefaultMaxKeys = 10000
)

// Settings are what both limiters share. The zero value is usable.
//
// Name names the limiter in events and snapshots, and in its Redis keys.
// It may be empty.
//
// Prefix starts every Redis key of the limiter. Empty means
// "ratelimit:NAME:" ("ratelimit:" without a name). Two limiters with
// different limits must not share keys.
//
// Timeout bounds each Redis call; a call that takes longer counts as Redis
// failing and the limiter falls back to memory. Zero or less means
// DefaultTimeout. It is measured on real time, not on Clock, and set as
// the call's context deadline, which a go-redis client honours only with
// ContextTimeoutEnabled (see Options).
//
// HealthInterval is how long the limiter waits between PINGs while it is
// in memory; the first PING that answers within Timeout brings it back to
// Redis. Zero or less means DefaultHealthInterval. It is measured on Clock.
//
// MaxKeys bounds how many keys the in-memory fallback tracks. A new key
// beyond it evicts an arbitrary one, whose next call starts from a fresh
// limiter (a full bucket, an empty window). Zero or less means
// DefaultMaxKeys.
//
// OnEvent is told each move to memory (on the goroutine of the call that
// saw Redis fail) and each return to Redis (on the health check's
// goroutine). It must not block for long. Nil means no one is told;
// LogEvents makes one that logs through log/slog.
//
// Clock is the time source: the time sent to the scripts, the in-memory
// limiters' time, the health check's waits and the events' times. Nil means
// clock.Default(); tests pass a *clock.Fake.
type Settings struct {
	Name           string
	Prefix         string
	Timeout        time.Duration
	HealthInterval time.Duration
	MaxKeys        int
	OnEvent        func(Event)
	Clock          clock.Clock
}

func (s Settings) withDefaults() Settings {
	if s.Prefix == "" {
		s.Prefix = "ratelimit:"
		if s.Name != "" {
			s.Prefix += s.Name + ":"
		}
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.HealthInterval <= 0 {
		s.HealthInterval = DefaultHealthInterval
	}
	if s.MaxKeys <= 0 {
		s.MaxKeys = DefaultMaxKeys
	}
	if s.Clock == nil {
		s.Clock = clock.Default()
	}
	return s
}

// Backend says where a limiter keeps its counts.
type Backend uint8

const (
	// InRedis: counts are in Redis, shared by every instance.
	InRedis Backend = iota
	// InMemory: Redis failed; counts are in this process until it is back.
	InMemory
)

// String returns "redis" or "memory".
func (b Backend) String() string {
	switch b {
	case InRedis:
		return "redis"
	case InMemory:
		return "memory"
	}
	return fmt.Sprintf("Backend(%d)", uint8(b))
}

// MarshalText makes a Backend encode as its name in JSON.
func (b Backend) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// EventKind says which way a limiter moved.
type EventKind string

const (
	// FellBack: a Redis call failed or timed out; the limiter counts in
	// memory from now on and checks Redis's health in the background.
	FellBack EventKind = "fallback"
	// Recovered: Redis answered a health check; the limiter counts in
	// Redis again and the in-memory counts are dropped.
	Recovered EventKind = "recovered"
)

// Event is published to Settings.OnEvent on each change of backend.
type Event struct {
	Name string
	Kind EventKind
	// Err is the Redis error that caused a FellBack.
	Err error
	// InMemoryFor is, for Recovered, how long the limiter was in memory.
	InMemoryFor time.Duration
	// At is when it happened, on the limiter's clock.
	At time.Time
}

// Decision is a limiter's answer to one call.
type Decision struct {
	// Allowed says whether the call may go ahead.
	Allowed bool
	// RetryAfter is, for a refusal, how long until the key admits a call
	// again (a token is due, the window ends): to the microsecond and at
	// least a millisecond from Redis, in whole seconds from memory (as the
	// ratelimit limiters say it).
	RetryAfter time.Duration
	// Backend is where the decision was made.
	Backend Backend
}

// Snapshot is a limiter's state and lifetime counters at one moment, for
// metrics and status pages. The counters only grow.
type Snapshot struct {
	Name string `json:"name"`
	// Kind is "token-bucket" or "fixed-window".
	Kind string `json:"kind"`
	// Limit is the tokens per second, or the calls per window.
	Limit float64 `json:"limit"`
	// Backend is where the counts are now, and Since when that began.
	Backend Backend   `json:"backend"`
	Since   time.Time `json:"since"`
	// Allowed and Rejected count decisions, wherever they were made;
	// AllowedInMemory and RejectedInMemory count those made in memory.
	Allowed          uint64 `json:"allowed"`
	Rejected         uint64 `json:"rejected"`
	AllowedInMemory  uint64 `json:"allowedInMemory"`
	RejectedInMemory uint64 `json:"rejectedInMemory"`
	// RedisErrors counts Redis calls that failed or timed out, health
	// checks included.
	RedisErrors uint64 `json:"redisErrors"`
	// Fallbacks and Recoveries count the moves to memory and back.
	Fallbacks  uint64 `json:"fallbacks"`
	Recoveries uint64 `json:"recoveries"`
	// LastError is the last Redis error seen, empty if none.
	LastError string `json:"lastError,omitempty"`
	// MemoryKeys is how many keys the in-memory fallback tracks now.
	MemoryKeys int `json:"memoryKeys"`
}

// memoryLimiter is what the fallback needs of a ratelimit limiter.
type memoryLimiter interface {
	Allow(ctx context.Context) (breakerimpl.Permit, error)
	RetryAfter() time.Duration
}

// redisAnswer is what a script decided: allowed, or the wait until it
// would be.
type redisAnswer struct {
	allowed bool
	wait    time.Duration
}

// core is the Redis-or-memory switch both limiters share.
type core struct {
	s         Settings
	client    Client
	newMemory func() memoryLimiter

	inMemory atomic.Bool

	mu       sync.Mutex
	memory   map[string]memoryLimiter
	since    time.Time
	lastErr  error
	watching bool
	closed   bool
	wg       sync.WaitGroup

	// ctx ends with close; the health check's PINGs run under it.
	ctx    context.Context
	cancel context.CancelFunc

	allowed, rejected, allowedMem, rejectedMem atomic.Uint64
	redisErrors, fallbacks, recoveries         atomic.Uint64
}

func newCore(client Client, s Settings, newMemory func() memoryLimiter) *core {
	ctx, cancel := context.WithCancel(context.Background())
	return &core{s: s, client: client, newMemory: newMemory, since: s.Clock.Now(), ctx: ctx, cancel: cancel}
}

// decide answers one call for key: by ask (a script run in Redis, bounded
// by Timeout) while Redis is healthy, by the key's in-memory limiter
// otherwise. It errs only when ctx ends before Redis answers.
func (c *core) decide(ctx context.Context, key string, ask func(ctx context.Context) (redisAnswer, error)) (Decision, error) {
	if !c.inMemory.Load() {
		call, cancel := context.WithTimeout(ctx, c.s.Timeout)
		a, err := ask(call)
		cancel()
		if err == nil {
			if a.allowed {
				c.allowed.Add(1)
				return Decision{Allowed: true, Backend: InRedis}, nil
			}
			c.rejected.Add(1)
			return Decision{RetryAfter: max(a.wait, time.Millisecond), Backend: InRedis}, nil
		}
		if ctx.Err() != nil {
			// The caller gave up: that says nothing about Redis.
			return Decision{}, ctx.Err()
		}
		c.fallBack(err)
	}
	m := c.memoryFor(key)
	if _, err := m.Allow(ctx); err != nil {
		if !errors.Is(err, ratelimit.ErrLimited) {
			return Decision{}, err
		}
		c.rejected.Add(1)
		c.rejectedMem.Add(1)
		return Decision{RetryAfter: m.RetryAfter(), Backend: InMemory}, nil
	}
	c.allowed.Add(1)
	c.allowedMem.Add(1)
	return Decision{Allowed: true, Backend: InMemory}, nil
}

// memoryFor returns key's in-memory limiter, making it (and evicting
// another past MaxKeys) if needed.
func (c *core) memoryFor(key string) memoryLimiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.memory[key]; ok {
		return m
	}
	if c.memory == nil {
		c.memory = make(map[string]memoryLimiter)
	}
	if len(c.memory) >= c.s.MaxKeys {
		for k := range c.memory { // an arbitrary key
			delete(c.memory, k)
			break
		}
	}
	m := c.newMemory()
	c.memory[key] = m
	return m
}

// fallBack moves the limiter to memory after err, once however many calls
// see Redis fail together, and starts the health check.
func (c *core) fallBack(err error) {
	c.redisErrors.Add(1)
	c.mu.Lock()
	c.lastErr = err
	if c.inMemory.Load() {
		c.mu.Unlock()
		return
	}
	now := c.s.Clock.Now()
	c.since = now
	// Fresh limiters (a call that raced the last recovery may have left
	// one behind).
	c.memory = nil
	c.inMemory.Store(true)
	c.fallbacks.Add(1)
	if !c.watching && !c.closed {
		c.watching = true
		c.wg.Add(1)
		go c.watch()
	}
	c.mu.Unlock()
	if c.s.OnEvent != nil {
		c.s.OnEvent(Event{Name: c.s.Name, Kind: FellBack, Err: err, At: now})
	}
}

// watch PINGs Redis every HealthInterval until it answers (then the
// limiter returns to Redis) or Close.
func (c *core) watch() {
	defer c.wg.Done()
	t := c.s.Clock.NewTimer(c.s.HealthInterval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C():
		}
		ping, done := context.WithTimeout(c.ctx, c.s.Timeout)
		err := c.client.Ping(ping).Err()
		done()
		if err == nil {
			c.recover()
			return
		}
		if c.ctx.Err() != nil {
			return
		}
		c.redisErrors.Add(1)
		c.mu.Lock()
		c.lastErr = err
		c.mu.Unlock()
		t.Reset(c.s.HealthInterval)
	}
}

// recover moves the limiter back to Redis and forgets the in-memory
// counts, so the next fallback starts afresh.
func (c *core) recover() {
	c.mu.Lock()
	now := c.s.Clock.Now()
	inMemoryFor := now.Sub(c.since)
	c.since = now
	c.memory = nil
	c.watching = false
	c.inMemory.Store(false)
	c.recoveries.Add(1)
	c.mu.Unlock()
	if c.s.OnEvent != nil {
		c.s.OnEvent(Event{Name: c.s.Name, Kind: Recovered, InMemoryFor: inMemoryFor, At: now})
	}
}

// close stops the health check and waits for it. A limiter in memory
// stays there; one in Redis that then sees Redis fail moves to memory for
// good.
func (c *core) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.cancel()
	c.mu.Unlock()
	c.wg.Wait()
}

func (c *core) snapshot(kind string, limit float64) Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{
		Name: c.s.Name, Kind: kind, Limit: limit, Backend: InRedis, Since: c.since,
		Allowed: c.allowed.Load(), Rejected: c.rejected.Load(),
		AllowedInMemory: c.allowedMem.Load(), RejectedInMemory: c.rejectedMem.Load(),
		RedisErrors: c.redisErrors.Load(), Fallbacks: c.fallbacks.Load(), Recoveries: c.recoveries.Load(),
		MemoryKeys: len(c.memory),
	}
	if c.inMemory.Load() {
		s.Backend = InMemory
	}
	if c.lastErr != nil {
		s.LastError = c.lastErr.Error()
	}
	return s
}

// keyLimiter is either limiter, as a Guard sees it.
type keyLimiter interface {
	Allow(ctx context.Context, key string) (Decision, error)
}

// Guard is one key of a limiter as a breakerimpl.Guard, for
// httpx.RateLimit and breakerimpl.Pipeline. Make one with the limiter's
// Key method; it is safe for concurrent use.
type Guard struct {
	lim        keyLimiter
	key        string
	retryAfter atomic.Int64 // of the last refusal, in nanoseconds
}

// Allow admits a call or refuses it with ratelimit.ErrLimited (or ctx's
// error if ctx ends before Redis answers). The permit's Done does nothing.
func (g *Guard) Allow(ctx context.Context) (breakerimpl.Permit, error) {
	d, err := g.lim.Allow(ctx, g.key)
	if err != nil {
		return breakerimpl.Permit{}, err
	}
	if !d.Allowed {
		g.retryAfter.Store(int64(d.RetryAfter))
		return breakerimpl.Permit{}, ratelimit.ErrLimited
	}
	return breakerimpl.Permit{}, nil
}

// Done does nothing; it is there for breakerimpl.Guard.
func (g *Guard) Done(breakerimpl.Permit, error) {}

// RetryAfter returns the wait the last refusal named, rounded up to whole
// seconds, at least one (an HTTP 429's Retry-After).
func (g *Guard) RetryAfter() time.Duration {
	d := max(time.Duration(g.retryAfter.Load()), 1)
	return (d + time.Second - 1).Truncate(time.Second)
}
