package promredislimit_test

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/chaoskit/chaoskit/breakerimpl/promredislimit"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit/redislimit"
)

func ExampleNewCollector() {
	client := redis.NewClient(redislimit.Options("127.0.0.1:6379"))
	defer client.Close()
	search := redislimit.NewTokenBucket(client, redislimit.TokenSettings{Rate: 100, Burst: 10, Settings: redislimit.Settings{Name: "search"}})
	defer search.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(promredislimit.NewCollector("shop", search))
}
