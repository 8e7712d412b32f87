// Module breakerimpl is chaoskit's library of resilience policies (circuit
// breakers, bulkheads, rate limiters, retries, timeouts, fallbacks) that a
// service imports. It is a module of its own, with the lowest go line its
// code needs, so that a service's go.mod gains these packages' few
// dependencies and nothing of chaoskit's CLI. The adapters that bring heavy
// dependencies (grpcx, otelx, prombreaker, prompolicy, promredislimit,
// circuitbreaker/redisbreaker, ratelimit/redislimit) are modules of their
// own beside it.
module github.com/chaoskit/chaoskit/breakerimpl

go 1.24

require (
	github.com/fsnotify/fsnotify v1.10.1
	github.com/goccy/go-yaml v1.19.2
	github.com/hashicorp/golang-lru/v2 v2.0.7
	go.uber.org/goleak v1.3.0
	golang.org/x/time v0.10.0
)

require golang.org/x/sys v0.13.0 // indirect
