package inject

import (
	"encoding/json"
	"net/http"
	"sort"
	"sync/atomic"
)

// Hits returns how often each failpoint's marker fired through Fire since
// the process started, keyed by full failpoint path. A marker fired by a term
// that did not come from chaoskit is counted under its package's import path.
func Hits() map[string]int64 {
	out := map[string]int64{}
	hits.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// HitsReport is what HitsHandler serves and the runner reads.
type HitsReport struct {
	// Hits is Hits().
	Hits map[string]int64 `json:"hits"`
	// FaultInjection says whether the service's markers are live (it was
	// built with failpoint rewriting). Nil when the service cannot tell.
	FaultInjection *bool `json:"fault_injection,omitempty"`
	// Points lists the service's failpoints, when it knows them.
	Points []string `json:"points,omitempty"`
}

// HitsPath is where services conventionally mount HitsHandler.
const HitsPath = "/debug/chaoskit/faults"

// HitsHandler serves a HitsReport as JSON. live reports whether markers are
// rewritten (nil if unknown); points lists the service's failpoints (may be
// nil). Mount it on the service's mux:
//
//	mux.Handle(inject.HitsPath, inject.HitsHandler(nil, nil))
func HitsHandler(live func() bool, points []string) http.Handler {
	sorted := append([]string(nil), points...)
	sort.Strings(sorted)
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		rep := HitsReport{Hits: Hits(), Points: sorted}
		if live != nil {
			l := live()
			rep.FaultInjection = &l
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	})
}
