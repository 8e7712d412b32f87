package redislimit_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
	"golang.org/x/time/rate"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/httpx"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit/redislimit"
	"github.com/chaoskit/chaoskit/internal/testserver"
)

// quiet drops go-redis's own log lines (failed dials to a killed Redis).
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quiet{}) }

// newClient returns a client of addr, closed when the test ends.
func newClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(redislimit.Options(addr))
	t.Cleanup(func() { c.Close() })
	return c
}

// limiter is either kind, as the tests drive it.
type limiter interface {
	Allow(ctx context.Context, key string) (redislimit.Decision, error)
	Snapshot() redislimit.Snapshot
	Close() error
}

// kinds builds each limiter with a limit of 3 calls before a refusal, and
// says how far the clock must move for one more call.
var kinds = []struct {
	name  string
	build func(c redislimit.Client, s redislimit.Settings) limiter
	// next is how far to move the clock for the key to admit refill calls.
	next   time.Duration
	refill int
}{
	{"token-bucket", func(c redislimit.Client, s redislimit.Settings) limiter {
		// One token every 10 s: nothing refills while the test runs.
		return redislimit.NewTokenBucket(c, redislimit.TokenSettings{Rate: 0.1, Burst: 3, Settings: s})
	}, 10 * time.Second, 1},
	{"fixed-window", func(c redislimit.Client, s redislimit.Settings) limiter {
		return redislimit.NewFixedWindow(c, redislimit.WindowSettings{Limit: 3, Window: time.Minute, Settings: s})
	}, time.Minute, 3},
}

// take makes n calls for key and returns how many were allowed, failing
// the test if any was decided elsewhere than on want.
func take(t *testing.T, l limiter, key string, n int, want redislimit.Backend) int {
	t.Helper()
	allowed := 0
	for range n {
		d, err := l.Allow(context.Background(), key)
		if err != nil {
			t.Fatalf("Allow(%q): %v", key, err)
		}
		if d.Backend != want {
			t.Fatalf("Allow(%q) decided in %v, want %v", key, d.Backend, want)
		}
		if d.Allowed {
			allowed++
		} else if d.RetryAfter <= 0 {
			t.Fatalf("a refusal with RetryAfter %v", d.RetryAfter)
		}
	}
	return allowed
}

// keysIn returns the limiter's keys in Redis.
func keysIn(t *testing.T, c *redis.Client, prefix string) []string {
	t.Helper()
	keys, err := c.Keys(context.Background(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestLimitsAreSharedInRedis(t *testing.T) {
	r := testserver.StartRedis(t)
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			clk := clock.NewFake(time.Time{})
			s := redislimit.Settings{Name: k.name, Clock: clk}
			// Two instances of a service, each with its own client: one limit.
			a, b := k.build(newClient(t, r.Addr()), s), k.build(newClient(t, r.Addr()), s)
			defer a.Close()
			defer b.Close()
			if got := take(t, a, "alice", 2, redislimit.InRedis) + take(t, b, "alice", 2, redislimit.InRedis); got != 3 {
				t.Fatalf("two instances admitted %d calls of alice, want the shared limit 3", got)
			}
			if got := take(t, b, "bob", 4, redislimit.InRedis); got != 3 {
				t.Fatalf("bob: %d admitted, want 3 (keys are independent)", got)
			}
			clk.Advance(k.next)
			if got := take(t, a, "alice", 4, redislimit.InRedis); got != k.refill {
				t.Fatalf("after %v: %d admitted, want %d", k.next, got, k.refill)
			}
			if keys := keysIn(t, newClient(t, r.Addr()), "ratelimit:"+k.name+":alice"); len(keys) == 0 {
				t.Fatal("no key of alice in Redis")
			}
			snap := a.Snapshot()
			if snap.Backend != redislimit.InRedis || snap.Allowed+snap.Rejected != 6 || snap.AllowedInMemory+snap.RejectedInMemory != 0 || snap.Fallbacks != 0 {
				t.Fatalf("snapshot %+v", snap)
			}
		})
	}
}

