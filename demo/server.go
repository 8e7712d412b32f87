package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/admin"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/decisionlog"
	"github.com/chaoskit/chaoskit/breakerimpl/degrade"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/health"
	"github.com/chaoskit/chaoskit/breakerimpl/reload"
	"github.com/chaoskit/chaoskit/demo/cache"
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
	// Postgres, when set, is the DSN of a PostgreSQL database to use
	// instead of SQLite (on loopback); its tables are made if missing.
	Postgres string
	// Redis, when set, is the loopback address of a Redis that keeps the
	// search rate limit (with an in-memory fallback while it is away).
	Redis string
	// RedisPassword is the password Redis requires, if any.
	RedisPassword string
	// SearchRate is the searches a second the rate limiter admits, with
	// bursts of a tenth of it; default 2000.
	SearchRate float64
	// Products is how many products a new database holds; default 200.
	Products int
	// DBTimeout bounds each database call; default 100ms.
	DBTimeout time.Duration
	// MaxStaleness is the oldest cache copy served; default 30s.
	MaxStaleness time.Duration
	// RecommendationsGRPCListen is where the recommendations dependency
	// serves gRPC (a loopback address); empty means a free port.
	// RecommendationsGRPCDial is where the demo's client dials it; empty
	// means the same address. Set both to put a proxy between them.
	RecommendationsGRPCListen, RecommendationsGRPCDial string
	// AdminToken, when set, serves breakerimpl's admin endpoint under
	// AdminPath (list, force breakers, reload, roll back), to requests
	// with "Authorization: Bearer AdminToken".
	AdminToken string
	// WriteBehind accepts orders the database refuses into a durable
	// local queue (202 Accepted, X-Chaoskit-Source: queue) and writes them
	// when it is back, in order and once each (breakerimpl/writebehind).
	// WriteBehindDir holds the queue file; empty means a new temporary
	// directory, removed at exit once the queue is empty.
	WriteBehind    bool
	WriteBehindDir string
	// Policies, when set, is a YAML policy file (breakerimpl/reload) that
	// tunes the breakers (db, orders-db, recommendations), the
	// recommendations retry and the in-memory search limiter (search),
	// applied at start and again whenever it changes.
	Policies string

	// Broken variants, one flag each, used to prove contracts fail.

	// NoFallback serves no fallback: no cache copy of a product, no
	// default list of recommendations.
	NoFallback bool
	// StaleUnbounded serves cache copies of any age, past MaxStaleness.
	StaleUnbounded bool
	// StaleDisguised serves cache copies of any age, as StaleUnbounded
	// does, and lies about it: the age header states at most half of
	// MaxStaleness. It misreports itself where StaleUnbounded only
	// misbehaves, so that a contract on the age header alone passes it.
	StaleDisguised bool
	// SearchCost is the CPU each search burns; default 2ms.
	SearchCost time.Duration

	// NoBreaker calls the database even while it keeps failing.
	NoBreaker bool
	// NoDeadline reads products from the database with no deadline:
	// DBTimeout is not applied, and a hung database holds each read for
	// as long as the caller waits.
	NoDeadline bool
	// NoBulkhead lets every recommendations call wait on the dependency.
	NoBulkhead bool
	// SharedBulkhead makes product reads wait in the recommendations
	// bulkhead too, so a slow dependency starves a page that never calls it.
	SharedBulkhead bool
	// LeakPermits keeps the bulkhead slot of a recommendations call that
	// fails: every failure shrinks the capacity for good.
	LeakPermits bool
	// ConsecutiveBreaker trips the database breaker on 3 failures in a row
	// instead of on the error rate, so scattered errors open it.
	ConsecutiveBreaker bool
	// NoDegrade never forces product reads to the cache, however slow the
	// database answers.
	NoDegrade bool
	// DegradeLatched never releases the product reads' degrade switch once
	// it has engaged.
	DegradeLatched bool
	// NoShedder never sheds search load, however hot the CPU.
	NoShedder bool
	// UnboundedRetries retries recommendations without a budget.
	UnboundedRetries bool
	// NoHTTPFallback calls recommendations over gRPC only: while the gRPC
	// path is down, the default list answers instead of the HTTP path.
	NoHTTPFallback bool
	// StickyHTTPFallback never brings recommendations back to gRPC once
	// they went over HTTP.
	StickyHTTPFallback bool
	// FallbackEmpty answers 200 with an empty body when a fallback serves.
	FallbackEmpty bool
	// AckBeforeCommit acknowledges an order before it is committed.
	AckBeforeCommit bool
	// WriteBehindLossy (with WriteBehind) drops a queued order whose
	// first replay fails, though the client was told it is accepted.
	WriteBehindLossy bool
	// IdempotencyBroken answers a replayed order (an idempotency key seen
	// before) with the order built from the replay, a new id that was never
	// stored, instead of the order the key first created.
	IdempotencyBroken bool
	// RedisFallbackOpen admits every search while the Redis limiter is
	// in memory (Redis away), instead of limiting there.
	RedisFallbackOpen bool
	// Bug plants a named bug for fuzzing to find; see Bugs.
	Bug string
	// Lie names a broken variant that misbehaves and misreports itself
	// (see Lies), so that a contract on the service's own word alone
	// passes it and only one on chaoskit's own evidence fails.
	Lie string
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

