package diff_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chaoskit/chaoskit/chaostest"
	"github.com/chaoskit/chaoskit/diff"
	"github.com/chaoskit/chaoskit/inject"
)

// storeQuery is the items service's store: off, it answers; on, it is down.
var storeQuery = inject.NewSwitch("storeQuery")

// items is a small read service; with fallback it answers from a cache
// while its store is down, without it answers 500.
func items(fallback bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		if _, down := storeQuery.Eval(); down {
			if !fallback {
				http.Error(w, "store down", http.StatusInternalServerError)
				return
			}
			w.Header().Set("X-Served-By", "cache")
		} else {
			w.Header().Set("X-Served-By", "origin")
		}
		fmt.Fprintf(w, `{"id": %q}`, r.PathValue("id"))
	})
	return mux
}

// TestRealRuns diffs real runs (vegeta load on loopback, the fault point
// switched through inject's control endpoint, the runs judged as chaoskit
// run judges them): the build without its fallback regresses against the
// one with it, and the build with it does not against itself.
func TestRealRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the scenario 5 times, 3 s each")
	}
	const token = "diff-test-token"
	t.Setenv(inject.TokenEnv, token)
	ctrl := httptest.NewServer(inject.ControlHandler(token))
	defer ctrl.Close()
	vars := map[string]string{"point": storeQuery.Path()}
	side := func(fallback bool) diff.Run {
		res, err := chaostest.Check(t.Context(), "testdata/fallback.yaml", chaostest.Target{Handler: items(fallback), Failpoints: ctrl.URL},
			chaostest.Vars(vars), chaostest.ReportDir(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		s := res.Report.Scenarios[0]
		if s.Error != "" || len(s.Faults) != 1 || len(s.Bills) != 1 {
			t.Fatalf("the run: error %q, %d faults, %d bills", s.Error, len(s.Faults), len(s.Bills))
		}
		return diff.FromReport(s)
	}
	// Interleaved, as chaoskit diff runs them.
	a1, b1, a2, b2, a3 := side(true), side(false), side(true), side(false), side(true)

	r, err := diff.Compare([]diff.Run{a1, a2}, []diff.Run{b1, b2}, diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	words := map[string]diff.Word{}
	for _, f := range r.Figures {
		words[f.Key.String()] = f.Word
	}
	for fig, want := range map[string]diff.Word{
		"store-down · fault " + storeQuery.Path() + " · bill.failed": diff.Regressed,
		"store-down · share.error":                                   diff.Regressed,
		"store-down · share.fallback":                                diff.Regressed,
		"reads answer during the outage · verdict":                   diff.Regressed,
		"warmup · share.primary":                                     diff.Same,
	} {
		if words[fig] != want {
			t.Errorf("%s: %s, want %s", fig, words[fig], want)
		}
	}
	if !r.Regressed() || !r.Regressed("bill.*") || r.Regressed("p50") {
		t.Errorf("Regressed() %v, bill.* %v, p50 %v: want true, true, false", r.Regressed(), r.Regressed("bill.*"), r.Regressed("p50"))
	}
	if p := r.Bills; len(p) != 1 || p[0].Base == nil || p[0].Head == nil || p[0].Base.Failed > p[0].Head.Failed/10 {
		t.Errorf("bills %+v: the head's should fail far more", p)
	}

	same, err := diff.Compare([]diff.Run{a1, a2}, []diff.Run{a3}, diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if same.Regressed() {
		for _, f := range same.Figures {
			if f.Word == diff.Regressed {
				t.Errorf("the same build regressed on %s: %v -> %v, band %v", f.Key, f.Base.Values, f.Head.Values, f.Band)
			}
		}
	}
}