func TestTokenBucketRefillAndRetryAfter(t *testing.T) {
	r := testserver.StartRedis(t)
	clk := clock.NewFake(time.Time{})
	// 4 tokens a second: one every 250 ms.
	tb := redislimit.NewTokenBucket(newClient(t, r.Addr()), redislimit.TokenSettings{Rate: 4, Burst: 2, Settings: redislimit.Settings{Clock: clk}})
	defer tb.Close()
	ctx := context.Background()
	steps := []struct {
		advance time.Duration
		allowed bool
		wait    time.Duration // RetryAfter of a refusal
	}{
		{0, true, 0}, {0, true, 0}, {0, false, 250 * time.Millisecond},
		{100 * time.Millisecond, false, 150 * time.Millisecond},
		{150 * time.Millisecond, true, 0}, {0, false, 250 * time.Millisecond},
		// A long rest fills the bucket to its burst, not beyond.
		{time.Hour, true, 0}, {0, true, 0}, {0, false, 250 * time.Millisecond},
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		d, err := tb.Allow(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != st.allowed || d.RetryAfter != st.wait {
			t.Fatalf("step %d: %+v, want allowed %v, retry after %v", i, d, st.allowed, st.wait)
		}
	}
}

func TestFixedWindowRetryAfterIsTheWindowsEnd(t *testing.T) {
	r := testserver.StartRedis(t)
	clk := clock.NewFake(time.Time{}) // on the minute
	w := redislimit.NewFixedWindow(newClient(t, r.Addr()), redislimit.WindowSettings{Limit: 1, Window: time.Minute, Settings: redislimit.Settings{Clock: clk}})
	defer w.Close()
	clk.Advance(20 * time.Second)
	ctx := context.Background()
	if d, _ := w.Allow(ctx, "k"); !d.Allowed {
		t.Fatal("first call refused")
	}
	if d, _ := w.Allow(ctx, "k"); d.Allowed || d.RetryAfter != 40*time.Second {
		t.Fatalf("second call: %+v, want a refusal until the minute ends, in 40s", d)
	}
	clk.Advance(40 * time.Second)
	if d, _ := w.Allow(ctx, "k"); !d.Allowed {
		t.Fatal("refused in a new window")
	}
}

// events collects a limiter's events.
type events chan redislimit.Event

func (e events) listen(ev redislimit.Event) { e <- ev }

func (e events) next(t *testing.T, want redislimit.EventKind) redislimit.Event {
	t.Helper()
	select {
	case ev := <-e:
		if ev.Kind != want {
			t.Fatalf("event %+v, want %s", ev, want)
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s event in 10 s", want)
	}
	return redislimit.Event{}
}

// waitForTimer waits (bounded) until something has armed a timer on clk:
// the health check, before the test moves time for it.
func waitForTimer(t *testing.T, clk *clock.Fake) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for clk.Timers() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the health check armed no timer in 10 s")
		}
		runtime.Gosched()
	}
}