// setSource sets the headers that say who served a call through a
// breakerimpl.Pipeline: none (with the reason) when the call failed, the
// route's primary (named primary) when it served, or the fallback with the
// reason the primary did not, and the copy's age when withAge.
func setSource[T any](h http.Header, res breakerimpl.Result[T], err error, primary string, withAge bool) {
	switch {
	case err != nil:
		h.Set(HeaderSource, "none")
		h.Set(HeaderReason, res.Reason.String())
	case res.Source == breakerimpl.SourcePrimary:
		h.Set(HeaderSource, primary)
	default:
		h.Set(HeaderSource, res.Source)
		h.Set(HeaderReason, res.Reason.String())
		if withAge {
			h.Set(HeaderAge, strconv.FormatInt(res.Age.Milliseconds(), 10))
		}
	}
}

// Bugs are the bugs the demo can plant (Config.Bug), for fault-schedule
// fuzzing to find.
var Bugs = map[string]string{
	"stale-after-recovery": "after a database fault clears, products whose id ends in 7 keep being served from the cache",
}

// The lying variants (Config.Lie).
const (
	LieSource   = "source"
	LieBreaker  = "breaker"
	LieCounters = "counters"
	LieDegrade  = "degrade"
	LiePrimary  = "primary"
	LieBulkhead = "bulkhead"
)

// Lies are the broken variants that misreport themselves (Config.Lie):
// each misbehaves as one of the No* variants does and states itself
// healthy in the header, state endpoint or counter a contract reads, as
// --stale-disguised does for the age of a copy.
var Lies = map[string]string{
	LieSource:   "takes no fallback and names one it did not take: a product read the database does not answer gets 200, a placeholder product (its id only) and X-Chaoskit-Source: cache; recommendations that gRPC cannot serve get the default list under X-Chaoskit-Source: http (no HTTP path)",
	LieBreaker:  "keeps calling the databases while they fail, as --no-breaker does, while the state endpoint, the metrics and X-Chaoskit-Breaker report the breakers as if they guarded the calls",
	LieCounters: "retries recommendations without a budget, as --unbounded-retries does, while its count of upstream calls (metrics and state endpoint) leaves the retries out",
	LiePrimary:  "once the database breaker has opened and closed again, answers every product read from the cache, as a breaker that never closed would (copies past --max-staleness refused with 503), and names each copy the database's answer (X-Chaoskit-Source: db)",
	LieBulkhead: "keeps the bulkhead slot of every failed recommendations call, as --leak-permits does, and turns the calls it has no slot for away without counting them in the bulkhead's rejections (metrics and state endpoint)",
	LieDegrade:  "never forces product reads to the cache, as --no-degrade does, and names every read the database answered slower than the switch's threshold a cache copy (X-Chaoskit-Source: cache, X-Chaoskit-Reason: degraded)",
}

// Server is the demo service.
type Server struct {
	cfg   Config
	store *store.Store
	log   *slog.Logger

	// Product reads: degrade switch on the p95 + breaker + last-known-good
	// cache.
	dbHealth  *health.Score
	dbDegrade *degrade.Switch
	dbBreaker *circuitbreaker.Breaker
	cache     *cache.LastKnownGood[int, store.Product]
	// cacheOn turns the cache fallback off and on (a policy file's
	// fallbacks.product-cache).
	cacheOn  fallback.Toggle
	products breakerimpl.Pipeline[int, store.Product]

	// Order writes: a breaker of their own and no fallback.
	ordersBreaker *circuitbreaker.Breaker
	orderGuard    breakerimpl.Guard
	orders        *orderQueue // nil without WriteBehind
	// pending counts acknowledged orders still being written (only with
	// AckBeforeCommit).
	pending      sync.WaitGroup
	pendingCount atomic.Int64
	// degraded is set once a fallback has served (for the planted bug).
	degraded atomic.Bool
	// latched is set once the database breaker has closed after a fault
	// (for the LiePrimary variant).
	latched atomic.Bool

	rec       *recommendations
	searching *searching
	metrics   *metrics
	policies  *reload.Watcher
	// targets are the tunable policies (policyTargets).
	targets     *reload.Targets
	targetsOnce sync.Once
	closeOnce   sync.Once
	closeErr    error
}

