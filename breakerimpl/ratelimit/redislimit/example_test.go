package redislimit_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/httpx"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit/redislimit"
)

// A limit per user shared by every instance of a service: 10 calls a
// second with bursts of 20, per user, in Redis.
func ExampleNewTokenBucket() {
	client := redis.NewClient(redislimit.Options("127.0.0.1:6379"))
	defer client.Close()
	perUser := redislimit.NewTokenBucket(client, redislimit.TokenSettings{
		Rate: 10, Burst: 20,
		Settings: redislimit.Settings{Name: "api", OnEvent: redislimit.LogEvents(slog.Default())},
	})
	defer perUser.Close()

	http.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		d, err := perUser.Allow(r.Context(), r.Header.Get("X-User"))
		if err != nil {
			return // the client went away
		}
		if !d.Allowed {
			w.Header().Set("Retry-After", fmt.Sprint(int(d.RetryAfter.Seconds())+1))
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		fmt.Fprintln(w, "ok")
	})
}

// One key as middleware: every search shares one limit of 100 a minute.
func ExampleFixedWindow_Key() {
	client := redis.NewClient(redislimit.Options("127.0.0.1:6379"))
	defer client.Close()
	searches := redislimit.NewFixedWindow(client, redislimit.WindowSettings{Limit: 100, Window: time.Minute})
	defer searches.Close()
	var search http.Handler // the route
	http.Handle("/search", httpx.RateLimit(searches.Key("all"))(search))
}

// With Redis away, the limit still holds, in memory, and the move is an
// event. (Nothing listens on port 1.)
func ExampleNewFixedWindow_fallback() {
	client := redis.NewClient(redislimit.Options("127.0.0.1:1"))
	defer client.Close()
	w := redislimit.NewFixedWindow(client, redislimit.WindowSettings{
		Limit: 2, Window: time.Minute,
		Settings: redislimit.Settings{
			Name:    "search",
			Clock:   clock.NewFake(time.Time{}),
			OnEvent: func(e redislimit.Event) { fmt.Println("event:", e.Name, e.Kind) },
		},
	})
	defer w.Close()
	for range 3 {
		d, _ := w.Allow(context.Background(), "all")
		fmt.Println(d.Allowed, d.Backend)
	}
	fmt.Println("fallbacks:", w.Snapshot().Fallbacks)
	// Output:
	// event: search fallback
	// true memory
	// true memory
	// false memory
	// fallbacks: 1
}
