package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/pingcap/failpoint"

	"github.com/chaoskit/chaoskit/demo/recommend"
	"github.com/chaoskit/chaoskit/demo/store"
	"github.com/chaoskit/chaoskit/inject"
)

// withFault switches fault on at the demo's point for the rest of the test.
func withFault(t *testing.T, point string, fault inject.Fault) {
	t.Helper()
	point = "github.com/chaoskit/chaoskit/demo/" + point
	term, err := fault.Term(point)
	if err != nil {
		t.Fatal(err)
	}
	inject.Arm()
	if err := failpoint.Enable(point, term); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = failpoint.Disable(point) })
}

func newDemo(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestUnknownLieIsRefused(t *testing.T) {
	if _, err := New(context.Background(), Config{Lie: "nope"}); err == nil || err.Error() != `unknown --lie "nope" (known: breaker, bulkhead, counters, degrade, primary, source)` {
		t.Fatalf("err = %v", err)
	}
}

// TestLieSourceNamesAFallbackItDidNotTake: with the database away the
// variant serves no copy but a placeholder under the cache's name, and the
// default list of recommendations under the HTTP path's name.
func TestLieSourceNamesAFallbackItDidNotTake(t *testing.T) {
	for _, lie := range []string{"", LieSource} {
		t.Run("lie="+lie, func(t *testing.T) {
			s := newDemo(t, Config{Lie: lie})
			h := s.Handler()
			healthy := get(t, h, "/products/7").Body.String()
			withFault(t, "store/productQuery", inject.Fault{Action: inject.Error})
			rec := get(t, h, "/products/7")
			if rec.Code != 200 || rec.Header().Get(HeaderSource) != "cache" {
				t.Fatalf("lie %q: read with the database away: %d %v", lie, rec.Code, rec.Header())
			}
			var p store.Product
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.ID != 7 {
				t.Fatalf("lie %q: body %q: %v", lie, rec.Body, err)
			}
			if (rec.Body.String() == healthy) != (lie == "") {
				t.Errorf("lie %q: served %q, the database had %q", lie, rec.Body, healthy)
			}

			s.rec.stop() // both paths of the recommendations dependency away
			rec = get(t, h, "/products/5/recommendations")
			var l recommend.List
			want := map[string]string{"": "default", LieSource: "http"}[lie]
			if rec.Code != 200 || rec.Header().Get(HeaderSource) != want || json.Unmarshal(rec.Body.Bytes(), &l) != nil || !reflect.DeepEqual(l.Items, []int{1, 2, 3, 4}) {
				t.Errorf("lie %q: recommendations with the dependency away: %d %v %s, want the default list named %s", lie, rec.Code, rec.Header(), rec.Body, want)
			}
		})
	}
}

// TestLieBreakerReportsAnOpenBreakerThatGuardsNothing: the variant's
// breaker opens as the correct one does, in the state endpoint and the
// header, while every read still reaches the database.
func TestLieBreakerReportsAnOpenBreakerThatGuardsNothing(t *testing.T) {
	for _, lie := range []string{"", LieBreaker} {
		t.Run("lie="+lie, func(t *testing.T) {
			s := newDemo(t, Config{Lie: lie})
			h := s.Handler()
			withFault(t, "store/productQuery", inject.Fault{Action: inject.Error})
			for i := 0; i < 30; i++ {
				get(t, h, "/products/9")
			}
			before := s.store.Calls().ProductQueries
			rec := get(t, h, "/products/9")
			for i := 0; i < 9; i++ {
				get(t, h, "/products/9")
			}
			if st := s.State().Breakers["db"].State; st != "open" || rec.Header().Get(HeaderBreaker) != "open" {
				t.Errorf("lie %q: breaker %s, header %q; want open in both", lie, st, rec.Header().Get(HeaderBreaker))
			}
			want := map[string]int64{"": 0, LieBreaker: 10}[lie]
			if got := s.store.Calls().ProductQueries - before; got != want {
				t.Errorf("lie %q: %d of 10 reads reached the database with the breaker open, want %d", lie, got, want)
			}
		})
	}
}

// TestLiePrimaryNamesCopiesTheDatabasesAnswer: once the variant's breaker
// has closed after a fault, reads come from the cache under the database's
// name, and are refused once the copy is past its staleness.
func TestLiePrimaryNamesCopiesTheDatabasesAnswer(t *testing.T) {
	const bound = 20 * time.Millisecond
	s := newDemo(t, Config{Lie: LiePrimary, MaxStaleness: bound})
	h := s.Handler()
	healthy := get(t, h, "/products/7").Body.String()
	// The breaker opens, turns half-open, and a probe that the database
	// answers closes it.
	s.dbBreaker.ForceOpen("test")
	s.dbBreaker.ResumeAutomatic("test")
	if rec := get(t, h, "/products/8"); rec.Code != 200 || rec.Header().Get(HeaderSource) != "db" {
		t.Fatalf("probe: %d %v", rec.Code, rec.Header())
	}
	if !s.latched.Load() {
		t.Fatal("a breaker closed after opening did not latch the variant")
	}
	before := s.store.Calls().ProductQueries
	if rec := get(t, h, "/products/7"); rec.Code != 200 || rec.Header().Get(HeaderSource) != "db" || rec.Body.String() != healthy {
		t.Errorf("latched read: %d %v %q", rec.Code, rec.Header(), rec.Body)
	}
	if got := s.store.Calls().ProductQueries - before; got != 0 {
		t.Errorf("%d latched reads reached the database, want 0", got)
	}
	time.Sleep(2 * bound)
	if rec := get(t, h, "/products/7"); rec.Code != 503 {
		t.Errorf("latched read of a copy past its staleness: %d %v", rec.Code, rec.Header())
	}
}

// TestLieDegradeNamesSlowReadsCopies: the variant never degrades, and names
// a read the slow database answered a copy the switch served.
func TestLieDegradeNamesSlowReadsCopies(t *testing.T) {
	s := newDemo(t, Config{Lie: LieDegrade, DBTimeout: time.Second})
	h := s.Handler()
	healthy := get(t, h, "/products/7").Body.String()
	withFault(t, "store/productQuery", inject.Fault{Action: inject.Latency, Value: "150ms"})
	start := time.Now()
	rec := get(t, h, "/products/7")
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Errorf("read took %v: not the slow database's answer", took)
	}
	if rec.Code != 200 || rec.Header().Get(HeaderSource) != "cache" || rec.Header().Get(HeaderReason) != "degraded" || rec.Body.String() != healthy {
		t.Errorf("slow read: %d %v %q, want the database's answer named a degraded copy", rec.Code, rec.Header(), rec.Body)
	}
}

