package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chaoskit/chaoskit/demo/search"
	"github.com/chaoskit/chaoskit/demo/store"
	"github.com/chaoskit/chaoskit/internal/testserver"
)

// backend opens fresh databases of one kind; open may be called again on
// the same database (reopen) to see what survived.
type backend struct {
	name string
	// fresh returns an opener of a new, empty database.
	fresh func(t *testing.T) (open func() (*store.Store, error))
}

// backends returns SQLite and PostgreSQL (one server for the whole test,
// a database per case).
func backends(t *testing.T) []backend {
	sqlite := backend{"sqlite", func(t *testing.T) func() (*store.Store, error) {
		path := filepath.Join(t.TempDir(), "shop.db")
		return func() (*store.Store, error) { return store.Open(context.Background(), path, 50) }
	}}
	var once sync.Once
	var pg *testserver.Postgres
	var n atomic.Int64
	postgres := backend{"postgres", func(ct *testing.T) func() (*store.Store, error) {
		once.Do(func() { pg = testserver.StartPostgres(t) })
		ctx := context.Background()
		admin, err := pgx.Connect(ctx, pg.DSN())
		if err != nil {
			ct.Fatal(err)
		}
		defer admin.Close(ctx)
		db := fmt.Sprintf("case%d", n.Add(1))
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
			ct.Fatal(err)
		}
		dsn := fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", pg.Addr(), db)
		return func() (*store.Store, error) { return store.OpenPostgres(ctx, dsn, 50) }
	}}
	return []backend{sqlite, postgres}
}

func mustOpen(t *testing.T, open func() (*store.Store, error)) *store.Store {
	t.Helper()
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestStore runs every case on both backends: same data, same answers,
// same errors.
func TestStore(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, open func() (*store.Store, error))
	}{
		{"products", testProducts},
		{"orders", testOrders},
		{"concurrent repeats of one key", testConcurrentRepeats},
		{"reopen keeps orders and seeds once", testReopen},
		{"search ignores case", testSearch},
	}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, b.fresh(t)) })
			}
		})
	}
}

func testProducts(t *testing.T, open func() (*store.Store, error)) {
	s := mustOpen(t, open)
	ctx := context.Background()
	p, err := s.Product(ctx, 7)
	want := store.Product{ID: 7, Name: "garden item 007", Category: "garden", PriceCents: 199 + 7*7919%9800, Stock: 7 * 31 % 120}
	if err != nil || p != want {
		t.Fatalf("Product(7) = %+v, %v; want %+v", p, err, want)
	}
	if _, err := s.Product(ctx, 51); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Product(51) of 50: %v, want ErrNotFound", err)
	}
	if c := s.Calls(); c.ProductQueries != 2 {
		t.Fatalf("calls %+v, want 2 product queries", c)
	}
}

func testOrders(t *testing.T, open func() (*store.Store, error)) {
	s := mustOpen(t, open)
	ctx := context.Background()
	at := time.Date(2026, 5, 1, 12, 0, 0, 123456789, time.UTC)
	o := store.Order{ID: "o-1", IdempotencyKey: "k-1", ProductID: 3, Quantity: 2, CreatedAt: at}
	steps := []struct {
		name    string
		in      store.Order
		created bool
		id      string
		err     error
	}{
		{"new", o, true, "o-1", nil},
		{"repeat of the key", store.Order{ID: "o-2", IdempotencyKey: "k-1", ProductID: 3, Quantity: 2, CreatedAt: at}, false, "o-1", nil},
		{"key reused for another order", store.Order{ID: "o-3", IdempotencyKey: "k-1", ProductID: 3, Quantity: 5, CreatedAt: at}, false, "o-1", store.ErrConflict},
		{"unknown product", store.Order{ID: "o-4", IdempotencyKey: "k-4", ProductID: 99, Quantity: 1, CreatedAt: at}, false, "", store.ErrNotFound},
	}
	for _, st := range steps {
		got, created, err := s.CreateOrder(ctx, st.in)
		if created != st.created || got.ID != st.id || !errors.Is(err, st.err) {
			t.Fatalf("%s: %+v created=%v err=%v; want id %q created=%v err=%v", st.name, got, created, err, st.id, st.created, st.err)
		}
	}
	got, err := s.Order(ctx, "o-1")
	if err != nil || got != o {
		t.Fatalf("Order(o-1) = %+v, %v; want %+v", got, err, o)
	}
	if _, err := s.Order(ctx, "o-2"); !errors.Is(err, store.ErrOrderNotFound) {
		t.Fatalf("Order(o-2), a repeat never stored: %v", err)
	}
	if n, err := s.CountOrders(ctx); err != nil || n != 1 {
		t.Fatalf("CountOrders = %d, %v; want 1", n, err)
	}
}

