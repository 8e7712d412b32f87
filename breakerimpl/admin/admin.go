// Package admin is an HTTP handler an operator uses on a running service,
// as resilience4j's actuator endpoints are: it lists the breakers and the
// tunable policies with their state and settings, forces a breaker open or
// closed (or back to automatic), re-reads the policy file, and rolls the
// policies back to a named version of reload's history. A service mounts
// it where it wants, behind its own authentication, or with Options.Token:
//
//	mux.Handle("/admin/", http.StripPrefix("/admin", admin.Handler(admin.Options{Targets: &targets, Watcher: w, Token: token})))
//
// Routes (paths below the mount point; every answer is JSON):
//
//	GET  /                             breakers, retries, limiters, timeouts, bulkheads,
//	                                   fallbacks, health scores, degrade switches, versions
//	POST /breakers/{name}/open         force open   (?reason=…)
//	POST /breakers/{name}/closed       force closed (?reason=…)
//	POST /breakers/{name}/automatic    back to the rule (?reason=…)
//	POST /reload                       re-read the policy file (Options.Watcher)
//	POST /rollback/{version}           restore a version ("initial", "v2", …)
//
// A change is a POST, so that a crawler or a prefetching browser following
// a link changes nothing.
package admin

import (
	"crypto/subtle"
	"encoding/json"
	"maps"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/reload"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
)

// Options configures Handler. Targets is required.
type Options struct {
	// Targets holds the breakers and policies served.
	Targets *reload.Targets
	// Watcher, if set, is what POST /reload re-reads; without it /reload
	// answers 404.
	Watcher *reload.Watcher
	// Token, if set, must come as "Authorization: Bearer TOKEN" on every
	// request; a request without it gets 401. Empty means the mounting
	// service authenticates.
	Token string
}

// State is the answer of GET /.
type State struct {
	Breakers []circuitbreaker.Snapshot `json:"breakers"`
	Retries  []RetryState              `json:"retries"`
	Limiters []LimiterState            `json:"limiters"`
	// Timeouts, Bulkheads, Fallbacks, Health and Degrade are the other
	// tunable policies, by name.
	Timeouts  []TimeoutState  `json:"timeouts"`
	Bulkheads []BulkheadState `json:"bulkheads"`
	Fallbacks []FallbackState `json:"fallbacks"`
	Health    []HealthState   `json:"health"`
	Degrade   []DegradeState  `json:"degrade"`
	// Versions are the policy versions kept, oldest first; the last is in
	// force.
	Versions []reload.Version `json:"versions"`
}

// RetryState is a retry policy's settings in force and counts.
type RetryState struct {
	Name        string        `json:"name"`
	MaxAttempts int           `json:"max_attempts"`
	Backoff     time.Duration `json:"backoff"`
	MaxBackoff  time.Duration `json:"max_backoff"`
	Retries     uint64        `json:"retries"`
	GaveUp      uint64        `json:"gave_up"`
}

// LimiterState is a token bucket's settings in force.
type LimiterState struct {
	Name  string  `json:"name"`
	Rate  float64 `json:"rate"`
	Burst int     `json:"burst"`
}

// TimeoutState is a timeout's settings in force and counts.
type TimeoutState struct {
	Name         string        `json:"name"`
	Timeout      time.Duration `json:"timeout"`
	Mode         string        `json:"mode"`
	MaxAbandoned int           `json:"max_abandoned"`
	TimedOut     uint64        `json:"timed_out"`
	Abandoned    int64         `json:"abandoned"`
}

// BulkheadState is a bulkhead's settings in force and counts.
type BulkheadState struct {
	Name          string        `json:"name"`
	MaxConcurrent int           `json:"max_concurrent"`
	MaxWait       time.Duration `json:"max_wait"`
	InFlight      int           `json:"in_flight"`
	Waiting       int           `json:"waiting"`
	Rejected      uint64        `json:"rejected"`
}

// FallbackState says whether a fallback toggle is on.
type FallbackState struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
}

// HealthState is a health score's figures in force and its last report.
type HealthState struct {
	Name      string  `json:"name"`
	Healthy   bool    `json:"healthy"`
	Score     float64 `json:"score"`
	Threshold float64 `json:"threshold"`
	// LatencyTarget and LatencyLimit are the p95 that scores 1 and 0.
	LatencyTarget time.Duration `json:"latency_target"`
	LatencyLimit  time.Duration `json:"latency_limit"`
	MaxErrorRate  float64       `json:"max_error_rate"`
	MinRequests   int           `json:"min_requests"`
}

// DegradeState is a degrade switch's figures in force and state.
type DegradeState struct {
	Name     string `json:"name"`
	Engaged  bool   `json:"engaged"`
	Override string `json:"override"`
	// Signal is the last reading; absent before the first.
	Signal    *float64      `json:"signal,omitempty"`
	Threshold float64       `json:"threshold"`
	Release   *float64      `json:"release,omitempty"` // absent when it never releases (-Inf)
	For       time.Duration `json:"for"`
	Hold      time.Duration `json:"hold"`
}

