package netfault_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chaoskit/chaoskit/internal/testserver"
	"github.com/chaoskit/chaoskit/netfault"
)

// A real Postgres behind the proxy: a 300 ms latency fault, switched on
// while the connection is open, is on every query, and gone when it is
// switched off.
func TestPostgresQueriesThroughLatency(t *testing.T) {
	pg := testserver.StartPostgres(t)
	ps, addr := proxy(t, "postgres", pg.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", addr))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	query := func() time.Duration {
		t.Helper()
		start := time.Now()
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_class`).Scan(&n); err != nil || n == 0 {
			t.Fatalf("query through the proxy: %d, %v", n, err)
		}
		return time.Since(start)
	}
	if d := query(); d > 200*time.Millisecond {
		t.Fatalf("query without a fault took %v", d)
	}
	f := netfault.Fault{Proxy: "postgres", Kind: netfault.Latency, Latency: 300 * time.Millisecond}
	enable(t, ps, f)
	for range 3 {
		// One round trip a query (pgx caches the prepared statement):
		// 300 ms, and at most a busy machine's delay more.
		if d := query(); d < 300*time.Millisecond || d > 2*time.Second {
			t.Fatalf("%s: query took %v, want 300ms and a little", f, d)
		}
	}
	disable(t, ps, f)
	if d := query(); d > 200*time.Millisecond {
		t.Fatalf("query after the fault took %v", d)
	}
}