func testConcurrentRepeats(t *testing.T, open func() (*store.Store, error)) {
	s := mustOpen(t, open)
	const writers = 8
	var wg sync.WaitGroup
	var created atomic.Int64
	ids := make([]string, writers)
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			o := store.Order{ID: fmt.Sprintf("o-%d", i), IdempotencyKey: "same", ProductID: 1, Quantity: 1, CreatedAt: time.Now()}
			got, c, err := s.CreateOrder(context.Background(), o)
			if c {
				created.Add(1)
			}
			ids[i], errs[i] = got.ID, err
		})
	}
	wg.Wait()
	for i := range writers {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("writer %d: id %q, %v; want %q for every writer", i, ids[i], errs[i], ids[0])
		}
	}
	if created.Load() != 1 {
		t.Fatalf("%d writers created the order, want 1", created.Load())
	}
}

func testReopen(t *testing.T, open func() (*store.Store, error)) {
	ctx := context.Background()
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateOrder(ctx, store.Order{ID: "o-1", IdempotencyKey: "k", ProductID: 1, Quantity: 1, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = mustOpen(t, open)
	if _, err := s.Order(ctx, "o-1"); err != nil {
		t.Fatalf("order after reopen: %v", err)
	}
	var n int
	if err := s.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM products`).Scan(&n); err != nil || n != 50 {
		t.Fatalf("%d products after reopen, %v; want the 50 seeded once", n, err)
	}
}

func testSearch(t *testing.T, open func() (*store.Store, error)) {
	s := mustOpen(t, open)
	hits, err := search.New(s.DB(), 0).Search(context.Background(), "BOOKS ITEM 01")
	if err != nil {
		t.Fatal(err)
	}
	// books are the ids divisible by 6: 12 and 18 are in 010-019.
	if len(hits) != 2 || hits[0] != (search.Hit{ID: 12, Name: "books item 012"}) || hits[1].ID != 18 {
		t.Fatalf("hits %+v, want books item 012 and 018", hits)
	}
}

// TestPostgresPoolIsWarm: the store opens its first connections before it
// is handed out, so the first requests do not pay for them against a
// 100ms call timeout.
func TestPostgresPoolIsWarm(t *testing.T) {
	pg := testserver.StartPostgres(t)
	ctx := context.Background()
	s, err := store.OpenPostgres(ctx, pg.DSN(), 50)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	admin, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var n int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if want := store.MaxPostgresConns / 2; n < want {
		t.Fatalf("%d connections open after OpenPostgres, want at least %d", n, want)
	}
}

// TestRewarmRefillsThePoolAfterAnOutage: every connection of the pool is
// ended by the server (as an outage ends them); Rewarm opens a new one in
// the background before any call asks for it.
func TestRewarmRefillsThePoolAfterAnOutage(t *testing.T) {
	pg := testserver.StartPostgres(t)
	ctx := context.Background()
	s, err := store.OpenPostgres(ctx, pg.DSN(), 50)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	admin, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	backends := func() int {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	for n, deadline := backends(), time.Now().Add(10*time.Second); n > 0; n = backends() {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections 10s after they were terminated", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Rewarm()
	for deadline := time.Now().Add(10 * time.Second); backends() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no connection 10s after Rewarm")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
