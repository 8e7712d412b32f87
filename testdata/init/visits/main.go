// Command visits is a fixture of chaoskit init: a service on net/http with
// Go 1.22 method patterns and database/sql on PostgreSQL (lib/pq). Each read
// waits at most 100ms for the database; when the database fails or is slow,
// it answers with the last copy it served (X-Cache: stale), unless built
// with -tags nofallback, the broken variant init's test runs.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"log"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	_ "github.com/lib/pq" // the postgres driver for database/sql
)

type item struct {
	ID    int    `json:"id"`
	Name  string `json:"name"`
	Price int    `json:"price"`
}

type server struct {
	db *sql.DB
	mu sync.Mutex
	// last holds the last answer served per path: the fallback.
	last map[string][]byte
}

const queryTimeout = 100 * time.Millisecond

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	dsn := flag.String("dsn", os.Getenv("DATABASE_URL"), "PostgreSQL connection string (default $DATABASE_URL)")
	flag.Parse()
	db, err := sql.Open("postgres", *dsn)
	if err != nil {
		log.Fatal(err)
	}
	db.SetMaxOpenConns(20)
	db.SetConnMaxIdleTime(time.Second)
	if err := seed(db); err != nil {
		log.Fatalf("seed: %v", err)
	}
	s := &server{db: db, last: map[string][]byte{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /items", s.list)
	mux.HandleFunc("GET /items/{id}", s.get)
	mux.HandleFunc("POST /items", s.create)
	log.Printf("listening on %s", *listen)
	log.Fatal(http.ListenAndServe(*listen, mux))
}

func seed(db *sql.DB) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS items (id serial PRIMARY KEY, name text NOT NULL, price int NOT NULL);
		INSERT INTO items (name, price) SELECT 'item ' || n, n * 100 FROM generate_series(1, 20) n WHERE NOT EXISTS (SELECT 1 FROM items)`)
	return err
}

// query runs fn with the database's time bound; it gives up at the bound
// even when the driver does not.
func (s *server) query(r *http.Request, fn func(ctx context.Context) (any, error)) (any, error) {
	ctx, cancel := context.WithTimeout(r.Context(), queryTimeout)
	defer cancel()
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1)
	go func() { v, err := fn(ctx); done <- result{v, err} }()
	select {
	case res := <-done:
		return res.v, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *server) list(w http.ResponseWriter, r *http.Request) {
	v, err := s.query(r, func(ctx context.Context) (any, error) {
		rows, err := s.db.QueryContext(ctx, `SELECT id, name, price FROM items ORDER BY id LIMIT 10`)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		items := []item{}
		for rows.Next() {
			var it item
			if err := rows.Scan(&it.ID, &it.Name, &it.Price); err != nil {
				return nil, err
			}
			items = append(items, it)
		}
		return items, rows.Err()
	})
	s.answer(w, r, v, err)
}

func (s *server) get(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		http.Error(w, "bad id", http.StatusBadRequest)
		return
	}
	v, err := s.query(r, func(ctx context.Context) (any, error) {
		var it item
		err := s.db.QueryRowContext(ctx, `SELECT id, name, price FROM items WHERE id = $1`, id).Scan(&it.ID, &it.Name, &it.Price)
		return it, err
	})
	if errors.Is(err, sql.ErrNoRows) {
		http.Error(w, "no such item", http.StatusNotFound)
		return
	}
	s.answer(w, r, v, err)
}

func (s *server) create(w http.ResponseWriter, r *http.Request) {
	var it item
	if err := json.NewDecoder(r.Body).Decode(&it); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_, err := s.query(r, func(ctx context.Context) (any, error) {
		return nil, s.db.QueryRowContext(ctx, `INSERT INTO items (name, price) VALUES ($1, $2) RETURNING id`, it.Name, it.Price).Scan(&it.ID)
	})
	if err != nil {
		http.Error(w, "database unavailable", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(it)
}

// answer writes v, or on a database error the last copy of this path.
func (s *server) answer(w http.ResponseWriter, r *http.Request, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		s.mu.Lock()
		body, ok := s.last[r.URL.Path]
		s.mu.Unlock()
		if !ok || !fallback {
			http.Error(w, "database unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("X-Cache", "stale")
		_, _ = w.Write(body)
		return
	}
	body, _ := json.Marshal(v)
	s.mu.Lock()
	s.last[r.URL.Path] = body
	s.mu.Unlock()
	_, _ = w.Write(body)
}
