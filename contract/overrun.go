package contract

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// plannedEnd is when p was planned to end: its start and planned length,
// or its real end when that came first or the record holds no plan.
func plannedEnd(p timeline.Phase) time.Time {
	if p.Planned <= 0 {
		return p.End
	}
	if e := p.Start.Add(p.Planned); e.Before(p.End) {
		return e
	}
	return p.End
}

// overrunText says how long a phase ran against its plan.
func overrunText(p timeline.Phase, o time.Duration) string {
	return fmt.Sprintf("phase %s ran %s of a planned %s (%s over)", strconv.Quote(p.Name), roundDur(p.End.Sub(p.Start)), roundDur(p.Planned), roundDur(o))
}

func roundDur(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// overrunFinding is the finding of a phase that overran: its figure, why,
// and what it moved.
func overrunFinding(p timeline.Phase, o time.Duration, slowest time.Duration) Finding {
	msg := overrunText(p, o) + ": requests in flight at its planned end held it"
	if slowest > 0 {
		msg += fmt.Sprintf(" (the slowest took %s)", roundDur(slowest))
	}
	msg += "; every later phase started that much later, and each contract on it says so"
	return Finding{Kind: "phase_overrun", Phase: p.Name, Message: msg}
}

// overrunNotes are the notes of a window the overruns of the run move:
// its own phase overran (its end moved; `last` counts back from the
// planned end), or, for a window on the whole run, any phase did.
func (w *window) overrunNotes() []string {
	var notes []string
	for _, p := range w.tl.Phases() {
		if w.spec.Phase != "" && p.Name != w.spec.Phase {
			continue
		}
		o := p.Overrun()
		if o == 0 {
			continue
		}
		var moved []string
		if w.spec.Phase != "" {
			moved = append(moved, "the window ends at its real end, so it holds the answers of requests held past the plan")
			if w.spec.Last > 0 {
				moved = append(moved, fmt.Sprintf("its last %s is counted back from the planned end", w.spec.Last))
			}
		} else {
			moved = append(moved, "every later phase started that much later")
		}
		notes = append(notes, overrunText(p, o)+": requests in flight at its planned end held it; "+strings.Join(moved, "; "))
	}
	return notes
}
