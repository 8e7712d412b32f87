package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/admin"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/degrade"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/reload"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// An operator lists the policies, forces a breaker open and closed,
// reloads an edited policy file and rolls back to the version before, over
// a real HTTP server with a token.
func TestAdminOverHTTP(t *testing.T) {
	db := circuitbreaker.New(circuitbreaker.Settings{Name: "db", OpenDuration: time.Second})
	targets := &reload.Targets{}
	targets.AddBreaker(db)
	targets.AddRetry("recs", retry.New(retry.Settings{Name: "recs", MaxAttempts: 3}))
	targets.AddLimiter("search", ratelimit.NewTokenBucket(ratelimit.TokenSettings{Name: "search", Rate: 100, Burst: 10}))
	recsTimeout := timeout.New(timeout.Settings{Name: "recs", Timeout: time.Second})
	targets.AddTimeout("recs", recsTimeout)
	cacheOn := &fallback.Toggle{}
	targets.AddFallback("cache", cacheOn)
	// A switch whose signal was never read (NaN) and that never releases
	// (-Inf): neither may break the JSON.
	targets.AddDegrade("db-p95", degrade.New(degrade.Settings{Signal: func() float64 { return math.NaN() }, Threshold: 1, Release: math.Inf(-1)}))
	path := filepath.Join(t.TempDir(), "policies.yaml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("breakers:\n  db:\n    open_duration: 2s\n")
	w, err := reload.Watch(path, targets, reload.WatchSettings{Debounce: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", admin.Handler(admin.Options{Targets: targets, Watcher: w, Token: "s3cret"})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	do := func(method, path, token string, into any) int {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+"/admin"+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if into != nil {
			if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
		}
		return resp.StatusCode
	}
	if code := do("GET", "/", "", nil); code != 401 {
		t.Fatalf("no token: %d, want 401", code)
	}
	if code := do("GET", "/", "wrong", nil); code != 401 {
		t.Fatalf("wrong token: %d, want 401", code)
	}
	var st admin.State
	if code := do("GET", "/", "s3cret", &st); code != 200 || len(st.Breakers) != 1 || st.Breakers[0].Name != "db" ||
		len(st.Retries) != 1 || st.Retries[0].MaxAttempts != 3 || len(st.Limiters) != 1 || st.Limiters[0].Rate != 100 || len(st.Versions) != 2 ||
		len(st.Timeouts) != 1 || st.Timeouts[0].Timeout != time.Second || len(st.Fallbacks) != 1 || !st.Fallbacks[0].Enabled ||
		len(st.Degrade) != 1 || st.Degrade[0].Signal != nil || st.Degrade[0].Release != nil || st.Degrade[0].Threshold != 1 {
		t.Fatalf("GET /: %d %+v", code, st)
	}
	var snap circuitbreaker.Snapshot
	if code := do("POST", "/breakers/db/open?reason=maintenance", "s3cret", &snap); code != 200 || snap.State != circuitbreaker.Open || snap.OverrideReason != "maintenance" {
		t.Fatalf("force open: %d %+v", code, snap)
	}
	if _, err := db.Allow(context.Background()); !errors.Is(err, breakerimpl.ErrOpen) {
		t.Fatalf("forced open, Allow: %v", err)
	}
	if code := do("POST", "/breakers/db/closed", "s3cret", &snap); code != 200 || snap.State != circuitbreaker.Closed {
		t.Fatalf("force closed: %d %+v", code, snap)
	}
	if code := do("POST", "/breakers/db/automatic", "s3cret", &snap); code != 200 || snap.Override != circuitbreaker.Automatic {
		t.Fatalf("automatic: %d %+v", code, snap)
	}
	if code := do("POST", "/breakers/nope/open", "s3cret", nil); code != 404 {
		t.Fatalf("unknown breaker: %d", code)
	}
	if code := do("GET", "/breakers/db/open", "s3cret", nil); code != 405 {
		t.Fatalf("GET of a change: %d, want 405", code)
	}

	write("breakers:\n  db:\n    open_duration: 9s\nlimiters:\n  search:\n    rate: 5\ntimeouts:\n  recs:\n    timeout: 50ms\nfallbacks:\n  cache:\n    enabled: false\n")
	if code := do("POST", "/reload", "s3cret", &st); code != 200 || db.Settings().OpenDuration != 9*time.Second || st.Versions[len(st.Versions)-1].Name != "v2" ||
		st.Timeouts[0].Timeout != 50*time.Millisecond || st.Fallbacks[0].Enabled || cacheOn.Enabled() {
		t.Fatalf("reload: %d, open duration %v, timeouts %+v, fallbacks %+v, versions %+v", code, db.Settings().OpenDuration, st.Timeouts, st.Fallbacks, st.Versions)
	}
	write("breakers:\n  db:\n    open_duration: nine\n")
	var bad map[string]string
	if code := do("POST", "/reload", "s3cret", &bad); code != 422 || bad["error"] == "" || db.Settings().OpenDuration != 9*time.Second {
		t.Fatalf("reload of a bad file: %d %v", code, bad)
	}
	if code := do("POST", "/rollback/v1", "s3cret", &st); code != 200 || db.Settings().OpenDuration != 2*time.Second || st.Limiters[0].Rate != 100 ||
		recsTimeout.Timeout() != time.Second || !cacheOn.Enabled() {
		t.Fatalf("rollback to v1: %d, open duration %v, %+v", code, db.Settings().OpenDuration, st.Limiters)
	}
	if code := do("POST", "/rollback/v42", "s3cret", &bad); code != 404 {
		t.Fatalf("rollback to an unknown version: %d %v", code, bad)
	}
}