// New opens the database and builds the service.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Products <= 0 {
		cfg.Products = store.DefaultProducts
	}
	if cfg.DBTimeout <= 0 {
		cfg.DBTimeout = 100 * time.Millisecond
	}
	if cfg.Log != nil {
		// Every degradation decision of the gRPC and HTTP adapters, one
		// line each: fallbacks and retries one in ten, refusals at most
		// ten a second.
		decisionlog.New(decisionlog.Settings{Logger: cfg.Log, Sample: 10}).Install()
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Bug != "" && Bugs[cfg.Bug] == "" {
		st.Close()
		return nil, fmt.Errorf("unknown --bug %q (known: %s)", cfg.Bug, strings.Join(slices.Sorted(maps.Keys(Bugs)), ", "))
	}
	if cfg.Lie != "" && Lies[cfg.Lie] == "" {
		st.Close()
		return nil, fmt.Errorf("unknown --lie %q (known: %s)", cfg.Lie, strings.Join(slices.Sorted(maps.Keys(Lies)), ", "))
	}
	// Each lie misbehaves as a broken variant does; what it says about
	// itself is set where the demo reports it.
	switch cfg.Lie {
	case LieSource:
		cfg.NoHTTPFallback = true
	case LieCounters:
		cfg.UnboundedRetries = true
	case LieDegrade:
		cfg.NoDegrade = true
	}
	if cfg.MaxStaleness <= 0 {
		cfg.MaxStaleness = 30 * time.Second
	}
	if cfg.SearchCost <= 0 {
		cfg.SearchCost = 2 * time.Millisecond
	}
	s := &Server{cfg: cfg, store: st, log: cfg.Log}
	// Product reads trip on the error rate (hystrix style): a database that
	// fails half the reads over the last second, with at least 20 reads, is
	// given a second's rest; one that fails now and then is not. A short
	// window lets the breaker react within a second of a fault.
	var dbRule circuitbreaker.Rule = circuitbreaker.ErrorRate{Window: time.Second, Buckets: 10, MinRequests: 20, Percent: 50}
	if cfg.ConsecutiveBreaker {
		dbRule = circuitbreaker.ConsecutiveFailures{Threshold: 3} // broken on purpose
	}
	dbSettings := circuitbreaker.Settings{
		Name:         "db",
		Rule:         dbRule,
		OpenDuration: time.Second,
	}
	if cfg.Lie == LiePrimary {
		dbSettings.OnStateChange = func(e circuitbreaker.StateChange) {
			if e.To == circuitbreaker.Closed {
				s.latched.Store(true)
			}
		}
	}
	s.dbBreaker = circuitbreaker.New(dbSettings)
	s.ordersBreaker = circuitbreaker.New(circuitbreaker.Settings{
		Name:         "orders-db",
		Rule:         circuitbreaker.ConsecutiveFailures{Threshold: 3},
		OpenDuration: time.Second,
		// The outage emptied the connection pool: refill it as soon as
		// the database answers, so that the calls after the recovery find
		// connections ready rather than each waiting for a new one.
		OnStateChange: func(e circuitbreaker.StateChange) {
			if e.To == circuitbreaker.Open {
				st.Rewarm()
			}
		},
	})
	maxStaleness := cfg.MaxStaleness
	if cfg.StaleUnbounded || cfg.StaleDisguised {
		maxStaleness = 0 // broken on purpose: copies of any age
	}
	s.cache = cache.New[int, store.Product]("cache", 4096, maxStaleness)
	s.products = breakerimpl.Pipeline[int, store.Product]{
		FallbackOn: func(err error) bool { return !errors.Is(err, store.ErrNotFound) },
	}
	s.dbHealth = newDBHealth()
	s.dbDegrade = newDBDegrade(s.dbHealth, cfg.DegradeLatched)
	if !cfg.NoDegrade {
		s.products.Degrade = s.dbDegrade
	}
	switch {
	case cfg.Lie == LieBreaker:
		s.products.Breaker = shadowBreaker{s.dbBreaker}
		s.orderGuard = shadowBreaker{s.ordersBreaker}
	case !cfg.NoBreaker:
		s.products.Breaker = s.dbBreaker
		s.orderGuard = s.ordersBreaker
	}
	if !cfg.NoFallback && cfg.Lie != LieSource {
		s.products.Fallback = fallback.Toggled[int, store.Product]{Fallback: s.cache, Toggle: &s.cacheOn}
	}
	if s.rec, err = newRecommendations(ctx, cfg); err != nil {
		st.Close()
		return nil, fmt.Errorf("start the recommendations dependency: %w", err)
	}
	if cfg.SharedBulkhead {
		s.products.Bulkhead = s.rec.isolation // broken on purpose: no isolation
	}
	if s.searching, err = newSearching(s); err != nil {
		s.rec.close()
		st.Close()
		return nil, err
	}
	if cfg.WriteBehind || cfg.WriteBehindLossy {
		if s.orders, err = s.newOrderQueue(); err != nil {
			s.rec.close()
			s.searching.close()
			st.Close()
			return nil, err
		}
	}
	s.metrics = newMetrics(s)
	if cfg.Policies != "" {
		if s.policies, err = s.watchPolicies(cfg.Policies); err != nil {
			s.Close()
			return nil, fmt.Errorf("--policies: %w", err)
		}
	}
	return s, nil
}

