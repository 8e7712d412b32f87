package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/chaoskit/chaoskit/demo/store"
	"github.com/chaoskit/chaoskit/internal/testserver"
)

// within retries check every 20 ms until it returns true, for at most d.
func within(t *testing.T, d time.Duration, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestShopOnPostgres(t *testing.T) {
	pg := testserver.StartPostgres(t)
	cfg := Config{Postgres: pg.DSN()}
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	if rec := get(t, h, "/products/7"); rec.Code != 200 || rec.Header().Get(HeaderSource) != "db" {
		t.Fatalf("product read on postgres: %d %v", rec.Code, rec.Header())
	}
	created := post(t, h, "/orders", "k1", `{"product_id": 3, "quantity": 2}`)
	if created.Code != 201 {
		t.Fatalf("order on postgres: %d %s", created.Code, created.Body)
	}
	if again := post(t, h, "/orders", "k1", `{"product_id": 3, "quantity": 2}`); again.Code != 200 || again.Body.String() != created.Body.String() {
		t.Fatalf("repeat on postgres: %d %s", again.Code, again.Body)
	}
	rec := get(t, h, "/search?q=ITEM+00")
	var hits []map[string]any
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &hits) != nil || len(hits) != 9 {
		t.Fatalf("search on postgres: %d %s, want items 001-009", rec.Code, rec.Body)
	}

	// Postgres is killed: reads come from the cache, writes are refused
	// fast with Retry-After.
	pg.Kill()
	if rec := get(t, h, "/products/7"); rec.Code != 200 || rec.Header().Get(HeaderSource) != "cache" {
		t.Fatalf("product read with postgres killed: %d %v", rec.Code, rec.Header())
	}
	start := time.Now()
	if rec := post(t, h, "/orders", "k2", `{"product_id": 3, "quantity": 1}`); rec.Code != 503 || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("order with postgres killed: %d %v", rec.Code, rec.Header())
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("refusing an order took %v", took)
	}

	// Back: writes succeed again once the breaker lets them through, and
	// the acknowledged order survived the crash.
	// A try whose commit landed but whose answer came after the 100ms call
	// timeout (a loaded machine) leaves k3 taken: its repeat answers 200
	// with the order, which counts as the write being through.
	pg.Start()
	var last string
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec := post(t, h, "/orders", "k3", `{"product_id": 3, "quantity": 1}`)
		if rec.Code == 201 || rec.Code == 200 {
			break
		}
		last = fmt.Sprintf("%d %s", rec.Code, strings.TrimSpace(rec.Body.String()))
		if time.Now().After(deadline) {
			t.Fatalf("orders after postgres restarted: not within 10s; the last answer was %s", last)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var o store.Order
	_ = json.Unmarshal(created.Body.Bytes(), &o)
	if rec := get(t, h, "/orders/"+o.ID); rec.Code != 200 {
		t.Fatalf("acknowledged order after the crash: %d", rec.Code)
	}

	// Another process on the same database sees the same orders.
	s2, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if st := s2.State(); st.Orders.Committed != 2 {
		t.Fatalf("a second demo on the database counts %d orders, want 2", st.Orders.Committed)
	}
}

func TestSearchLimitInRedis(t *testing.T) {
	r := testserver.StartRedis(t)
	s, err := New(context.Background(), Config{Redis: r.Addr(), SearchRate: 10, SearchCost: time.Microsecond, NoShedder: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	search := func() (int, string) {
		rec := get(t, h, "/search?q=item")
		return rec.Code, rec.Header().Get(HeaderLimiter)
	}
	if code, where := search(); code != 200 || where != "redis" {
		t.Fatalf("search: %d, limiter in %q; want 200 in redis", code, where)
	}
	admin := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer admin.Close()
	if n, err := admin.Exists(context.Background(), "chaoskit-demo:search:all").Result(); err != nil || n != 1 {
		t.Fatalf("the search bucket is not in Redis: %d, %v", n, err)
	}
	// A flood is cut at the burst (1) and the rate (10/s), in Redis: one
	// by one, the searches are limited unless each takes 100ms, which a
	// loaded machine under -race came close to at 50/s...
	flood := func(want string) (limited int) {
		t.Helper()
		for range 100 {
			code, where := search()
			if where != want {
				t.Fatalf("limiter in %q during a flood, want %s", where, want)
			}
			if code == http.StatusTooManyRequests {
				limited++
			}
		}
		return limited
	}
	if flood("redis") == 0 {
		t.Fatal("100 searches at once, none limited in Redis")
	}
	// ...and, with Redis killed, in memory.
	r.Kill()
	search() // finds Redis gone
	if flood("memory") == 0 {
		t.Fatal("100 searches at once, none limited in memory")
	}
	if st := s.State().Limiters["search"]; st.Kind != "redis-token-bucket" || st.Rejected == 0 {
		t.Fatalf("state of the search limiter: %+v", st)
	}
	r.Start()
	within(t, 10*time.Second, "search limit back in Redis", func() bool {
		_, where := search()
		return where == "redis"
	})
}

func TestBackendFlagsMustBeLoopback(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Postgres: "postgres://postgres@10.1.2.3:5432/shop"}, `--postgres: host "10.1.2.3" is not a loopback address`},
		{Config{Postgres: "postgres://postgres@db.example.com/shop"}, `--postgres: host "db.example.com" is not a loopback address`},
		{Config{Postgres: "postgres://127.0.0.1:5432/shop", DB: "shop.db"}, "--db and --postgres both name a database"},
		{Config{Postgres: "port=notanumber"}, "--postgres: "},
		{Config{Redis: "redis.example.com:6379"}, `--redis: host "redis.example.com" is not a loopback address`},
		{Config{Redis: "6379"}, `--redis "6379": address 6379: missing port in address (want host:port`},
		{Config{SearchRate: -1}, "--search-rate -1: want searches a second above 0"},
	}
	for _, tt := range tests {
		_, err := New(context.Background(), tt.cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want an invalid configuration: %q", tt.cfg, err, tt.want)
		}
	}
}

