package demo

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/chaoskit/chaoskit/demo/store"
	"github.com/chaoskit/chaoskit/inject"
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
		} else if rec.Code != 200 || rec.Header().Get(HeaderSource) != "cache" || rec.Body.String() != healthy || rec.Header().Get(HeaderAge) == "" {
			t.Errorf("cache fallback: %d %v %q", rec.Code, rec.Header(), rec.Body)
		}
		if rec := get(t, h, "/products/8"); rec.Code != 503 || rec.Header().Get(HeaderSource) != "none" {
			t.Errorf("never-read product with no DB: %d %v", rec.Code, rec.Header())
		}
		// Enough failures open the breaker.
		for i := 0; i < 10; i++ {
			get(t, h, "/products/9")
		}
		if st := get(t, h, "/products/7").Header().Get(HeaderBreaker); st != "open" {
			t.Errorf("breaker after repeated failures = %q, want open", st)
		}
	}
}

func TestHitsEndpointReportsPlainBuild(t *testing.T) {
	s, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := get(t, s.Handler(), inject.HitsPath)
	var rep inject.HitsReport
	if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	// go test builds without failpoint rewriting.
	if rep.FaultInjection == nil || *rep.FaultInjection || len(rep.Points) != len(Failpoints()) {
		t.Errorf("hits report = %+v", rep)
	}
}

func TestServeRefusesNonLoopback(t *testing.T) {
	err := Serve(context.Background(), Config{Listen: "0.0.0.0:0"}, nil)
	if err == nil {
		t.Fatal("listening on all interfaces was accepted")
	}
}
