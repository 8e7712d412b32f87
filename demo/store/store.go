// Package store is the demo service's data layer: products and orders in a
// real database, SQLite (modernc.org/sqlite, pure Go; Open) or PostgreSQL
// (jackc/pgx; OpenPostgres), with failpoint markers where a real database
// would fail.
//
// Both backends run the same code and the same SQL: the statements use
// $1-style parameters, which SQLite takes too, and only types and
// functions both know. So the markers, the orders' idempotency and every
// error are the same whichever database is underneath.
//
// The markers live here, not in package main: a fault-injection build
// rewrites the markers of every package main into one shared scratch folder.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	_ "modernc.org/sqlite"             // registers the "sqlite" driver

	"github.com/chaoskit/chaoskit/inject"
)

// productQuery is the fault point that stands for the database failing a
// read: a switch, live in any build.
var productQuery = inject.NewSwitch("productQuery")

// Product is one item of the shop.
type Product struct {
	ID         int    `json:"id"`
	Name       string `json:"name"`
	Category   string `json:"category"`
	PriceCents int    `json:"price_cents"`
	Stock      int    `json:"stock"`
}

// ErrNotFound is returned for a product that does not exist.
var ErrNotFound = errors.New("product not found")

// Store reads and writes the shop's database.
type Store struct {
	db   *sql.DB
	path string // the SQLite file; empty for PostgreSQL
	temp string // temporary directory to remove on Close, if any

	productQueries atomic.Int64
	orderWrites    atomic.Int64

	// rewarming is set while Rewarm's goroutine runs; stop ends it and
	// rewarms waits for it, on Close.
	rewarming atomic.Bool
	stopOnce  sync.Once
	stop      chan struct{}
	rewarms   sync.WaitGroup
}

// Calls counts the calls that reached the store.
type Calls struct {
	ProductQueries int64 `json:"product_queries"`
	OrderWrites    int64 `json:"order_writes"`
}

// Calls returns how many product queries and order writes reached the
// store (faulted ones included): what a breaker saves the database from.
func (s *Store) Calls() Calls {
	return Calls{ProductQueries: s.productQueries.Load(), OrderWrites: s.orderWrites.Load()}
}

// DefaultProducts is how many products a new database is seeded with.
const DefaultProducts = 200

// Open opens (creating and seeding if needed) the database at path; an
// empty path means a fresh database in a temporary directory, removed on
// Close.
func Open(ctx context.Context, path string, products int) (*Store, error) {
	s := &Store{path: path}
	if path == "" {
		dir, err := os.MkdirTemp("", "chaoskit-demo-")
		if err != nil {
			return nil, err
		}
		s.temp = dir
		s.path = filepath.Join(dir, "shop.db")
	}
	// _txlock=immediate: a transaction takes the write lock when it begins,
	// waiting up to busy_timeout for it. A deferred one that has read first
	// cannot upgrade its snapshot once another writer committed: SQLite
	// answers SQLITE_BUSY at once, whatever busy_timeout says, and two
	// concurrent orders with one idempotency key failed so.
	db, err := sql.Open("sqlite", "file:"+s.path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		s.cleanup()
		return nil, err
	}
	s.db = db
	if err := s.migrate(ctx, products); err != nil {
		s.Close()
		return nil, fmt.Errorf("prepare database %s: %w", s.path, err)
	}
	return s, nil
}

// MaxPostgresConns bounds the connections a Store keeps to PostgreSQL, well
// under the server's default max_connections (100), so a few demo
// processes fit beside each other.
const MaxPostgresConns = 16

// OpenPostgres opens the PostgreSQL database at dsn (a URL or key=value
// string, as pgx reads it), creating the tables and seeding the products
// if they are not there. The data stays after Close: the database is the
// caller's.
func OpenPostgres(ctx context.Context, dsn string, products int) (*Store, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	db.SetMaxOpenConns(MaxPostgresConns)
	db.SetMaxIdleConns(MaxPostgresConns)
	s := &Store{db: db, stop: make(chan struct{})}
	if err := s.migrate(ctx, products); err != nil {
		db.Close()
		return nil, fmt.Errorf("prepare postgres database: %w", err)
	}
	if err := warmPool(ctx, db, warmPostgresConns); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: open the first connections: %w", err)
	}
	return s, nil
}

// warmPostgresConns connections are opened before the store is handed
// out: a new connection (a server process and a password exchange) can
// take longer than a database call's whole timeout on a busy machine, and
// the first requests would pay for it.
const warmPostgresConns = MaxPostgresConns / 2