func TestRedisKilledFallsBackToMemoryAndReturns(t *testing.T) {
	before := goleak.IgnoreCurrent()
	r := testserver.StartRedis(t)
	defer func() {
		r.Stop() // its output readers are not the limiter's
		goleak.VerifyNone(t, before)
	}()
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			clk := clock.NewFake(time.Time{})
			ev := make(events, 10)
			client := redis.NewClient(redislimit.Options(r.Addr()))
			defer client.Close()
			interval := time.Second
			l := k.build(client, redislimit.Settings{Name: k.name, Clock: clk, HealthInterval: interval, OnEvent: ev.listen})
			defer l.Close()

			if got := take(t, l, "alice", 1, redislimit.InRedis); got != 1 {
				t.Fatal("first call refused")
			}
			r.Kill()
			// The first call after the kill finds Redis gone and is decided
			// in memory, as are the rest: the limit still holds, per key.
			d, err := l.Allow(context.Background(), "alice")
			if err != nil || !d.Allowed || d.Backend != redislimit.InMemory {
				t.Fatalf("first call with Redis killed: %+v, %v; want allowed in memory", d, err)
			}
			if e := ev.next(t, redislimit.FellBack); e.Err == nil || e.Name != k.name || !e.At.Equal(clk.Now()) {
				t.Fatalf("fallback event %+v", e)
			}
			if got := take(t, l, "alice", 3, redislimit.InMemory); got != 2 {
				t.Fatalf("alice in memory: %d more admitted, want 2 (3 in all)", got)
			}
			if got := take(t, l, "bob", 4, redislimit.InMemory); got != 3 {
				t.Fatalf("bob in memory: %d admitted, want 3", got)
			}
			snap := l.Snapshot()
			if snap.Backend != redislimit.InMemory || snap.Fallbacks != 1 || snap.AllowedInMemory != 6 || snap.RejectedInMemory != 2 || snap.MemoryKeys != 2 || snap.LastError == "" {
				t.Fatalf("snapshot in memory: %+v", snap)
			}

			// Health checks while Redis is down fail and keep it in memory.
			waitForTimer(t, clk)
			clk.Advance(interval)
			waitForTimer(t, clk)
			if l.Snapshot().Backend != redislimit.InMemory {
				t.Fatal("back to Redis while it is down")
			}

			r.Start()
			clk.Advance(interval)
			if e := ev.next(t, redislimit.Recovered); e.InMemoryFor != 2*interval {
				t.Fatalf("recovered event %+v, want %v in memory", e, 2*interval)
			}
			// Back in Redis, with Redis's counts (empty after the restart,
			// which kept nothing) and the memory forgotten.
			if got := take(t, l, "carol", 4, redislimit.InRedis); got != 3 {
				t.Fatalf("carol in Redis: %d admitted, want 3", got)
			}
			if len(keysIn(t, client, "ratelimit:"+k.name+":carol")) == 0 {
				t.Fatal("carol's count is not in Redis")
			}
			snap = l.Snapshot()
			if snap.Backend != redislimit.InRedis || snap.Recoveries != 1 || snap.MemoryKeys != 0 || snap.RedisErrors < 2 {
				t.Fatalf("snapshot after recovery: %+v", snap)
			}
		})
	}
}

