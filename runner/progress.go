package runner

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// phaseStats counts a phase's responses as they arrive.
type phaseStats struct {
	n, ok, fallback, failed atomic.Int64
}

// add counts one result: ok is a 2xx/3xx served by the primary, fallback a
// 2xx/3xx whose X-Chaoskit-Source names a fallback (anything but db,
// upstream and primary, as the contract package's default classification
// has it), failed everything else.
func (s *phaseStats) add(res *vegeta.Result) {
	s.n.Add(1)
	switch {
	case res.Code < 200 || res.Code >= 400:
		s.failed.Add(1)
	case isFallback(res.Headers.Get("X-Chaoskit-Source")):
		s.fallback.Add(1)
	default:
		s.ok.Add(1)
	}
}

func isFallback(source string) bool {
	return source != "" && source != "db" && source != "upstream" && source != "primary"
}

type statsSnapshot struct {
	n, ok, fallback, failed int64
}

func (s *phaseStats) snapshot() statsSnapshot {
	return statsSnapshot{s.n.Load(), s.ok.Load(), s.fallback.Load(), s.failed.Load()}
}

func share(a, n int64) float64 {
	if n == 0 {
		return 0
	}
	return 100 * float64(a) / float64(n)
}

// progressLine is the live line shown on a terminal while a phase runs.
func progressLine(phase string, elapsed, total time.Duration, st statsSnapshot, breakers string) string {
	rate := 0.0
	if elapsed > 0 {
		rate = float64(st.n) / elapsed.Seconds()
	}
	clock := fmt.Sprintf("%.1fs/%.1fs", elapsed.Seconds(), total.Seconds())
	line := fmt.Sprintf("  %-20s %-12s %6.0f req/s  ok %5.1f%%  fallback %5.1f%%  error %5.1f%%",
		phase, clock, rate, share(st.ok, st.n), share(st.fallback, st.n), share(st.failed, st.n))
	if breakers != "" {
		line += "  " + breakers
	}
	return line
}

// breakerStates summarises the breakers of a state sample, as
// {"breakers": {"db": {"state": "open"}}} holds them: "breaker db=open".
func breakerStates(doc map[string]any) string {
	bs, ok := doc["breakers"].(map[string]any)
	if !ok || len(bs) == 0 {
		return ""
	}
	names := make([]string, 0, len(bs))
	for n := range bs {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		state := "?"
		switch v := bs[n].(type) {
		case map[string]any:
			if s, ok := v["state"].(string); ok {
				state = s
			}
		case string:
			state = v
		}
		parts = append(parts, n+"="+state)
	}
	return "breaker " + strings.Join(parts, " ")
}
