package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/inject"
)

// orderWrite is the fault point that stands for the database failing a
// write: a switch, live in any build.
var orderWrite = inject.NewSwitch("orderWrite")

// Order is one accepted order.
type Order struct {
	ID             string    `json:"id"`
	IdempotencyKey string    `json:"idempotency_key"`
	ProductID      int       `json:"product_id"`
	Quantity       int       `json:"quantity"`
	CreatedAt      time.Time `json:"created_at"`
}

// ErrOrderNotFound is returned for an order that does not exist.
var ErrOrderNotFound = errors.New("order not found")

// ErrConflict is returned when an idempotency key is reused for a
// different order.
var ErrConflict = errors.New("idempotency key already used for a different order")

func (s *Store) migrateOrders(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS orders (
		id TEXT PRIMARY KEY, idempotency_key TEXT NOT NULL UNIQUE,
		product_id INTEGER NOT NULL REFERENCES products(id), quantity INTEGER NOT NULL,
		created_at TEXT NOT NULL)`)
	return err
}

// NewOrderID returns a fresh random order id.
func NewOrderID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "o-" + hex.EncodeToString(b[:])
}

// CreateOrder commits o and returns it; created is false when an order with
// the same idempotency key already exists (that order is returned). The
// orderWrite failpoint stands for the database failing the write.
func (s *Store) CreateOrder(ctx context.Context, o Order) (_ Order, created bool, err error) {
	s.orderWrites.Add(1)
	if v, ok := orderWrite.Eval(); ok {
		if err := inject.Fire(ctx, v); err != nil {
			return Order{}, false, fmt.Errorf("order write: %w", err)
		}
	}
	if prev, found, err := s.replay(ctx, o); found || err != nil {
		return prev, false, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Order{}, false, fmt.Errorf("order write: %w", err)
	}
	defer tx.Rollback()
	var exists int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM products WHERE id = $1`, o.ProductID).Scan(&exists); err != nil {
		return Order{}, false, fmt.Errorf("order write: %w", err)
	}
	if exists == 0 {
		return Order{}, false, ErrNotFound
	}
	// ON CONFLICT: a concurrent write with the same key committed first;
	// this one inserts nothing and answers as a repeat of it.
	res, err := tx.ExecContext(ctx, `INSERT INTO orders (id, idempotency_key, product_id, quantity, created_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (idempotency_key) DO NOTHING`,
		o.ID, o.IdempotencyKey, o.ProductID, o.Quantity, o.CreatedAt.UTC().Format(time.RFC3339Nano))
	if err != nil {
		return Order{}, false, fmt.Errorf("order write: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Order{}, false, fmt.Errorf("order write: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		prev, found, err := s.replay(ctx, o)
		if err == nil && !found {
			err = fmt.Errorf("order write: idempotency key %q conflicted but no order has it", o.IdempotencyKey)
		}
		return prev, false, err
	}
	return o, true, nil
}

// replay looks for an order with o's idempotency key: found, it is o's
// repeat (or ErrConflict if it orders something else).
func (s *Store) replay(ctx context.Context, o Order) (_ Order, found bool, _ error) {
	prev, err := s.orderByKey(ctx, o.IdempotencyKey)
	switch {
	case errors.Is(err, ErrOrderNotFound):
		return Order{}, false, nil
	case err != nil:
		return Order{}, false, err
	case prev.ProductID != o.ProductID || prev.Quantity != o.Quantity:
		return prev, true, ErrConflict
	}
	return prev, true, nil
}

// Order reads one order by id.
func (s *Store) Order(ctx context.Context, id string) (Order, error) {
	return s.scanOrder(s.db.QueryRowContext(ctx, `SELECT id, idempotency_key, product_id, quantity, created_at FROM orders WHERE id = $1`, id))
}

func (s *Store) orderByKey(ctx context.Context, key string) (Order, error) {
	return s.scanOrder(s.db.QueryRowContext(ctx, `SELECT id, idempotency_key, product_id, quantity, created_at FROM orders WHERE idempotency_key = $1`, key))
}

func (s *Store) scanOrder(row *sql.Row) (Order, error) {
	var o Order
	var created string
	err := row.Scan(&o.ID, &o.IdempotencyKey, &o.ProductID, &o.Quantity, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Order{}, ErrOrderNotFound
	}
	if err != nil {
		return Order{}, fmt.Errorf("order read: %w", err)
	}
	o.CreatedAt, err = time.Parse(time.RFC3339Nano, created)
	return o, err
}

// CountOrders returns how many orders are committed.
func (s *Store) CountOrders(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM orders`).Scan(&n)
	return n, err
}
