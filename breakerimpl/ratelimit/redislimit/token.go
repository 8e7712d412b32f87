package redislimit

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"

	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
)

// TokenSettings configures a TokenBucket. The zero value refuses every
// call (a zero rate); set Rate.
//
// Rate is how many tokens are added to each key's bucket per second; each
// call takes one. Zero or less refuses every call, rate.Inf admits every
// call; neither asks Redis.
//
// Burst is how many tokens a bucket holds: the calls a key may make at
// once after a quiet spell. Zero or less means 1.
//
// Settings are the limiter's name, keys, timeouts, fallback and clock.
type TokenSettings struct {
	Rate  rate.Limit
	Burst int
	Settings
}

// tokenScript is the token bucket, refilled lazily: a key's hash holds the
// tokens left (t) and when they were counted (ts, in microseconds on the
// caller's clock). A call adds the tokens earned since ts, up to the
// burst, and takes one if there is one; a refusal changes nothing, since
// the same refill is computed again next time. ts is stored as the string
// the caller sent: a Lua number turned into a string keeps 14 digits,
// fewer than a time in microseconds has, and a rounded ts would add tokens
// on every call. The key expires once its bucket would be full anyway.
//
// ARGV: rate (tokens per second), burst, now (µs), ttl (ms).
// Returns {1, 0} when a token was taken, {0, µs until one is due} if not.
var tokenScript = redis.NewScript(`
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 't', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
local stamp = state[2]
if tokens == nil or ts == nil then
  tokens, ts, stamp = burst, now, ARGV[3]
end
if now > ts then
  tokens = math.min(burst, tokens + (now - ts) * rate / 1e6)
  stamp = ARGV[3]
end
if tokens < 1 then
  return {0, math.ceil((1 - tokens) * 1e6 / rate)}
end
redis.call('HSET', KEYS[1], 't', tokens - 1, 'ts', stamp)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {1, 0}
`)

// TokenBucket is a token-bucket limiter per key, kept in Redis, with an
// in-memory ratelimit.TokenBucket per key while Redis is away. Make one with
// NewTokenBucket and stop its health check with Close; it is safe for
// concurrent use.
type TokenBucket struct {
	core  *core
	rate  rate.Limit
	burst int
	args  [3]string // rate, burst, ttl: the script's fixed arguments
}

// NewTokenBucket returns a TokenBucket over client with the given settings.
func NewTokenBucket(client Client, s TokenSettings) *TokenBucket {
	s.Settings = s.Settings.withDefaults()
	if s.Burst <= 0 {
		s.Burst = 1
	}
	t := &TokenBucket{rate: s.Rate, burst: s.Burst}
	mem := ratelimit.TokenSettings{Name: s.Name, Rate: s.Rate, Burst: s.Burst, Clock: s.Clock}
	t.core = newCore(client, s.Settings, func() memoryLimiter { return ratelimit.NewTokenBucket(mem) })
	if s.Rate > 0 && s.Rate != rate.Inf {
		// Twice the time to fill the bucket, and a second, on Redis's
		// clock: after that the bucket would be full, as a missing key is.
		fill := time.Duration(float64(s.Burst) / float64(s.Rate) * float64(time.Second))
		ttl := 2*fill + time.Second
		t.args = [3]string{
			strconv.FormatFloat(float64(s.Rate), 'g', -1, 64),
			strconv.Itoa(s.Burst),
			strconv.FormatInt(ttl.Milliseconds(), 10),
		}
	}
	return t
}

// Allow takes a token from key's bucket, or says how long until one is
// due. It errs only when ctx ends before Redis answers.
func (t *TokenBucket) Allow(ctx context.Context, key string) (Decision, error) {
	switch {
	case t.rate == rate.Inf:
		return Decision{Allowed: true}, nil
	case t.rate <= 0:
		// As ratelimit.TokenBucket with a zero rate: never, and Retry-After
		// cannot say when.
		return Decision{RetryAfter: time.Second}, nil
	}
	return t.core.decide(ctx, key, func(ctx context.Context) (redisAnswer, error) {
		now := t.core.s.Clock.Now().UnixMicro()
		r, err := tokenScript.Run(ctx, t.core.client, []string{t.core.s.Prefix + key},
			t.args[0], t.args[1], now, t.args[2]).Int64Slice()
		if err != nil {
			return redisAnswer{}, err
		}
		if len(r) != 2 {
			return redisAnswer{}, errBadReply
		}
		return redisAnswer{allowed: r[0] == 1, wait: time.Duration(min(r[1], math.MaxInt64/1000)) * time.Microsecond}, nil
	})
}

// Key returns a breakerimpl.Guard that takes its tokens from key's bucket.
func (t *TokenBucket) Key(key string) *Guard { return &Guard{lim: t, key: key} }

// Snapshot returns the limiter's state and counters now. Limit is the rate.
func (t *TokenBucket) Snapshot() Snapshot { return t.core.snapshot("token-bucket", float64(t.rate)) }

// Close stops the health check and waits for its goroutine to end. The
// limiter stays usable: in memory if it was, and in memory for good if
// Redis fails after Close. It does not close the client. Close is
// idempotent and always returns nil.
func (t *TokenBucket) Close() error {
	t.core.close()
	return nil
}
