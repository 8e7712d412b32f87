package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pingcap/failpoint"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/chaoskit/chaoskit/breakerimpl/grpcx"
	"github.com/chaoskit/chaoskit/demo/recommend"
	"github.com/chaoskit/chaoskit/demo/store"
	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/netfault"
)

func TestFailpointsMatchSource(t *testing.T) {
	cat, err := inject.ScanSource(context.Background(), ".", "./...")
	if err != nil {
		t.Fatal(err)
	}
	if got := cat.Paths(); !reflect.DeepEqual(got, Failpoints()) {
		t.Errorf("markers in source = %v\nFailpoints() = %v", got, Failpoints())
	}
}

func get(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func TestProductsFromDBThenCache(t *testing.T) {
	for _, noFallback := range []bool{false, true} {
		s, err := New(context.Background(), Config{NoFallback: noFallback})
		if err != nil {
			t.Fatal(err)
		}
		h := s.Handler()
		rec := get(t, h, "/products/7")
		if rec.Code != 200 || rec.Header().Get(HeaderSource) != "db" || rec.Header().Get(HeaderBreaker) != "closed" {
			t.Fatalf("healthy read: %d %v", rec.Code, rec.Header())
		}
		var p store.Product
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.ID != 7 || p.Name == "" {
			t.Fatalf("body %q: %v", rec.Body, err)
		}
		healthy := rec.Body.String()
		if rec := get(t, h, "/products/100000"); rec.Code != 404 {
			t.Errorf("missing product: %d", rec.Code)
		}
		if rec := get(t, h, "/products/x"); rec.Code != 400 {
			t.Errorf("bad id: %d", rec.Code)
		}

		// The database goes away: the last good copy is served, unless the
		// fallback is switched off.
		s.Close()
		rec = get(t, h, "/products/7")
		if noFallback {
			if rec.Code != 503 || rec.Header().Get(HeaderSource) != "none" {
				t.Errorf("no-fallback variant: %d %v", rec.Code, rec.Header())
			}
		} else if rec.Code != 200 || rec.Header().Get(HeaderSource) != "cache" || rec.Header().Get(HeaderReason) != "error" || rec.Body.String() != healthy || rec.Header().Get(HeaderAge) == "" {
			t.Errorf("cache fallback: %d %v %q", rec.Code, rec.Header(), rec.Body)
		}
		if rec := get(t, h, "/products/8"); rec.Code != 503 || rec.Header().Get(HeaderSource) != "none" {
			t.Errorf("never-read product with no DB: %d %v", rec.Code, rec.Header())
		}
		// Enough failures open the breaker.
		for i := 0; i < 30; i++ {
			get(t, h, "/products/9")
		}
		if st := get(t, h, "/products/7").Header().Get(HeaderBreaker); st != "open" {
			t.Errorf("breaker after repeated failures = %q, want open", st)
		}
	}
}

// The demo's fault points are switches: in a plain test build they are
// live, the hits report says so, and an error fault on productQuery fires
// (the product is served from the cache) and is counted.
func TestFaultPointsLiveInAPlainBuild(t *testing.T) {
	s, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	if rec := get(t, h, "/products/7"); rec.Code != 200 || rec.Header().Get(HeaderSource) != "db" {
		t.Fatalf("healthy read: %d %v", rec.Code, rec.Header())
	}
	point := "github.com/chaoskit/chaoskit/demo/store/productQuery"
	term, err := inject.Fault{Action: inject.Error}.Term(point)
	if err != nil {
		t.Fatal(err)
	}
	inject.Arm()
	if err := failpoint.Enable(point, term); err != nil {
		t.Fatal(err)
	}
	rec := get(t, h, "/products/7")
	_ = failpoint.Disable(point)
	if rec.Code != 200 || rec.Header().Get(HeaderSource) != "cache" {
		t.Errorf("read with the fault on: %d %v, want the cache's copy", rec.Code, rec.Header())
	}
	var rep inject.HitsReport
	if err := json.Unmarshal(get(t, h, inject.HitsPath).Body.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.FaultInjection == nil || !*rep.FaultInjection || len(rep.Points) != len(Failpoints()) || rep.Hits[point] == 0 {
		t.Errorf("hits report = %+v, want live points and a hit of %s", rep, point)
	}
}

func TestServeRefusesNonLoopback(t *testing.T) {
	err := Serve(context.Background(), Config{Listen: "0.0.0.0:0"}, nil)
	if err == nil {
		t.Fatal("listening on all interfaces was accepted")
	}
}

func post(t *testing.T, h http.Handler, path, key, body string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	h.ServeHTTP(rec, req)
	return rec
}

func TestOrders(t *testing.T) {
	s, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	rec := post(t, h, "/orders", "k1", `{"product_id": 3, "quantity": 2}`)
	if rec.Code != 201 || rec.Header().Get("Location") == "" {
		t.Fatalf("create: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	var o store.Order
	if err := json.Unmarshal(rec.Body.Bytes(), &o); err != nil || o.ProductID != 3 || o.Quantity != 2 || o.IdempotencyKey != "k1" {
		t.Fatalf("created %+v %v", o, err)
	}
	if got := get(t, h, rec.Header().Get("Location")); got.Code != 200 || got.Body.String() != rec.Body.String() {
		t.Errorf("read back: %d %q, want %q", got.Code, got.Body, rec.Body)
	}
	// The same key again is the same order, not a new one.
	again := post(t, h, "/orders", "k1", `{"product_id": 3, "quantity": 2}`)
	if again.Code != 200 || again.Body.String() != rec.Body.String() {
		t.Errorf("repeat: %d %s", again.Code, again.Body)
	}
	if c := post(t, h, "/orders", "k1", `{"product_id": 4, "quantity": 2}`).Code; c != 409 {
		t.Errorf("reused key for another order: %d", c)
	}
	if c := post(t, h, "/orders", "k2", `{"product_id": 99999, "quantity": 1}`).Code; c != 422 {
		t.Errorf("unknown product: %d", c)
	}
	if c := post(t, h, "/orders", "k3", `{"product_id": 1}`).Code; c != 400 {
		t.Errorf("no quantity: %d", c)
	}
	if c := get(t, h, "/orders/o-nothing").Code; c != 404 {
		t.Errorf("unknown order: %d", c)
	}
	if st := s.State(); st.Orders.Committed != 1 || st.Breakers["orders-db"].State != "closed" {
		t.Errorf("state %+v", st)
	}

	// The database fails: writes are refused fast with Retry-After, and
	// after a few failures the breaker refuses them without trying.
	s.Close()
	for i := 0; i < 5; i++ {
		rec := post(t, h, "/orders", fmt.Sprintf("f%d", i), `{"product_id": 3, "quantity": 1}`)
		if rec.Code != 503 || rec.Header().Get("Retry-After") == "" {
			t.Fatalf("write with the DB down: %d %v", rec.Code, rec.Header())
		}
	}
	if st := s.State().Breakers["orders-db"].State; st != "open" {
		t.Errorf("orders breaker = %s, want open", st)
	}
}

func TestAckBeforeCommitLosesWrites(t *testing.T) {
	s, err := New(context.Background(), Config{AckBeforeCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	ok := post(t, h, "/orders", "a", `{"product_id": 3, "quantity": 1}`)
	s.pending.Wait()
	if ok.Code != 201 || get(t, h, ok.Header().Get("Location")).Code != 200 {
		t.Fatalf("healthy write: %d", ok.Code)
	}
	s.Close() // the database goes away
	lost := post(t, h, "/orders", "b", `{"product_id": 3, "quantity": 1}`)
	s.pending.Wait()
	if lost.Code != 201 {
		t.Fatalf("the broken variant should acknowledge: %d", lost.Code)
	}
}

// /metrics has breakerimpl's collectors for every policy the demo runs,
// breaker states as one 0/1 series per state, and names promlint accepts.
func TestMetrics(t *testing.T) {
	s, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	get(t, h, "/products/1")
	get(t, h, "/products/1/recommendations")
	body := get(t, h, "/metrics").Body.String()
	for _, want := range []string{
		`chaoskit_demo_requests_total{code="200",route="product",source="db"} 1`,
		`chaoskit_demo_cache_entries 1`,
		`chaoskit_demo_circuit_breaker_state{breaker="db",state="closed"} 1`,
		`chaoskit_demo_circuit_breaker_state{breaker="db",state="half_open"} 0`,
		`chaoskit_demo_circuit_breaker_state{breaker="recommendations",state="open"} 0`,
		`chaoskit_demo_circuit_breaker_state{breaker="orders-db",state="closed"} 1`,
		`chaoskit_demo_pipeline_results_total{pipeline="products",reason="none",source="primary"} 1`,
		`chaoskit_demo_pipeline_results_total{pipeline="recommendations",reason="none",source="primary"} 1`,
		`chaoskit_demo_db_queries_total{kind="product"} 1`,
		`chaoskit_demo_recommendations_upstream_calls_total 1`,
		`chaoskit_demo_bulkhead_max_concurrent{bulkhead="recommendations"} 8`,
		`chaoskit_demo_timeout_seconds{timeout="recommendations"} 0.25`,
		`chaoskit_demo_retry_budget_ratio{retry="recommendations"} 0.1`,
		`chaoskit_demo_shedder_cpu_threshold_ratio{shedder="search"} 0.75`,
		`chaoskit_demo_rate_limiter_limit{kind="token-bucket",limiter="search"} 2000`,
		`chaoskit_demo_health_healthy{dependency="db"} 1`,
		`chaoskit_demo_degrade_switch_engaged{switch="db-p95"} 0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(body, "chaoskit_demo_breaker_open") {
		t.Error("the hand-made 0/0.5/1 breaker gauge is still exported")
	}
	problems, err := promlint.New(strings.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

func TestPlantedBugStaleAfterRecovery(t *testing.T) {
	if _, err := New(context.Background(), Config{Bug: "nope"}); err == nil || !strings.Contains(err.Error(), "stale-after-recovery") {
		t.Fatalf("unknown bug: %v", err)
	}
	for _, bug := range []string{"", "stale-after-recovery"} {
		s, err := New(context.Background(), Config{Bug: bug})
		if err != nil {
			t.Fatal(err)
		}
		h := s.Handler()
		get(t, h, "/products/17")
		s.degraded.Store(true) // a fallback has served once
		src := get(t, h, "/products/17").Header().Get(HeaderSource)
		other := get(t, h, "/products/18").Header().Get(HeaderSource)
		if want := map[string]string{"": "db", "stale-after-recovery": "cache"}[bug]; src != want || other != "db" {
			t.Errorf("bug %q: /products/17 from %s, /products/18 from %s", bug, src, other)
		}
		s.Close()
	}
}

func TestRecommendations(t *testing.T) {
	s, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	rec := get(t, h, "/products/5/recommendations")
	var l recommend.List
	if rec.Code != 200 || rec.Header().Get(HeaderSource) != "upstream" || json.Unmarshal(rec.Body.Bytes(), &l) != nil || l.ProductID != 5 || len(l.Items) != 4 {
		t.Fatalf("healthy: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	if calls := s.State().Recommendations.UpstreamCalls; calls != 1 {
		t.Errorf("upstream calls = %d, want 1", calls)
	}
	// The dependency goes away, both its paths: the default list is
	// served, said so.
	s.rec.stop()
	rec = get(t, h, "/products/5/recommendations")
	if rec.Code != 200 || rec.Header().Get(HeaderSource) != "default" || rec.Header().Get(HeaderReason) == "" || rec.Header().Get(HeaderAge) != "" ||
		json.Unmarshal(rec.Body.Bytes(), &l) != nil || !reflect.DeepEqual(l.Items, []int{1, 2, 3, 4}) {
		t.Fatalf("degraded: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	if st := s.State(); st.Retries["recommendations"].Budget == nil || st.Bulkheads["recommendations"].Name != "recommendations" {
		t.Errorf("state lacks the policies: %+v", st)
	}
}

func TestSearch(t *testing.T) {
	s, err := New(context.Background(), Config{SearchCost: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := get(t, s.Handler(), "/search?q=item+00")
	var hits []struct{ ID int }
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &hits) != nil || len(hits) != 9 {
		t.Fatalf("search: %d %s", rec.Code, rec.Body)
	}
}

// TestStaleUnboundedServesOldCopies checks the staleness bound and the
// variant that drops it: with a bound of 1ns every copy is too old, and
// only the variant serves it.
func TestStaleUnboundedServesOldCopies(t *testing.T) {
	for _, unbounded := range []bool{false, true} {
		s, err := New(context.Background(), Config{MaxStaleness: time.Nanosecond, StaleUnbounded: unbounded})
		if err != nil {
			t.Fatal(err)
		}
		h := s.Handler()
		if rec := get(t, h, "/products/7"); rec.Code != 200 || rec.Header().Get(HeaderSource) != "db" {
			t.Fatalf("healthy read: %d %v", rec.Code, rec.Header())
		}
		s.Close() // the database goes away
		rec := get(t, h, "/products/7")
		if unbounded {
			if rec.Code != 200 || rec.Header().Get(HeaderSource) != "cache" || rec.Header().Get(HeaderAge) == "" {
				t.Errorf("stale-unbounded: %d %v", rec.Code, rec.Header())
			}
		} else if rec.Code != 503 || rec.Header().Get(HeaderSource) != "none" || s.State().Cache.Stale != 1 {
			t.Errorf("a copy past max staleness was served: %d %v", rec.Code, rec.Header())
		}
	}
}

// TestStaleDisguisedUnderstatesAge checks the variant that misreports
// itself: it serves a copy past the bound, as stale-unbounded does, and
// states it at most half the bound old.
func TestStaleDisguisedUnderstatesAge(t *testing.T) {
	const bound = 20 * time.Millisecond
	s, err := New(context.Background(), Config{MaxStaleness: bound, StaleDisguised: true})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	if rec := get(t, h, "/products/7"); rec.Code != 200 || rec.Header().Get(HeaderSource) != "db" {
		t.Fatalf("healthy read: %d %v", rec.Code, rec.Header())
	}
	s.Close() // the database goes away
	time.Sleep(2 * bound)
	rec := get(t, h, "/products/7")
	if rec.Code != 200 || rec.Header().Get(HeaderSource) != "cache" {
		t.Fatalf("stale-disguised served no copy past the bound: %d %v", rec.Code, rec.Header())
	}
	if got, want := rec.Header().Get(HeaderAge), strconv.FormatInt((bound/2).Milliseconds(), 10); got != want {
		t.Errorf("a copy older than %v states age %q, want the lie %q", 2*bound, got, want)
	}
}

// TestLeakPermitsShrinksCapacity fails the recommendations dependency and
// checks the bulkhead's slots: all free again after the failures, except in
// the variant that leaks them, where the bulkhead ends up full and turns
// every later call away.
func TestLeakPermitsShrinksCapacity(t *testing.T) {
	for _, leak := range []bool{false, true} {
		s, err := New(context.Background(), Config{LeakPermits: leak})
		if err != nil {
			t.Fatal(err)
		}
		h := s.Handler()
		s.rec.stop() // every call fails, over both paths
		for i := 0; i < 12; i++ {
			if rec := get(t, h, fmt.Sprintf("/products/%d/recommendations", i+1)); rec.Code != 200 || rec.Header().Get(HeaderSource) != "default" {
				t.Fatalf("call %d: %d %v", i, rec.Code, rec.Header())
			}
		}
		b := s.State().Bulkheads["recommendations"]
		if want := map[bool]int{false: 0, true: 8}[leak]; b.InFlight != want {
			t.Errorf("leak %v: %d slots held after the failures, want %d", leak, b.InFlight, want)
		}
		if want := map[bool]bool{false: false, true: true}[leak]; (b.Rejected > 0) != want {
			t.Errorf("leak %v: %d calls rejected by a bulkhead nobody holds", leak, b.Rejected)
		}
		s.Close()
	}
}

// TestSharedBulkheadStarvesProducts holds every slot of the recommendations
// bulkhead, as a slow dependency does, and reads a product: untouched,
// except in the variant that shares the bulkhead.
func TestSharedBulkheadStarvesProducts(t *testing.T) {
	for _, shared := range []bool{false, true} {
		s, err := New(context.Background(), Config{SharedBulkhead: shared})
		if err != nil {
			t.Fatal(err)
		}
		h := s.Handler()
		get(t, h, "/products/7") // a copy for the cache
		for i := 0; i < 8; i++ {
			p, err := s.rec.bulkhead.Allow(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer p.Done(nil)
		}
		rec := get(t, h, "/products/7")
		if want := map[bool]string{false: "db", true: "cache"}[shared]; rec.Header().Get(HeaderSource) != want {
			t.Errorf("shared %v: product served by %q, want %q (%v)", shared, rec.Header().Get(HeaderSource), want, rec.Header())
		}
		s.Close()
	}
}

// TestConsecutiveBreakerTripsOnAFewErrors checks that the database breaker
// trips on the error rate (20 reads at least), and in the variant on three
// failures in a row.
func TestConsecutiveBreakerTripsOnAFewErrors(t *testing.T) {
	for _, consecutive := range []bool{false, true} {
		s, err := New(context.Background(), Config{ConsecutiveBreaker: consecutive})
		if err != nil {
			t.Fatal(err)
		}
		h := s.Handler()
		s.Close() // the database goes away
		for i := 0; i < 3; i++ {
			get(t, h, "/products/9")
		}
		if want := map[bool]string{false: "closed", true: "open"}[consecutive]; s.State().Breakers["db"].State != want {
			t.Errorf("consecutive %v: breaker %s after 3 failures, want %s", consecutive, s.State().Breakers["db"].State, want)
		}
	}
}

// TestNoFallbackServesNoDefaultList checks that the no-fallback variant
// drops the recommendations' default list too.
func TestNoFallbackServesNoDefaultList(t *testing.T) {
	s, err := New(context.Background(), Config{NoFallback: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.rec.close()
	if rec := get(t, s.Handler(), "/products/5/recommendations"); rec.Code != 503 || rec.Header().Get(HeaderSource) != "none" {
		t.Errorf("no-fallback recommendations: %d %v", rec.Code, rec.Header())
	}
}

// TestIdempotencyBrokenAnswersANewID replays an order: the same order comes
// back, except in the variant, whose answer names an order that was never
// stored.
func TestIdempotencyBrokenAnswersANewID(t *testing.T) {
	for _, broken := range []bool{false, true} {
		s, err := New(context.Background(), Config{IdempotencyBroken: broken})
		if err != nil {
			t.Fatal(err)
		}
		h := s.Handler()
		first := post(t, h, "/orders", "k1", `{"product_id": 3, "quantity": 2}`)
		replay := post(t, h, "/orders", "k1", `{"product_id": 3, "quantity": 2}`)
		var a, b store.Order
		if first.Code != 201 || replay.Code != 200 || json.Unmarshal(first.Body.Bytes(), &a) != nil || json.Unmarshal(replay.Body.Bytes(), &b) != nil {
			t.Fatalf("broken %v: %d %s, then %d %s", broken, first.Code, first.Body, replay.Code, replay.Body)
		}
		read := get(t, h, replay.Header().Get("Location")).Code
		if broken {
			if a.ID == b.ID || read != 404 || s.State().Orders.Committed != 1 {
				t.Errorf("idempotency-broken: ids %s %s, reading the replay's answers %d", a.ID, b.ID, read)
			}
		} else if a.ID != b.ID || read != 200 {
			t.Errorf("replay answered %s (read %d), the first order is %s", b.ID, read, a.ID)
		}
		s.Close()
	}
}

// --policies tunes the demo's policies from a YAML file at start; a bad
// file stops the demo with its line and column.
func TestPolicies(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/policies.yaml"
	os.WriteFile(path, []byte("breakers:\n  db:\n    open_duration: 3s\nretries:\n  recommendations:\n    max_retries: 4\nlimiters:\n  search:\n    rate: 10\n"), 0o644)
	s, err := New(context.Background(), Config{Policies: path})
	if err != nil {
		t.Fatal(err)
	}
	if d := s.dbBreaker.Settings().OpenDuration; d != 3*time.Second {
		t.Errorf("db breaker open duration %v, want the file's 3s", d)
	}
	if n := s.rec.retry.Settings().MaxAttempts; n != 5 {
		t.Errorf("recommendations attempts %d, want 5", n)
	}
	if l := s.searching.limiter.Snapshot().Limit; l != 10 {
		t.Errorf("search limit %v, want 10", l)
	}
	s.Close()

	// The timeout, bulkhead, fallbacks, health scores and degrade switch
	// are registered under the names the flag's help gives.
	os.WriteFile(path, []byte(`timeouts:
  recommendations: {timeout: 80ms}
bulkheads:
  recommendations: {max_concurrent: 3}
fallbacks:
  product-cache: {enabled: false}
  recommendations-default: {enabled: false}
health:
  db: {threshold: 0.5}
  recommendations-grpc: {min_requests: 7}
degrade:
  db-p95: {threshold: 0.5, hold: 3s}
`), 0o644)
	s, err = New(context.Background(), Config{Policies: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if d := s.rec.timeout.Timeout(); d != 80*time.Millisecond {
		t.Errorf("recommendations timeout %v, want 80ms", d)
	}
	if n := s.rec.bulkhead.Settings().MaxConcurrent; n != 3 {
		t.Errorf("recommendations bulkhead %d slots, want 3", n)
	}
	if s.cacheOn.Enabled() || s.rec.defaultOn.Enabled() {
		t.Error("a fallback the file turned off is on")
	}
	if th := s.dbHealth.Tuning().Threshold; th != 0.5 {
		t.Errorf("db health threshold %v, want 0.5", th)
	}
	if n := s.rec.grpcHealth.Tuning().MinRequests; n != 7 {
		t.Errorf("recommendations-grpc min requests %d, want 7", n)
	}
	if tu := s.dbDegrade.Tuning(); tu.Threshold != 0.5 || tu.Hold != 3*time.Second {
		t.Errorf("db-p95 tuning %+v, want threshold 0.5, hold 3s", tu)
	}
	os.WriteFile(path, []byte("breakers:\n  db:\n    open_duration: 3s\n  search:\n    open_duration: 1s\n"), 0o644)
	if _, err := New(context.Background(), Config{Policies: path}); err == nil || !strings.Contains(err.Error(), path+`:4:3: unknown breaker "search" (known: db, orders-db, recommendations)`) {
		t.Fatalf("bad policy file: %v", err)
	}
}

// TestRecommendationsGRPCHangMovesToHTTP holds back every answer of the
// gRPC path (a netfault timeout on a proxy in front of it: the connection
// stays up, silent): after three attempts in a row ran out of time, the
// calls go over HTTP and are served by the dependency again; the path's
// health score has seen the timeouts.
func TestRecommendationsGRPCHangMovesToHTTP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	grpcAddr := ln.Addr().String()
	ln.Close()
	proxies := netfault.New(netfault.Options{CloseTimeout: time.Second})
	defer proxies.Close()
	dial, err := proxies.Start(netfault.Proxy{Name: "recs", Listen: "127.0.0.1:0", Upstream: grpcAddr})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), Config{RecommendationsGRPCListen: grpcAddr, RecommendationsGRPCDial: dial})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	if rec := get(t, h, "/products/5/recommendations"); rec.Code != 200 || rec.Header().Get(HeaderSource) != "upstream" {
		t.Fatalf("healthy: %d %v", rec.Code, rec.Header())
	}
	hang := netfault.Fault{Proxy: "recs", Kind: netfault.Timeout}
	if err := proxies.Enable(hang); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		start := time.Now()
		rec := get(t, h, "/products/5/recommendations")
		if rec.Header().Get(HeaderSource) != "default" || time.Since(start) < 200*time.Millisecond {
			t.Fatalf("hung call %d: %d %v after %v; want the default list at the 250ms timeout", i+1, rec.Code, rec.Header(), time.Since(start))
		}
	}
	rec := get(t, h, "/products/5/recommendations")
	if rec.Code != 200 || rec.Header().Get(HeaderSource) != grpcx.SourceHTTP {
		t.Fatalf("after three timeouts in a row: %d %v; want the dependency's answer over HTTP", rec.Code, rec.Header())
	}
	st := s.State().Recommendations
	if st.OverHTTP != 1 || st.GRPCHealth == nil || st.GRPCHealth.Requests < 3 || st.GRPCHealth.ErrorRate == 0 {
		t.Fatalf("state %+v (health %+v); want one call over HTTP and a health score that saw the timeouts", st, st.GRPCHealth)
	}
}

// --admin-token serves the admin endpoint: an operator forces the
// database breaker open (reads then come from the cache) and rolls the
// policies back to the version before the file.
func TestAdminEndpoint(t *testing.T) {
	path := t.TempDir() + "/policies.yaml"
	os.WriteFile(path, []byte("breakers:\n  db:\n    open_duration: 3s\n"), 0o644)
	s, err := New(context.Background(), Config{Policies: path, AdminToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	post := func(p string) int {
		req, _ := http.NewRequest("POST", srv.URL+AdminPath+p, nil)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	get(t, s.Handler(), "/products/7") // cached
	if code := post("/breakers/db/open?reason=drill"); code != 200 || s.State().Breakers["db"].State != "open" {
		t.Fatalf("force open: %d, %+v", code, s.State().Breakers["db"])
	}
	if rec := get(t, s.Handler(), "/products/7"); rec.Header().Get(HeaderSource) != "cache" {
		t.Fatalf("read with the breaker forced open: %v", rec.Header())
	}
	if code := post("/rollback/initial"); code != 200 || s.dbBreaker.Settings().OpenDuration != time.Second {
		t.Fatalf("rollback: %d, open duration %v", code, s.dbBreaker.Settings().OpenDuration)
	}
	resp, err := srv.Client().Post(srv.URL+AdminPath+"/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("without the token: %d", resp.StatusCode)
	}
}
