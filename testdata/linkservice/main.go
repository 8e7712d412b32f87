// Command linkservice is a small URL shortener on PostgreSQL and Redis,
// the fixture of the recipe "a service on Postgres and Redis" in
// docs/scenarios.md. Its tables come from SQL migrations the scenario
// runs (migrations/), a user logs in for a token (POST /api/login), and
// with that token creates links (POST /api/links, answered with their
// code) and reads them back (GET /api/links/{code}). It reads the base of
// its short URLs from the Redis key config:base_url, which the scenario
// sets, and caches links in Redis.
//
// --ack-before-commit is its broken variant: a link is acknowledged and
// then written in the background, where every tenth write is dropped.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"log"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx driver for database/sql
	"github.com/redis/go-redis/v9"
)

type service struct {
	db         *sql.DB
	cache      *redis.Client
	ackEarly   bool
	dropped    atomic.Int64
	background chan func()
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	dsn := flag.String("dsn", os.Getenv("DATABASE_URL"), "PostgreSQL connection string (default $DATABASE_URL)")
	redisAddr := flag.String("redis", "127.0.0.1:6379", "Redis address; its password is $REDIS_PASSWORD")
	ackEarly := flag.Bool("ack-before-commit", false, "broken: acknowledge a link before writing it, and lose some")
	flag.Parse()
	db, err := sql.Open("pgx", *dsn)
	if err != nil {
		log.Fatal(err)
	}
	s := &service{db: db, ackEarly: *ackEarly, background: make(chan func(), 1024),
		cache: redis.NewClient(&redis.Options{Addr: *redisAddr, Password: os.Getenv("REDIS_PASSWORD")})}
	go func() {
		for f := range s.background {
			f()
		}
	}()
	http.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := db.PingContext(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	http.HandleFunc("POST /api/login", s.login)
	http.HandleFunc("POST /api/links", s.auth(s.create))
	http.HandleFunc("GET /api/links/{code}", s.auth(s.read))
	log.Printf("listening on %s", *listen)
	log.Fatal(http.ListenAndServe(*listen, nil))
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func newCode() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// login checks a user seeded by the migrations and gives a token.
func (s *service) login(w http.ResponseWriter, r *http.Request) {
	var in struct{ User, Password string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		reply(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	var id int64
	err := s.db.QueryRowContext(r.Context(), `SELECT id FROM users WHERE name = $1 AND password = crypt($2, password)`, in.User, in.Password).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		reply(w, http.StatusUnauthorized, map[string]string{"error": "wrong user or password"})
		return
	} else if err != nil {
		reply(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	token := newCode() + newCode()
	if _, err := s.db.ExecContext(r.Context(), `INSERT INTO api_tokens (token, user_id) VALUES ($1, $2)`, token, id); err != nil {
		reply(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	reply(w, http.StatusOK, map[string]string{"token": token})
}

// auth lets a request through with a token the database knows.
func (s *service) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var n int
		if !ok || s.db.QueryRowContext(r.Context(), `SELECT count(*) FROM api_tokens WHERE token = $1`, token).Scan(&n) != nil || n == 0 {
			reply(w, http.StatusUnauthorized, map[string]string{"error": "no valid token"})
			return
		}
		next(w, r)
	}
}

type link struct {
	Code  string `json:"code"`
	URL   string `json:"url"`
	Short string `json:"short"`
}

func (s *service) create(w http.ResponseWriter, r *http.Request) {
	var in struct{ URL string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.URL == "" {
		reply(w, http.StatusBadRequest, map[string]string{"error": "give {\"url\": ...}"})
		return
	}
	base, err := s.cache.Get(r.Context(), "config:base_url").Result()
	if err != nil {
		reply(w, http.StatusServiceUnavailable, map[string]string{"error": "config:base_url: " + err.Error()})
		return
	}
	l := link{Code: newCode(), URL: in.URL}
	l.Short = base + "/" + l.Code
	insert := func(ctx context.Context) error {
		_, err := s.db.ExecContext(ctx, `INSERT INTO links (code, url, short) VALUES ($1, $2, $3)`, l.Code, l.URL, l.Short)
		return err
	}
	if s.ackEarly {
		s.background <- func() {
			if s.dropped.Add(1)%10 == 0 {
				return // the broken variant's loss
			}
			_ = insert(context.Background())
		}
	} else if err := insert(r.Context()); err != nil {
		reply(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	reply(w, http.StatusCreated, l)
}

func (s *service) read(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("code")
	if b, err := s.cache.Get(r.Context(), "link:"+code).Bytes(); err == nil {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
		return
	}
	var l link
	err := s.db.QueryRowContext(r.Context(), `SELECT code, url, short FROM links WHERE code = $1`, code).Scan(&l.Code, &l.URL, &l.Short)
	if errors.Is(err, sql.ErrNoRows) {
		reply(w, http.StatusNotFound, map[string]string{"error": "no such link"})
		return
	} else if err != nil {
		reply(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	if b, err := json.Marshal(l); err == nil {
		s.cache.Set(r.Context(), "link:"+code, b, time.Minute)
	}
	reply(w, http.StatusOK, l)
}