// TestLieCountersLeavesRetriesOut: every upstream call fails and is retried;
// the correct demo reports every call, the variant the first attempts only.
func TestLieCountersLeavesRetriesOut(t *testing.T) {
	for _, lie := range []string{"", LieCounters} {
		t.Run("lie="+lie, func(t *testing.T) {
			s := newDemo(t, Config{Lie: lie})
			h := s.Handler()
			withFault(t, "recommend/recommendationsCall", inject.Fault{Action: inject.Status, Value: "500"})
			for i := 1; i <= 3; i++ {
				get(t, h, fmt.Sprintf("/products/%d/recommendations", i))
			}
			real, reported := s.rec.upstream.Calls(), s.State().Recommendations.UpstreamCalls
			switch {
			case lie == "" && reported != real:
				t.Errorf("correct demo reports %d upstream calls of %d", reported, real)
			case lie == LieCounters && (real <= 3 || reported != 3):
				t.Errorf("lying demo: %d upstream calls, %d reported; want retries made and 3 reported", real, reported)
			}
		})
	}
}

// TestLieBulkheadLeavesRejectionsUncounted: the variant leaks the slots of
// failed calls, as --leak-permits does, and turns the calls away for lack of
// a slot without the bulkhead counting them.
func TestLieBulkheadLeavesRejectionsUncounted(t *testing.T) {
	s := newDemo(t, Config{Lie: LieBulkhead})
	h := s.Handler()
	s.rec.stop() // every call fails, over both paths
	for i := 0; i < 12; i++ {
		if rec := get(t, h, fmt.Sprintf("/products/%d/recommendations", i+1)); rec.Code != 200 || rec.Header().Get(HeaderSource) != "default" {
			t.Fatalf("call %d: %d %v", i, rec.Code, rec.Header())
		}
	}
	if b := s.State().Bulkheads["recommendations"]; b.InFlight != 8 || b.Rejected != 0 {
		t.Errorf("%d slots held, %d rejections counted; want 8 held and none counted", b.InFlight, b.Rejected)
	}
}