// Rewarm gives a PostgreSQL store a connection in the background once the
// database answers again: an outage empties the pool (every connection
// that failed is dropped), and on a busy machine a new connection (a
// server process and a password exchange) can take longer than a call's
// whole deadline, so the first call after a recovery, the probe of a
// half-open breaker, would fail waiting for one and open the breaker for
// another second, and the calls right after it each wait for a connection
// of their own. Rewarm pings with a deadline of its own, one try at a time
// with a growing pause, until the database answers; then it opens
// rewarmConns connections side by side, each handed to the pool the moment
// it is ready, never held from the callers. A Rewarm while another runs,
// or on SQLite, does nothing; Close ends it. The demo calls it when a
// database breaker opens.
func (s *Store) Rewarm() {
	if s.path != "" || s.stop == nil || !s.rewarming.CompareAndSwap(false, true) {
		return
	}
	s.rewarms.Add(1)
	go func() {
		defer s.rewarms.Done()
		defer s.rewarming.Store(false)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-s.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		pause := rewarmPause
		for deadline := time.Now().Add(rewarmFor); time.Now().Before(deadline); {
			actx, acancel := context.WithTimeout(ctx, rewarmAttempt)
			err := s.db.PingContext(actx)
			if err == nil {
				// Side by side: each finds the pool without an idle
				// connection and opens one, which goes back to the pool
				// as soon as it answers.
				var wg sync.WaitGroup
				for range rewarmConns {
					wg.Go(func() {
						if c, err := s.db.Conn(actx); err == nil {
							_ = c.PingContext(actx)
							_ = c.Close()
						}
					})
				}
				wg.Wait()
			}
			acancel()
			if err == nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, rewarmMaxPause)
		}
	}()
}

// Rewarm's pacing: the first pause between tries and the longest, the
// bound of one try, how many connections it opens once the database
// answers, and how long it keeps trying before it gives up.
const (
	rewarmPause    = 50 * time.Millisecond
	rewarmMaxPause = 250 * time.Millisecond
	rewarmAttempt  = 2 * time.Second
	rewarmConns    = 4
	rewarmFor      = time.Minute
)

// warmPool opens n connections of db, holding each until all are open so
// that they are n different ones, and leaves them idle in its pool.
func warmPool(ctx context.Context, db *sql.DB, n int) error {
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		if err := c.PingContext(ctx); err != nil {
			c.Close()
			return err
		}
		conns = append(conns, c)
	}
	return nil
}

var categories = []string{"books", "garden", "kitchen", "music", "outdoor", "toys"}

func (s *Store) migrate(ctx context.Context, products int) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS products (
		id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL,
		price_cents INTEGER NOT NULL, stock INTEGER NOT NULL)`); err != nil {
		return err
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM products`).Scan(&n); err != nil {
		return err
	}
	if err := s.migrateOrders(ctx); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// ON CONFLICT: a second process seeding at the same time adds nothing.
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO products (id, name, category, price_cents, stock) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i := 1; i <= products; i++ {
		cat := categories[i%len(categories)]
		if _, err := stmt.ExecContext(ctx, i, fmt.Sprintf("%s item %03d", cat, i), cat, 199+(i*7919)%9800, (i*31)%120); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// DB returns the database handle, for read-only helpers such as search.
func (s *Store) DB() *sql.DB { return s.db }

// Path returns the SQLite database file's path, empty for PostgreSQL.
func (s *Store) Path() string { return s.path }

// Close closes the database and removes a temporary one.
func (s *Store) Close() error {
	if s.stop != nil {
		s.stopOnce.Do(func() { close(s.stop) })
		s.rewarms.Wait()
	}
	err := s.db.Close()
	s.cleanup()
	return err
}

func (s *Store) cleanup() {
	if s.temp != "" {
		os.RemoveAll(s.temp)
	}
}

// Product reads one product. The productQuery failpoint stands for the
// database failing: timeout, error or latency, as the fault says.
func (s *Store) Product(ctx context.Context, id int) (Product, error) {
	s.productQueries.Add(1)
	if v, ok := productQuery.Eval(); ok {
		if err := inject.Fire(ctx, v); err != nil {
			return Product{}, fmt.Errorf("product query: %w", err)
		}
	}
	var p Product
	err := s.db.QueryRowContext(ctx, `SELECT id, name, category, price_cents, stock FROM products WHERE id = $1`, id).
		Scan(&p.ID, &p.Name, &p.Category, &p.PriceCents, &p.Stock)
	if errors.Is(err, sql.ErrNoRows) {
		return Product{}, ErrNotFound
	}
	if err != nil {
		return Product{}, fmt.Errorf("product query: %w", err)
	}
	return p, nil
}
