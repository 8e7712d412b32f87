// Command routers is a fixture of chaoskit init's scanner: the same kind
// of routes on each router it reads, with prefixes and path parameters,
// and the dependency clients it recognises. It is read, never run.
package main

import (
	"flag"
	"net/http"
	"os"

	"example.com/routers/api"
)

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func main() {
	port := flag.Int("port", 8080, "unused: the listener takes $ADDR")
	_ = port
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("GET /files/{path...}", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("DELETE example.com/items/{id}", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("/legacy/{$}", func(http.ResponseWriter, *http.Request) {})
	mux.Handle("GET /chi/", chiRoutes())
	mux.Handle("GET /gin/", ginRoutes())
	mux.Handle("GET /echo/", echoRoutes())
	mux.Handle("GET /mux/", gorillaRoutes())
	mux.HandleFunc(os.Getenv("PREFIX")+"/dynamic", func(http.ResponseWriter, *http.Request) {})
	d := api.NewDeps(api.Config{PostgresURL: os.Getenv("PG_URL"), RedisURL: *redisURL, Orders: *ordersAddr, Pricing: envOr("PRICING_URL", "http://127.0.0.1:9000")})
	_ = d
	srv := &http.Server{Addr: envOr("ADDR", "127.0.0.1:8080"), Handler: mux}
	_ = srv.ListenAndServe()
}

var (
	redisURL   = flag.String("redis-url", "redis://127.0.0.1:6379/0", "Redis URL")
	ordersAddr = flag.String("orders", "127.0.0.1:9090", "orders gRPC service")
)
