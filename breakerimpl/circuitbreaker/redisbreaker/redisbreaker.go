// Package redisbreaker shares a circuit breaker's open state among the
// instances of a service through Redis, as sony/gobreaker v2's
// DistributedCircuitBreaker shares its whole state: when one instance's
// breaker trips, every instance refuses calls to the dependency until the
// open duration ends, instead of each learning the same failures on its
// own traffic.
//
// Unlike gobreaker's, no call waits on Redis: each instance counts its own
// calls with a circuitbreaker.Breaker (its rule, open duration and probes);
// a trip is published to Redis (a key holding the moment the fleet's open
// state ends, expiring then) on a goroutine of its own, and every instance
// reads the key every Sync. A call costs the local breaker's Allow and one
// atomic load.
//
// While Redis cannot be reached, each instance keeps its local breaker (the
// in-memory fallback the Redis limiters have too): it trips on its own
// failures and forgets the fleet's state rather than act on a stale one;
// once Redis answers again, sharing resumes by itself.
package redisbreaker

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
)

// Defaults of zero Settings fields.
const (
	DefaultSync    = 100 * time.Millisecond
	DefaultTimeout = 50 * time.Millisecond
)

// Settings configures a Breaker. Client is required.
type Settings struct {
	// Breaker configures the local breaker. Its OnStateChange is called
	// too.
	Breaker circuitbreaker.Settings
	// Client reaches the Redis shared by the instances.
	Client redis.UniversalClient
	// Key is the Redis key of the fleet's open state. Empty means
	// "breakerimpl:breaker:" + Breaker.Name.
	Key string
	// Sync is how often the key is read. Zero or less means DefaultSync.
	Sync time.Duration
	// Timeout bounds each Redis command. Zero or less means DefaultTimeout.
	Timeout time.Duration
}

// Snapshot is a Breaker's state.
type Snapshot struct {
	Local circuitbreaker.Snapshot `json:"local"`
	// FleetOpen is set while another instance's trip (or this one's) keeps
	// the dependency open for the fleet, until FleetOpenUntil.
	FleetOpen      bool      `json:"fleetOpen"`
	FleetOpenUntil time.Time `json:"fleetOpenUntil,omitzero"`
	// Redis is false while the last Redis command failed (local only).
	Redis bool `json:"redis"`
	// RedisErrors counts failed Redis commands; FleetRefused the calls
	// refused because the fleet was open while the local breaker was not.
	RedisErrors  uint64 `json:"redisErrors"`
	FleetRefused uint64 `json:"fleetRefused"`
}

// Breaker is a circuit breaker whose open state the instances share
// through Redis. Make one with New and Close it; it is safe for
// concurrent use, and a breakerimpl.Guard.
type Breaker struct {
	local     *circuitbreaker.Breaker
	fleetOpen atomic.Bool
	until     atomic.Int64 // unix nanoseconds; 0 when the fleet is not open
	redisOK   atomic.Bool
	redisErrs atomic.Uint64
	refused   atomic.Uint64

	client  redis.UniversalClient
	key     string
	sync    time.Duration
	timeout time.Duration
	stop    chan struct{}
	wg      sync.WaitGroup
}

// New makes the local breaker and starts reading the fleet's state.
func New(s Settings) *Breaker {
	if s.Key == "" {
		s.Key = "breakerimpl:breaker:" + s.Breaker.Name
	}
	if s.Sync <= 0 {
		s.Sync = DefaultSync
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	b := &Breaker{client: s.Client, key: s.Key, sync: s.Sync, timeout: s.Timeout, stop: make(chan struct{})}
	b.redisOK.Store(true)
	user := s.Breaker.OnStateChange
	s.Breaker.OnStateChange = func(e circuitbreaker.StateChange) {
		b.changed(e)
		if user != nil {
			user(e)
		}
	}
	b.local = circuitbreaker.New(s.Breaker)
	b.wg.Add(1)
	go b.loop()
	return b
}

// Local returns the local breaker, for metrics and operation.
func (b *Breaker) Local() *circuitbreaker.Breaker { return b.local }

// Allow refuses with breakerimpl.ErrOpen while the fleet is open, and
// otherwise asks the local breaker.
func (b *Breaker) Allow(ctx context.Context) (breakerimpl.Permit, error) {
	if b.fleetOpen.Load() {
		b.refused.Add(1)
		return breakerimpl.Permit{}, circuitbreaker.ErrOpen
	}
	return b.local.Allow(ctx)
}

// Done is the local breaker's; a permit from Allow calls it itself.
func (b *Breaker) Done(p breakerimpl.Permit, err error) { b.local.Done(p, err) }

// Snapshot returns the state now.
func (b *Breaker) Snapshot() Snapshot {
	s := Snapshot{Local: b.local.Snapshot(), FleetOpen: b.fleetOpen.Load(), Redis: b.redisOK.Load(),
		RedisErrors: b.redisErrs.Load(), FleetRefused: b.refused.Load()}
	if u := b.until.Load(); u != 0 && s.FleetOpen {
		s.FleetOpenUntil = time.Unix(0, u)
	}
	return s
}

// Close stops reading the fleet's state.
func (b *Breaker) Close() {
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	b.wg.Wait()
}

// changed publishes the local breaker's trips and recoveries.
func (b *Breaker) changed(e circuitbreaker.StateChange) {
	switch {
	case e.To == circuitbreaker.Open && e.From != circuitbreaker.Open && e.OpenFor > 0:
		until := time.Now().Add(e.OpenFor)
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.do(func(ctx context.Context) error {
				return b.client.Set(ctx, b.key, strconv.FormatInt(until.UnixNano(), 10), time.Until(until)).Err()
			})
		}()
	case e.To == circuitbreaker.Closed && e.From == circuitbreaker.HalfOpen:
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			if b.do(func(ctx context.Context) error { return b.client.Del(ctx, b.key).Err() }) {
				b.fleetOpen.Store(false)
			}
		}()
	}
}

// do runs one Redis command with the timeout and records its outcome.
func (b *Breaker) do(cmd func(context.Context) error) bool {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	if err := cmd(ctx); err != nil && !errors.Is(err, redis.Nil) {
		b.redisErrs.Add(1)
		b.redisOK.Store(false)
		return false
	}
	b.redisOK.Store(true)
	return true
}

// loop reads the fleet's state every Sync.
func (b *Breaker) loop() {
	defer b.wg.Done()
	t := time.NewTicker(b.sync)
	defer t.Stop()
	for {
		b.read()
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
	}
}

// read reads the key: the fleet is open until the moment it holds.
func (b *Breaker) read() {
	var v string
	ok := b.do(func(ctx context.Context) error {
		var err error
		v, err = b.client.Get(ctx, b.key).Result()
		return err
	})
	if !ok {
		b.fleetOpen.Store(false) // stale: the local breaker decides alone
		return
	}
	until, err := strconv.ParseInt(v, 10, 64)
	if err != nil || time.Now().UnixNano() >= until {
		b.fleetOpen.Store(false)
		b.until.Store(0)
		return
	}
	b.until.Store(until)
	b.fleetOpen.Store(true)
}