func TestSlowRedisFallsBack(t *testing.T) {
	r := testserver.StartRedis(t)
	admin := newClient(t, r.Addr())
	ev := make(events, 10)
	tb := redislimit.NewTokenBucket(newClient(t, r.Addr()), redislimit.TokenSettings{Rate: 1, Burst: 1,
		Settings: redislimit.Settings{Timeout: 20 * time.Millisecond, HealthInterval: 10 * time.Millisecond, OnEvent: ev.listen, Clock: clock.Real()}})
	defer tb.Close()
	ctx := context.Background()
	if _, err := tb.Allow(ctx, "warm"); err != nil { // connect before the pause
		t.Fatal(err)
	}
	// Redis answers no client for 300 ms: slow, not down.
	if err := admin.Do(ctx, "CLIENT", "PAUSE", "300", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, err := tb.Allow(ctx, "k")
	if took := time.Since(start); took > 200*time.Millisecond {
		t.Fatalf("a call to a paused Redis took %v, want about the 20ms timeout", took)
	}
	if err != nil || d.Backend != redislimit.InMemory || !d.Allowed {
		t.Fatalf("call to a slow Redis: %+v, %v; want allowed in memory", d, err)
	}
	var timeout net.Error
	if e := ev.next(t, redislimit.FellBack); !errors.Is(e.Err, context.DeadlineExceeded) && !(errors.As(e.Err, &timeout) && timeout.Timeout()) {
		t.Fatalf("fallback for %v, want a timeout", e.Err)
	}
	ev.next(t, redislimit.Recovered) // once the pause ends
}

func TestCallerGivingUpIsNotARedisFailure(t *testing.T) {
	r := testserver.StartRedis(t)
	tb := redislimit.NewTokenBucket(newClient(t, r.Addr()), redislimit.TokenSettings{Rate: 1})
	defer tb.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tb.Allow(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Allow with a cancelled context = %v, want context.Canceled", err)
	}
	if s := tb.Snapshot(); s.Backend != redislimit.InRedis || s.Fallbacks != 0 {
		t.Fatalf("a caller's cancel moved the limiter: %+v", s)
	}
}

func TestMemoryKeysAreBounded(t *testing.T) {
	// Nothing listens there: every limiter is in memory from its first call.
	client := newClient(t, "127.0.0.1:1")
	tb := redislimit.NewTokenBucket(client, redislimit.TokenSettings{Rate: 1, Burst: 1, Settings: redislimit.Settings{MaxKeys: 2, Clock: clock.NewFake(time.Time{})}})
	defer tb.Close()
	for _, k := range []string{"a", "b", "c", "d"} {
		tb.Allow(context.Background(), k)
	}
	if s := tb.Snapshot(); s.MemoryKeys != 2 || s.Backend != redislimit.InMemory {
		t.Fatalf("%+v, want 2 keys in memory", s)
	}
}

func TestLimitsThatNeedNoRedis(t *testing.T) {
	client := newClient(t, "127.0.0.1:1") // never asked
	tests := []struct {
		name    string
		l       limiter
		allowed bool
	}{
		{"unlimited rate", redislimit.NewTokenBucket(client, redislimit.TokenSettings{Rate: rate.Inf}), true},
		{"zero rate", redislimit.NewTokenBucket(client, redislimit.TokenSettings{}), false},
		{"zero limit", redislimit.NewFixedWindow(client, redislimit.WindowSettings{}), false},
	}
	for _, tt := range tests {
		d, err := tt.l.Allow(context.Background(), "k")
		if err != nil || d.Allowed != tt.allowed || (!d.Allowed && d.RetryAfter <= 0) {
			t.Errorf("%s: %+v, %v", tt.name, d, err)
		}
		if s := tt.l.Snapshot(); s.Fallbacks != 0 {
			t.Errorf("%s asked Redis: %+v", tt.name, s)
		}
		tt.l.Close()
	}
}

func TestGuardAnswers429WithRetryAfter(t *testing.T) {
	r := testserver.StartRedis(t)
	clk := clock.NewFake(time.Time{})
	w := redislimit.NewFixedWindow(newClient(t, r.Addr()), redislimit.WindowSettings{Limit: 1, Window: time.Minute, Settings: redislimit.Settings{Clock: clk}})
	defer w.Close()
	g := w.Key("search")
	var _ breakerimpl.Guard = g
	h := httpx.RateLimit(g)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	codes := []int{}
	for range 2 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		codes = append(codes, rec.Code)
		if rec.Code == http.StatusTooManyRequests && rec.Header().Get("Retry-After") != "60" {
			t.Errorf("Retry-After %q, want 60 (the window's end)", rec.Header().Get("Retry-After"))
		}
	}
	if codes[0] != 200 || codes[1] != 429 {
		t.Fatalf("codes %v, want [200 429]", codes)
	}
	if _, err := g.Allow(context.Background()); !errors.Is(err, ratelimit.ErrLimited) || !errors.Is(err, breakerimpl.ErrRejected) {
		t.Fatalf("refusal %v, want ratelimit.ErrLimited", err)
	}
}

func TestCloseStopsTheHealthCheck(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	client := redis.NewClient(redislimit.Options("127.0.0.1:1"))
	defer client.Close()
	clk := clock.NewFake(time.Time{})
	tb := redislimit.NewTokenBucket(client, redislimit.TokenSettings{Rate: 1, Settings: redislimit.Settings{Clock: clk}})
	tb.Allow(context.Background(), "k") // falls back, starts the check
	waitForTimer(t, clk)
	tb.Close()
	tb.Close()
	if clk.Timers() != 0 {
		t.Fatal("the health check's timer outlived Close")
	}
	// After Close a limiter still answers, from memory.
	if d, _ := tb.Allow(context.Background(), "k"); d.Backend != redislimit.InMemory {
		t.Fatalf("%+v after Close", d)
	}
}

func TestLogEvents(t *testing.T) {
	var b strings.Builder
	log := redislimit.LogEvents(slogTo(&b))
	log(redislimit.Event{Name: "search", Kind: redislimit.FellBack, Err: errors.New("connection refused")})
	log(redislimit.Event{Name: "search", Kind: redislimit.Recovered, InMemoryFor: 2 * time.Second})
	want := []string{
		`level=WARN msg="rate limiter backend change" limiter=search kind=fallback backend=memory error="connection refused"`,
		`level=INFO msg="rate limiter backend change" limiter=search kind=recovered backend=redis in_memory_for=2s`,
	}
	if got := strings.Split(strings.TrimSpace(b.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("logged\n%s\nwant\n%s", b.String(), strings.Join(want, "\n"))
	}
}

// slogTo logs text without times to w.
func slogTo(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}
