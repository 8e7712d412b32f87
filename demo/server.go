package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/demo/store"
	"github.com/chaoskit/chaoskit/inject"
)

// Config is how the demo service runs. The zero value, with Listen set, is
// the correct service; the No* flags break it on purpose.
type Config struct {
	// Listen is the address to listen on; it must be a loopback address.
	Listen string
	// DB is the SQLite file; empty means a temporary one.
	DB string
	// Products is how many products a new database holds; default 200.
	Products int
	// DBTimeout bounds each database call; default 100ms.
	DBTimeout time.Duration
	// NoFallback never serves from the cache (a deliberately broken variant).
	NoFallback bool
	// Log receives structured logs; nil discards them.
	Log *slog.Logger
}

// Response headers that state how a request was served.
const (
	HeaderSource  = "X-Chaoskit-Source"  // db, cache or none
	HeaderBreaker = "X-Chaoskit-Breaker" // closed, open or half-open
	HeaderAge     = "X-Chaoskit-Age"     // age of a served cache copy, in ms
	HeaderReason  = "X-Chaoskit-Reason"  // why the primary did not serve
)

// Server is the demo service.
type Server struct {
	cfg      Config
	store    *store.Store
	breaker  *circuitbreaker.Breaker
	products breakerimpl.Pipeline[int, store.Product]
	log      *slog.Logger
}

// New opens the database and builds the service.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Products <= 0 {
		cfg.Products = store.DefaultProducts
	}
	if cfg.DBTimeout <= 0 {
		cfg.DBTimeout = 100 * time.Millisecond
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	st, err := store.Open(ctx, cfg.DB, cfg.Products)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, store: st, log: cfg.Log}
	s.breaker = circuitbreaker.New(circuitbreaker.Settings{
		Name:         "db",
		Rule:         circuitbreaker.ConsecutiveFailures{Threshold: 5},
		OpenDuration: time.Second,
	})
	s.products = breakerimpl.Pipeline[int, store.Product]{
		Breaker:    s.breaker,
		FallbackOn: func(err error) bool { return !errors.Is(err, store.ErrNotFound) },
	}
	if !cfg.NoFallback {
		s.products.Fallback = fallback.NewCache[int, store.Product](fallback.CacheSettings{Name: "cache", MaxEntries: 4096})
	}
	return s, nil
}

// Close releases the database.
func (s *Server) Close() error { return s.store.Close() }

// Handler returns the service's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /products/{id}", s.product)
	mux.Handle("GET "+inject.HitsPath, inject.HitsHandler(store.FaultInjectionLive, Failpoints()))
	return mux
}

func (s *Server) product(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil || id <= 0 {
		http.Error(w, "product id must be a positive integer", http.StatusBadRequest)
		return
	}
	res, err := s.products.Execute(r.Context(), id, func(ctx context.Context) (store.Product, error) {
		ctx, cancel := context.WithTimeout(ctx, s.cfg.DBTimeout)
		defer cancel()
		return s.store.Product(ctx, id)
	})
	h := w.Header()
	h.Set(HeaderBreaker, s.breaker.State().String())
	switch {
	case errors.Is(err, store.ErrNotFound):
		h.Set(HeaderSource, "db")
		http.Error(w, "no such product", http.StatusNotFound)
		return
	case err != nil:
		h.Set(HeaderSource, "none")
		h.Set(HeaderReason, res.Reason.String())
		s.log.Warn("product unavailable", "id", id, "reason", res.Reason.String(), "err", err)
		http.Error(w, "product temporarily unavailable", http.StatusServiceUnavailable)
		return
	}
	if res.Source == breakerimpl.SourcePrimary {
		h.Set(HeaderSource, "db")
	} else {
		h.Set(HeaderSource, res.Source)
		h.Set(HeaderReason, res.Reason.String())
		h.Set(HeaderAge, strconv.FormatInt(res.Age.Milliseconds(), 10))
		s.log.Info("product served from fallback", "id", id, "source", res.Source, "reason", res.Reason.String(), "age", res.Age)
	}
	writeJSON(w, res.Value)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Serve runs the service until ctx ends. It prints "listening on ADDR" to
// out once it accepts connections.
func Serve(ctx context.Context, cfg Config, out io.Writer) error {
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %v", cfg.Listen, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--listen %q: the demo only listens on loopback addresses (127.0.0.0/8, ::1)", cfg.Listen)
	}
	s, err := New(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(out, "listening on %s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	<-errc
	return nil
}