// Handler returns the admin handler.
func Handler(o Options) http.Handler {
	if o.Targets == nil {
		panic("admin: Options.Targets is required")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, state(o.Targets)) })
	mux.HandleFunc("POST /breakers/{name}/{to}", func(w http.ResponseWriter, r *http.Request) {
		b, ok := o.Targets.Breakers()[r.PathValue("name")]
		if !ok {
			writeError(w, http.StatusNotFound, "no breaker "+r.PathValue("name"))
			return
		}
		reason := r.URL.Query().Get("reason")
		if reason == "" {
			reason = "admin"
		}
		switch r.PathValue("to") {
		case "open":
			b.ForceOpen(reason)
		case "closed":
			b.ForceClosed(reason)
		case "automatic":
			b.ResumeAutomatic(reason)
		default:
			writeError(w, http.StatusNotFound, "a breaker can be forced open, closed, or back to automatic, not "+r.PathValue("to"))
			return
		}
		writeJSON(w, http.StatusOK, b.Snapshot())
	})
	mux.HandleFunc("POST /reload", func(w http.ResponseWriter, _ *http.Request) {
		if o.Watcher == nil {
			writeError(w, http.StatusNotFound, "no policy file to reload")
			return
		}
		if err := o.Watcher.Reload(); err != nil {
			writeError(w, http.StatusUnprocessableEntity, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, state(o.Targets))
	})
	mux.HandleFunc("POST /rollback/{version}", func(w http.ResponseWriter, r *http.Request) {
		if err := o.Targets.Rollback(r.PathValue("version")); err != nil {
			writeError(w, http.StatusNotFound, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, state(o.Targets))
	})
	if o.Token == "" {
		return mux
	}
	want := []byte("Bearer " + o.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="admin"`)
			writeError(w, http.StatusUnauthorized, "a bearer token is required")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func state(t *reload.Targets) State {
	st := State{Breakers: []circuitbreaker.Snapshot{}, Retries: []RetryState{}, Limiters: []LimiterState{}, Versions: t.Versions()}
	bs := t.Breakers()
	for _, n := range slices.Sorted(maps.Keys(bs)) {
		st.Breakers = append(st.Breakers, bs[n].Snapshot())
	}
	rs := t.Retries()
	for _, n := range slices.Sorted(maps.Keys(rs)) {
		st.Retries = append(st.Retries, retryState(n, rs[n]))
	}
	ls := t.Limiters()
	for _, n := range slices.Sorted(maps.Keys(ls)) {
		l := ls[n].Limiter()
		st.Limiters = append(st.Limiters, LimiterState{Name: n, Rate: float64(l.Limit()), Burst: l.Burst()})
	}
	guardState(&st, t)
	if st.Versions == nil {
		st.Versions = []reload.Version{}
	}
	return st
}

func retryState(name string, r *retry.Retry) RetryState {
	s, snap := r.Settings(), r.Snapshot()
	return RetryState{Name: name, MaxAttempts: s.MaxAttempts, Backoff: s.Backoff, MaxBackoff: s.MaxBackoff, Retries: snap.Retries, GaveUp: snap.GaveUp}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// guardState adds the timeouts, bulkheads, fallbacks, health scores and
// degrade switches of t to st, each sorted by name.
func guardState(st *State, t *reload.Targets) {
	st.Timeouts, st.Bulkheads, st.Fallbacks = []TimeoutState{}, []BulkheadState{}, []FallbackState{}
	st.Health, st.Degrade = []HealthState{}, []DegradeState{}
	tos := t.Timeouts()
	for _, n := range slices.Sorted(maps.Keys(tos)) {
		s := tos[n].Snapshot()
		st.Timeouts = append(st.Timeouts, TimeoutState{Name: n, Timeout: s.Timeout, Mode: s.Mode.String(),
			MaxAbandoned: tos[n].MaxAbandoned(), TimedOut: s.TimedOut, Abandoned: s.Abandoned})
	}
	bhs := t.Bulkheads()
	for _, n := range slices.Sorted(maps.Keys(bhs)) {
		s := bhs[n].Snapshot()
		st.Bulkheads = append(st.Bulkheads, BulkheadState{Name: n, MaxConcurrent: s.MaxConcurrent, MaxWait: s.MaxWait,
			InFlight: s.InFlight, Waiting: s.Waiting, Rejected: s.Rejected})
	}
	fbs := t.Fallbacks()
	for _, n := range slices.Sorted(maps.Keys(fbs)) {
		st.Fallbacks = append(st.Fallbacks, FallbackState{Name: n, Enabled: fbs[n].Enabled()})
	}
	hs := t.HealthScores()
	for _, n := range slices.Sorted(maps.Keys(hs)) {
		s, tu := hs[n].Snapshot(), hs[n].Tuning()
		st.Health = append(st.Health, HealthState{Name: n, Healthy: s.Healthy, Score: s.Score, Threshold: tu.Threshold,
			LatencyTarget: tu.LatencyTarget, LatencyLimit: tu.LatencyLimit, MaxErrorRate: tu.MaxErrorRate, MinRequests: tu.MinRequests})
	}
	ds := t.DegradeSwitches()
	for _, n := range slices.Sorted(maps.Keys(ds)) {
		s, tu := ds[n].Snapshot(), ds[n].Tuning()
		d := DegradeState{Name: n, Engaged: s.Engaged, Override: s.Override, Threshold: tu.Threshold, For: tu.For, Hold: tu.Hold}
		if !math.IsNaN(s.Signal) && !math.IsInf(s.Signal, 0) {
			d.Signal = &s.Signal
		}
		if !math.IsInf(tu.Release, -1) {
			d.Release = &tu.Release
		}
		st.Degrade = append(st.Degrade, d)
	}
}
