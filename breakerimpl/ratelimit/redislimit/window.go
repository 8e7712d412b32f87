package redislimit

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
)

// WindowSettings configures a FixedWindow. The zero value refuses every
// call (a zero limit); set Limit.
//
// Limit is how many calls each key may make in one window. Zero or less
// refuses every call without asking Redis.
//
// Window is the length of a window. Windows are aligned on the clock's
// epoch (a one-minute window starts on the minute), so every instance
// counts in the same window. Zero or less means a second.
//
// Settings are the limiter's name, keys, timeouts, fallback and clock.
type WindowSettings struct {
	Limit  int
	Window time.Duration
	Settings
}

// windowScript counts one call in a window's counter, whose key names the
// window, and makes the counter expire after the window. It returns the
// count, this call included.
//
// ARGV: ttl (ms).
var windowScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return n
`)

// errBadReply is a script answer of the wrong shape: a Redis failure.
var errBadReply = errors.New("redislimit: unexpected reply from the limiter script")

// FixedWindow admits at most Limit calls per key in each fixed window, as
// go-zero's period limiter does: one counter per key and window, kept in
// Redis. At a window's edge a key can make up to 2 × Limit calls in a
// short while (the end of one window and the start of the next); the
// in-memory fallback, a ratelimit.SlidingWindow per key, does not allow
// that, so it is slightly stricter. Make one with NewFixedWindow and stop
// its health check with Close; it is safe for concurrent use.
type FixedWindow struct {
	core   *core
	limit  int64
	window time.Duration
	ttl    string
}

// NewFixedWindow returns a FixedWindow over client with the given settings.
func NewFixedWindow(client Client, s WindowSettings) *FixedWindow {
	s.Settings = s.Settings.withDefaults()
	if s.Window <= 0 {
		s.Window = time.Second
	}
	w := &FixedWindow{limit: int64(max(s.Limit, 0)), window: s.Window}
	mem := ratelimit.WindowSettings{Name: s.Name, Limit: s.Limit, Window: s.Window, Clock: s.Clock}
	w.core = newCore(client, s.Settings, func() memoryLimiter { return ratelimit.NewSlidingWindow(mem) })
	// The counter is not read after its window; a second more covers a
	// Redis clock a little behind ours.
	w.ttl = strconv.FormatInt((s.Window + time.Second).Milliseconds(), 10)
	return w
}

// Allow counts a call in key's current window, or says how long until the
// next window. It errs only when ctx ends before Redis answers.
func (w *FixedWindow) Allow(ctx context.Context, key string) (Decision, error) {
	if w.limit <= 0 {
		return Decision{RetryAfter: w.window}, nil
	}
	return w.core.decide(ctx, key, func(ctx context.Context) (redisAnswer, error) {
		now := w.core.s.Clock.Now().UnixNano()
		n := now / int64(w.window)
		k := w.core.s.Prefix + key + ":" + strconv.FormatInt(n, 10)
		count, err := windowScript.Run(ctx, w.core.client, []string{k}, w.ttl).Int64()
		if err != nil {
			return redisAnswer{}, err
		}
		if count <= w.limit {
			return redisAnswer{allowed: true}, nil
		}
		return redisAnswer{wait: time.Duration((n+1)*int64(w.window) - now)}, nil
	})
}

// Key returns a breakerimpl.Guard that counts its calls in key's windows.
func (w *FixedWindow) Key(key string) *Guard { return &Guard{lim: w, key: key} }

// Snapshot returns the limiter's state and counters now. Limit is the
// calls per window.
func (w *FixedWindow) Snapshot() Snapshot { return w.core.snapshot("fixed-window", float64(w.limit)) }

// Close stops the health check and waits for its goroutine to end. The
// limiter stays usable: in memory if it was, and in memory for good if
// Redis fails after Close. It does not close the client. Close is
// idempotent and always returns nil.
func (w *FixedWindow) Close() error {
	w.core.close()
	return nil
}
