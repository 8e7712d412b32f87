package runner

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// phaseStats counts a phase's responses by class as they arrive. The class
// is the one the run's classifier (plan.Scenario.Classifier) gives, the same that
// contracts and reports judge by.
type phaseStats struct {
	n       atomic.Int64
	classes [5]atomic.Int64 // indexed as timeline.Classes
}

// add counts one request of class c; an empty class (no classifier) is
// counted in the total only.
func (s *phaseStats) add(c timeline.Class) {
	s.n.Add(1)
	for i, k := range timeline.Classes {
		if k == c {
			s.classes[i].Add(1)
			return
		}
	}
}

// statsSnapshot is a phase's counts at one moment.
type statsSnapshot struct {
	n       int64
	classes map[timeline.Class]int64
}

func (s *phaseStats) snapshot() statsSnapshot {
	st := statsSnapshot{n: s.n.Load(), classes: map[timeline.Class]int64{}}
	for i, k := range timeline.Classes {
		if v := s.classes[i].Load(); v > 0 {
			st.classes[k] = v
		}
	}
	return st
}

// shares renders the class shares, in the order reports show classes,
// leaving out classes that did not occur: "primary 60.0%  fallback 40.0%".
func (st statsSnapshot) shares() string {
	var parts []string
	for _, k := range timeline.Classes {
		if v := st.classes[k]; v > 0 {
			parts = append(parts, fmt.Sprintf("%s %5.1f%%", k, share(v, st.n)))
		}
	}
	return strings.Join(parts, "  ")
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
	line := fmt.Sprintf("  %-20s %-12s %6.0f req/s", phase, clock, rate)
	if sh := st.shares(); sh != "" {
		line += "  " + sh
	}
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