// shadowBreaker is the LieBreaker variant, broken on purpose: it admits
// every call, and tells the breaker how the calls it would have admitted
// ended, so that the breaker's state (which the state endpoint, the metrics
// and X-Chaoskit-Breaker report) is that of a breaker guarding the calls
// while none does.
type shadowBreaker struct{ b *circuitbreaker.Breaker }

func (g shadowBreaker) Allow(ctx context.Context) (breakerimpl.Permit, error) {
	p, err := g.b.Allow(ctx)
	if err != nil {
		return breakerimpl.Permit{}, nil // refused, and called all the same
	}
	return p, nil
}

// Done is never called: a permit the breaker gave is done on the breaker,
// and the empty one on nothing.
func (g shadowBreaker) Done(breakerimpl.Permit, error) {}

// Close waits for writes in flight and releases the database.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if s.policies != nil {
			s.policies.Close()
		}
		s.rec.close()
		s.searching.close()
		s.pending.Wait()
		if s.orders != nil {
			s.orders.close(s.log)
		}
		s.closeErr = s.store.Close()
	})
	return s.closeErr
}

// Handler returns the service's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	m := s.metrics
	mux.HandleFunc("GET /products/{id}", m.instrument("product", s.product))
	mux.HandleFunc("POST /orders", m.instrument("create-order", s.createOrder))
	mux.HandleFunc("GET /orders/{id}", m.instrument("order", s.order))
	mux.HandleFunc("GET /products/{id}/recommendations", m.instrument("recommendations", s.recommendations))
	mux.Handle("GET /search", m.instrument("search", s.searching.handler.ServeHTTP))
	mux.Handle("GET /metrics", m.handler())
	mux.HandleFunc("GET "+StatePath, s.state)
	if s.cfg.AdminToken != "" {
		mux.Handle(AdminPath+"/", http.StripPrefix(AdminPath, admin.Handler(admin.Options{Targets: s.policyTargets(), Watcher: s.policies, Token: s.cfg.AdminToken})))
	}
	mux.Handle("GET "+inject.HitsPath, inject.HitsHandler(FaultPointsLive, Failpoints()))
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// checkListen refuses a listen address that is not on loopback.
func checkListen(addr string) error { return checkLoopback("--listen", addr, "listens on") }

// checkLoopback refuses an address of flag that is not on loopback: the
// demo neither listens nor dials anywhere else (use says which it does).
func checkLoopback(flag, addr, use string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: %v", flag, addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%s %q: the demo only %s loopback addresses (127.0.0.0/8, ::1)", flag, addr, use)
	}
	return nil
}

// Serve runs the service until ctx ends. It prints "listening on ADDR" to
// out once it accepts connections.
func Serve(ctx context.Context, cfg Config, out io.Writer) error {
	if err := checkListen(cfg.Listen); err != nil {
		return err
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
