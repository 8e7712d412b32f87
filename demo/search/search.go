// Package search is the demo's expensive endpoint: each query burns CPU
// (standing in for ranking) before it reads the database, so a burst of
// searches can overload the service. Its failpoint (searchBurn) makes
// queries more expensive: a latency fault burns CPU for that long instead
// of sleeping, which is what an expensive query pattern does to a server.
package search

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/inject"
)

// searchBurn is the fault point of a query: a latency fault burns that much
// more CPU, any other fault fails the query. A switch, live in any build.
var searchBurn = inject.NewSwitch("searchBurn")

// Hit is one search result.
type Hit struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

// Engine runs searches over the products table.
type Engine struct {
	db *sql.DB
	// Cost is the CPU each query burns.
	cost time.Duration
}

// New returns an engine over db whose queries each burn cost of CPU.
func New(db *sql.DB, cost time.Duration) *Engine { return &Engine{db: db, cost: cost} }

// Search returns up to 10 products whose name contains q.
func (e *Engine) Search(ctx context.Context, q string) ([]Hit, error) {
	extra := time.Duration(0)
	if v, ok := searchBurn.Eval(); ok {
		if _, f, ok := inject.Decode(v); ok && f.Action == inject.Latency {
			inject.CountHit(v)
			extra, _ = time.ParseDuration(f.Value)
		} else if err := inject.Fire(ctx, v); err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
	}
	if err := Burn(ctx, e.cost+extra); err != nil {
		return nil, err
	}
	// $1 and lower(): the same statement on SQLite and PostgreSQL, whose
	// LIKE, unlike SQLite's, cares about case.
	rows, err := e.db.QueryContext(ctx, `SELECT id, name FROM products WHERE lower(name) LIKE lower($1) ORDER BY id LIMIT 10`, "%"+q+"%")
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	defer rows.Close()
	hits := []Hit{}
	for rows.Next() {
		var h Hit
		if err := rows.Scan(&h.ID, &h.Name); err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

// Burn keeps one core busy for d (hashing), checking ctx between rounds.
func Burn(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	var sum [32]byte
	deadline := time.Now().Add(d)
	for i := 0; ; i++ {
		for j := 0; j < 64; j++ {
			sum = sha256.Sum256(sum[:])
		}
		if time.Now().After(deadline) {
			return nil
		}
		if i%16 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
