// Command catalog is a fixture of chaoskit init: a service on chi with
// go-redis. Redis caches the product catalog in front of its source (built
// in here, and slow on purpose); the service takes its address from
// REDIS_ADDR and its port from PORT. When Redis fails or is slow (each
// call waits at most 100ms), reads are served from the source
// (X-Source: origin), unless built with -tags nofallback, the broken
// variant init's test runs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"
)

type product struct {
	SKU   string `json:"sku"`
	Name  string `json:"name"`
	Price int    `json:"price"`
}

// source is the catalog's source of truth; reading it costs a few
// milliseconds, which is what Redis saves.
func source(sku string) (product, bool) {
	time.Sleep(3 * time.Millisecond)
	var n int
	if _, err := fmt.Sscanf(sku, "sku-%d", &n); err != nil || n < 1 || n > 30 {
		return product{}, false
	}
	return product{SKU: sku, Name: fmt.Sprintf("product %d", n), Price: 250 * n}, true
}

type server struct{ rdb *redis.Client }

func main() {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond,
		WriteTimeout: 100 * time.Millisecond, MaxRetries: -1, ContextTimeoutEnabled: true})
	s := &server{rdb: rdb}
	r := chi.NewRouter()
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	r.Route("/products", func(r chi.Router) {
		r.Get("/", s.list)
		r.Get("/{sku}", s.get)
		r.Post("/{sku}/views", s.view)
	})
	port := os.Getenv("PORT")
	log.Printf("listening on :%s", port)
	log.Fatal(http.ListenAndServe(":"+port, r))
}

// lookup reads a product through Redis: a miss fills it from the source.
func (s *server) lookup(ctx context.Context, sku string) (product, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	b, err := s.rdb.Get(ctx, "product:"+sku).Bytes()
	if err == nil {
		var p product
		return p, true, json.Unmarshal(b, &p)
	}
	if !errors.Is(err, redis.Nil) {
		return product{}, false, err
	}
	p, ok := source(sku)
	if ok {
		b, _ := json.Marshal(p)
		if err := s.rdb.Set(ctx, "product:"+sku, b, time.Minute).Err(); err != nil {
			return product{}, false, err
		}
	}
	return p, ok, nil
}

func (s *server) get(w http.ResponseWriter, r *http.Request) {
	sku := chi.URLParam(r, "sku")
	p, ok, err := s.lookup(r.Context(), sku)
	if err != nil {
		if !fallback {
			http.Error(w, "cache unavailable", http.StatusServiceUnavailable)
			return
		}
		p, ok = source(sku)
		w.Header().Set("X-Source", "origin")
	}
	if !ok {
		http.Error(w, "no such product", http.StatusNotFound)
		return
	}
	writeJSON(w, p)
}

func (s *server) list(w http.ResponseWriter, r *http.Request) {
	ps := []product{}
	for n := 1; n <= 5; n++ {
		sku := fmt.Sprintf("sku-%d", n)
		p, _, err := s.lookup(r.Context(), sku)
		if err != nil {
			if !fallback {
				http.Error(w, "cache unavailable", http.StatusServiceUnavailable)
				return
			}
			p, _ = source(sku)
			w.Header().Set("X-Source", "origin")
		}
		ps = append(ps, p)
	}
	writeJSON(w, ps)
}

// view counts a product view in Redis; a write, which has no fallback.
func (s *server) view(w http.ResponseWriter, r *http.Request) {
	if err := s.rdb.Incr(r.Context(), "views:"+chi.URLParam(r, "sku")).Err(); err != nil {
		http.Error(w, "cache unavailable", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
