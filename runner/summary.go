package runner

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// Summary is a run's record in brief, written to SummaryFile: what ran, how
// much load each phase achieved, and how quickly the control endpoint
// acknowledged each fault switch.
type Summary struct {
	Scenario string    `json:"scenario"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	// Outcome is completed, interrupted or error; Error says why.
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	// StoppedIn is the phase a run that was stopped early stopped in
	// (empty: before the first phase, or between phases).
	StoppedIn string `json:"stopped_in,omitempty"`
	// RolledBack lists the faults that were still on when the run stopped
	// and were switched off on the way out, as "point" or "proxy:NAME".
	RolledBack []string       `json:"rolled_back,omitempty"`
	Requests   int64          `json:"requests"`
	Phases     []PhaseSummary `json:"phases"`
	// FaultAcks measures, over every fault switched on or off, the time
	// from the moment it was due to the endpoint's acknowledgement.
	FaultAcks AckStats `json:"fault_acks"`
}

// PhaseSummary is one phase of a Summary.
type PhaseSummary struct {
	Name     string        `json:"name"`
	Planned  time.Duration `json:"planned_ns"`
	Actual   time.Duration `json:"actual_ns"`
	Load     string        `json:"load"`
	Requests int64         `json:"requests"`
	// Rate is the achieved rate in requests per second.
	Rate float64 `json:"rate"`
	// Classes counts the phase's requests by class, as the contracts
	// classify them; absent when the run had no classifier.
	Classes map[timeline.Class]int64 `json:"classes,omitempty"`
	// Chains, for a load of request chains, says what its iterations did.
	Chains *ChainFigures `json:"chains,omitempty"`
}

// ChainFigures are what a phase's request chains did: the iterations
// started (the pacer paces them), those the phase's end cut before their
// last step, and those stopped before a step for want of a capture, with
// a sentence per step and capture ("12 iterations of chain
// link-lifecycle stopped before read: capture code missing (create got
// 500 ×9, create got no response ×3)").
type ChainFigures struct {
	Iterations int64    `json:"iterations"`
	Cut        int64    `json:"cut"`
	Stopped    int64    `json:"stopped"`
	Stops      []string `json:"stops,omitempty"`
}

// AckStats summarises acknowledgement delays.
type AckStats struct {
	Count int           `json:"count"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
}

func (s *Summary) begin(sc *plan.Scenario, start time.Time) {
	s.Scenario, s.Start = sc.Name, start
}

func (s *Summary) addPhase(p *plan.Phase, l plan.Load, start, end time.Time, st statsSnapshot) {
	took := end.Sub(start)
	rate := 0.0
	if took > 0 {
		rate = float64(st.n) / took.Seconds()
	}
	s.Requests += st.n
	s.Phases = append(s.Phases, PhaseSummary{Name: p.Name, Planned: p.Duration.D(), Actual: took, Load: describeLoad(l),
		Requests: st.n, Rate: rate, Classes: st.classes})
}

func (s *Summary) end(at time.Time, err error, tl *timeline.Timeline) {
	s.End = at
	switch {
	case err == nil:
		s.Outcome = "completed"
	case errors.Is(err, ErrInterrupted):
		s.Outcome = "interrupted"
	default:
		s.Outcome = "error"
	}
	if err != nil {
		s.Error = err.Error()
	}
	var acks []time.Duration
	for _, e := range tl.Events {
		if e.Kind == timeline.FaultOff && e.Message == rolledBack {
			s.RolledBack = append(s.RolledBack, e.Point)
		}
		if (e.Kind == timeline.FaultOn || e.Kind == timeline.FaultOff) && e.Ack > 0 {
			acks = append(acks, e.Ack)
		}
	}
	sort.Strings(s.RolledBack)
	s.FaultAcks = AckSummary(acks)
}

// Interruption says in a line how a run that did not complete ended:
// where it stopped and what was rolled back.
func (s *Summary) Interruption() string {
	var b strings.Builder
	if s.StoppedIn != "" {
		fmt.Fprintf(&b, "stopped in phase %q", s.StoppedIn)
	} else {
		b.WriteString("stopped outside any phase")
	}
	if !s.Start.IsZero() && s.End.After(s.Start) {
		fmt.Fprintf(&b, ", %v into the run", s.End.Sub(s.Start).Round(time.Millisecond))
	}
	if len(s.RolledBack) > 0 {
		fmt.Fprintf(&b, "; rolled back: %s", strings.Join(s.RolledBack, ", "))
	} else {
		b.WriteString("; no fault was on")
	}
	return b.String()
}

// AckSummary computes the count, 99th percentile (nearest rank) and maximum
// of acknowledgement delays.
func AckSummary(acks []time.Duration) AckStats {
	if len(acks) == 0 {
		return AckStats{}
	}
	sorted := append([]time.Duration(nil), acks...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	rank := (99*len(sorted) + 99) / 100 // ceil(0.99 n)
	return AckStats{Count: len(sorted), P99: sorted[rank-1], Max: sorted[len(sorted)-1]}
}