// The broken variant limits in Redis, and admits everything once the limit
// falls back to memory.
func TestRedisFallbackOpenVariant(t *testing.T) {
	r := testserver.StartRedis(t)
	s, err := New(context.Background(), Config{Redis: r.Addr(), SearchRate: 10, SearchCost: time.Microsecond, NoShedder: true, RedisFallbackOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	flood := func() (limited int, where string) {
		for range 100 {
			rec := get(t, h, "/search?q=item")
			where = rec.Header().Get(HeaderLimiter)
			if rec.Code == http.StatusTooManyRequests {
				limited++
			}
		}
		return limited, where
	}
	if n, where := flood(); n == 0 || where != "redis" {
		t.Fatalf("in Redis: %d of 100 searches at once limited, limiter in %q; want some, in redis", n, where)
	}
	r.Kill()
	get(t, h, "/search?q=item") // finds Redis gone
	if n, where := flood(); n != 0 || where != "memory" {
		t.Fatalf("Redis away: %d of 100 searches limited, limiter in %q; the broken variant limits none, in memory", n, where)
	}
}

// With --write-behind, orders taken while Postgres is killed are accepted
// (202) into the queue, survive a restart of the demo itself, and are all
// readable once Postgres is back; the lossy variant loses some.
func TestWriteBehindOnPostgres(t *testing.T) {
	pg := testserver.StartPostgres(t)
	for _, tc := range []struct {
		name  string
		lossy bool
	}{{"correct", false}, {"lossy", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := Config{Postgres: pg.DSN(), WriteBehind: true, WriteBehindDir: dir, WriteBehindLossy: tc.lossy}
			s, err := New(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			h := s.Handler()
			pg.Kill()
			defer func() { // for the next case, whatever happens
				if !pg.Running() {
					pg.Start()
				}
			}()
			var ids []string
			for i := range 20 {
				key := fmt.Sprintf("%s-%d", tc.name, i)
				rec := post(t, h, "/orders", key, fmt.Sprintf(`{"product_id": %d, "quantity": 1}`, i+1))
				var o store.Order
				if rec.Code != 202 || rec.Header().Get(HeaderSource) != SourceQueue || json.Unmarshal(rec.Body.Bytes(), &o) != nil || o.IdempotencyKey != key {
					t.Fatalf("order %d with postgres killed: %d %v %s; want 202 from the queue", i, rec.Code, rec.Header(), rec.Body)
				}
				ids = append(ids, o.ID)
			}
			if again := post(t, h, "/orders", tc.name+"-3", `{"product_id": 4, "quantity": 1}`); !tc.lossy && (again.Code != 202 || !strings.Contains(again.Body.String(), ids[3])) {
				t.Fatalf("a replay of a queued order: %d %s; want the queued order %s", again.Code, again.Body, ids[3])
			}
			if tc.lossy {
				defer s.Close()
				pg.Start()
			} else {
				// The demo itself stops while the orders wait, and a new
				// process writes them from the queue file.
				s.Close()
				pg.Start()
				if s, err = New(context.Background(), cfg); err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				h = s.Handler()
			}
			within(t, 15*time.Second, "queue drained", func() bool { return s.State().WriteBehind.Pending == 0 })
			readable := 0
			for _, id := range ids {
				if get(t, h, "/orders/"+id).Code == 200 {
					readable++
				}
			}
			if tc.lossy {
				if readable == len(ids) {
					t.Fatalf("the lossy variant kept every order")
				}
				return
			}
			if readable != len(ids) {
				t.Fatalf("%d of %d accepted orders readable after recovery", readable, len(ids))
			}
			if st := s.State(); st.WriteBehind.Replayed != 20 || st.WriteBehind.Accepted != 0 || st.Orders.Committed < 20 {
				t.Fatalf("state %+v %+v", st.WriteBehind, st.Orders)
			}
		})
	}
}
