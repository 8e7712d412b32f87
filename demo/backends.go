package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	xrate "golang.org/x/time/rate"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit/redislimit"
	"github.com/chaoskit/chaoskit/demo/store"
)

// HeaderLimiter says, on each search when the search limiter is in Redis
// (Config.Redis), where the limiter keeps its counts: redis, or memory
// while Redis is away.
const HeaderLimiter = "X-Chaoskit-Limiter"

// ErrInvalidConfig marks an error of New that is the configuration's
// fault (a flag's value), not the machine's: the CLI exits 2 for it.
var ErrInvalidConfig = errors.New("invalid demo configuration")

// invalid wraps a configuration error in ErrInvalidConfig.
func invalid(format string, args ...any) error {
	return &configError{fmt.Sprintf(format, args...)}
}

type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }
func (e *configError) Unwrap() error { return ErrInvalidConfig }

// openStore opens the database cfg names: PostgreSQL when cfg.Postgres is
// set, SQLite otherwise.
func openStore(ctx context.Context, cfg Config) (*store.Store, error) {
	if cfg.Postgres == "" {
		return store.Open(ctx, cfg.DB, cfg.Products)
	}
	if cfg.DB != "" {
		return nil, invalid("--db and --postgres both name a database; give one")
	}
	cfg.Postgres = FillPasswords(cfg.Postgres)
	pc, err := pgx.ParseConfig(cfg.Postgres)
	if err != nil {
		return nil, invalid("--postgres: %v (want a DSN such as postgres://postgres@127.0.0.1:5432/shop?sslmode=disable)", err)
	}
	if err := loopbackHost("--postgres", pc.Host); err != nil {
		return nil, err
	}
	return store.OpenPostgres(ctx, cfg.Postgres, cfg.Products)
}

// loopbackHost refuses a host off this machine: the demo, like the
// traffic chaoskit makes, stays on loopback.
func loopbackHost(flag, host string) error {
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return invalid("%s: host %q is not a loopback address; the demo only talks to 127.0.0.0/8, ::1 or localhost", flag, host)
	}
	return nil
}

// searchLimiter is the search route's rate limiter: in memory, or in
// Redis with its in-memory fallback.
type searchLimiter interface {
	breakerimpl.Guard
	RetryAfter() time.Duration
	Snapshot() ratelimit.Snapshot
}

// defaultSearchRate is Config.SearchRate's default.
const defaultSearchRate = 2000

// newSearchLimiter returns the in-memory token bucket, or, with cfg.Redis,
// one in Redis at the same rate (and the function that closes it).
func newSearchLimiter(cfg Config) (searchLimiter, func(), error) {
	if cfg.SearchRate < 0 {
		return nil, nil, invalid("--search-rate %v: want searches a second above 0", cfg.SearchRate)
	}
	rate := cmp.Or(cfg.SearchRate, defaultSearchRate)
	burst := max(1, int(rate/10))
	if cfg.Redis == "" {
		return ratelimit.NewTokenBucket(ratelimit.TokenSettings{Name: "search", Rate: xrate.Limit(rate), Burst: burst}), func() {}, nil
	}
	host, _, err := net.SplitHostPort(cfg.Redis)
	if err != nil {
		return nil, nil, invalid("--redis %q: %v (want host:port, such as 127.0.0.1:6379)", cfg.Redis, err)
	}
	if err := loopbackHost("--redis", host); err != nil {
		return nil, nil, err
	}
	opts := redislimit.Options(cfg.Redis)
	opts.Password = FillPasswords(cfg.RedisPassword)
	client := redis.NewClient(opts)
	tb := redislimit.NewTokenBucket(client, redislimit.TokenSettings{
		Rate: xrate.Limit(rate), Burst: burst,
		Settings: redislimit.Settings{Name: "search", Prefix: "chaoskit-demo:search:", OnEvent: redislimit.LogEvents(cfg.Log)},
	})
	l := &redisSearchLimiter{Guard: tb.Key("all"), tb: tb, failOpen: cfg.RedisFallbackOpen}
	return l, func() { tb.Close(); client.Close() }, nil
}

// redisSearchLimiter is the Redis token bucket's one key, "all", as the
// search route uses it.
type redisSearchLimiter struct {
	*redislimit.Guard
	tb *redislimit.TokenBucket
	// failOpen is the RedisFallbackOpen variant.
	failOpen bool
}

// Allow is the Guard's, except that the RedisFallbackOpen variant admits
// what the in-memory fallback refuses.
func (l *redisSearchLimiter) Allow(ctx context.Context) (breakerimpl.Permit, error) {
	p, err := l.Guard.Allow(ctx)
	if l.failOpen && errors.Is(err, ratelimit.ErrLimited) && l.backend() == redislimit.InMemory.String() {
		return breakerimpl.Permit{}, nil
	}
	return p, err
}

// Snapshot reports the Redis limiter in the State's terms (Available is
// not known: it is in Redis).
func (l *redisSearchLimiter) Snapshot() ratelimit.Snapshot {
	s := l.tb.Snapshot()
	return ratelimit.Snapshot{Name: s.Name, Kind: "redis-" + s.Kind, Limit: s.Limit, Rejected: s.Rejected}
}

// backend is where the limiter keeps its counts now.
func (l *redisSearchLimiter) backend() string { return l.tb.Snapshot().Backend.String() }
