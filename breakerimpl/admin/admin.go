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
//	GET  /                             breakers, retries, limiters, versions
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
