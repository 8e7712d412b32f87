package promredislimit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/promredislimit"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit/redislimit"
	"github.com/chaoskit/chaoskit/internal/testserver"
)

func TestCollector(t *testing.T) {
	r := testserver.StartRedis(t)
	up := redis.NewClient(redislimit.Options(r.Addr()))
	defer up.Close()
	down := redis.NewClient(redislimit.Options("127.0.0.1:1")) // nothing listens
	defer down.Close()
	clk := clock.NewFake(time.Time{})
	search := redislimit.NewTokenBucket(up, redislimit.TokenSettings{Rate: 1, Burst: 2, Settings: redislimit.Settings{Name: "search", Clock: clk}})
	defer search.Close()
	login := redislimit.NewFixedWindow(down, redislimit.WindowSettings{Limit: 1, Window: time.Minute, Settings: redislimit.Settings{Name: "login", Clock: clk}})
	defer login.Close()
	ctx := context.Background()
	for range 3 {
		search.Allow(ctx, "k") // 2 allowed, 1 rejected, in Redis
		login.Allow(ctx, "k")  // in memory: 1 allowed, 2 rejected
	}

	reg := prometheus.NewPedanticRegistry()
	c := promredislimit.NewCollector("shop", search)
	c.Add(login)
	reg.MustRegister(c)
	want := `
# HELP shop_redis_limiter_backend Where the limiter keeps its counts: 1 for the current backend.
# TYPE shop_redis_limiter_backend gauge
shop_redis_limiter_backend{backend="memory",limiter="login"} 1
shop_redis_limiter_backend{backend="memory",limiter="search"} 0
shop_redis_limiter_backend{backend="redis",limiter="login"} 0
shop_redis_limiter_backend{backend="redis",limiter="search"} 1
# HELP shop_redis_limiter_decisions_total Calls allowed and rejected, by the backend that decided.
# TYPE shop_redis_limiter_decisions_total counter
shop_redis_limiter_decisions_total{backend="memory",decision="allowed",limiter="login"} 1
shop_redis_limiter_decisions_total{backend="memory",decision="allowed",limiter="search"} 0
shop_redis_limiter_decisions_total{backend="memory",decision="rejected",limiter="login"} 2
shop_redis_limiter_decisions_total{backend="memory",decision="rejected",limiter="search"} 0
shop_redis_limiter_decisions_total{backend="redis",decision="allowed",limiter="login"} 0
shop_redis_limiter_decisions_total{backend="redis",decision="allowed",limiter="search"} 2
shop_redis_limiter_decisions_total{backend="redis",decision="rejected",limiter="login"} 0
shop_redis_limiter_decisions_total{backend="redis",decision="rejected",limiter="search"} 1
# HELP shop_redis_limiter_fallbacks_total Moves from Redis to the in-memory fallback.
# TYPE shop_redis_limiter_fallbacks_total counter
shop_redis_limiter_fallbacks_total{limiter="login"} 1
shop_redis_limiter_fallbacks_total{limiter="search"} 0
# HELP shop_redis_limiter_limit The configured limit: tokens a second, or calls a window.
# TYPE shop_redis_limiter_limit gauge
shop_redis_limiter_limit{kind="fixed-window",limiter="login"} 1
shop_redis_limiter_limit{kind="token-bucket",limiter="search"} 1
# HELP shop_redis_limiter_memory_keys Keys the in-memory fallback tracks.
# TYPE shop_redis_limiter_memory_keys gauge
shop_redis_limiter_memory_keys{limiter="login"} 1
shop_redis_limiter_memory_keys{limiter="search"} 0
# HELP shop_redis_limiter_recoveries_total Returns from the in-memory fallback to Redis.
# TYPE shop_redis_limiter_recoveries_total counter
shop_redis_limiter_recoveries_total{limiter="login"} 0
shop_redis_limiter_recoveries_total{limiter="search"} 0
# HELP shop_redis_limiter_redis_errors_total Redis calls and health checks that failed or timed out.
# TYPE shop_redis_limiter_redis_errors_total counter
shop_redis_limiter_redis_errors_total{limiter="login"} 1
shop_redis_limiter_redis_errors_total{limiter="search"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
