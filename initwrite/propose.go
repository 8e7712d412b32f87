package initwrite

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// baselinePhase is the name of the first phase, the one with no fault.
const baselinePhase = "baseline"

// Bands: how far a proposed contract lets a figure move from the
// baseline. They are wide on purpose: a proposal must hold on a healthy
// service on a busy machine, and still catch a service that stops
// answering.
const (
	// errorSlack is ε in "error share ≤ baseline + ε".
	errorSlack = 0.02
	// LatencyFactor and LatencySlack make the band of p99:
	// max(k × baseline p99, baseline p99 + slack). The slack covers a
	// stall of the machine: on a shared 2-core runner a correct service
	// went unscheduled for 270 ms after a Redis fault, and with a window
	// of 80 requests its p99 is that stall; 100 ms failed one run in two.
	LatencyFactor = 3
	LatencySlack  = 300 * time.Millisecond
	// FaultSettle is skipped at the start of a fault phase while the
	// service adapts; RecoveryBound is the time it has to recover after
	// the fault ends, skipped at the start of the phase after it.
	FaultSettle   = 500 * time.Millisecond
	RecoveryBound = time.Second
)

// RouteStats are one route's figures in one phase.
type RouteStats struct {
	Count, Errors int
	latencies     []time.Duration
}

// ErrorShare is the share of requests with no answer or a 5xx.
func (s *RouteStats) ErrorShare() float64 {
	if s.Count == 0 {
		return 0
	}
	return float64(s.Errors) / float64(s.Count)
}

// P99 is the nearest-rank 99th percentile of latency, as contracts
// compute it (failed requests included).
func (s *RouteStats) P99() time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	l := slices.Clone(s.latencies)
	slices.Sort(l)
	rank := int(math.Ceil(0.99*float64(len(l)))) - 1
	return l[max(rank, 0)]
}

// Measurement is what the baseline run measured, per route tag.
type Measurement struct {
	RunDir string
	When   time.Time
	Routes map[string]*RouteStats
}

func (m *Measurement) add(tag string, status int, latency time.Duration) {
	s := m.Routes[tag]
	if s == nil {
		s = &RouteStats{}
		m.Routes[tag] = s
	}
	s.Count++
	if status == 0 || status >= 500 {
		s.Errors++
	}
	s.latencies = append(s.latencies, latency)
}

// Proposal is one proposed contract.
type Proposal struct {
	Name   string
	Phase  string
	Settle time.Duration
	// Tag selects one route's requests; empty, all.
	Tag    string
	Expect []string
	// Measured says, beside the contract, what the baseline measured.
	Measured string
	// Bands says whether Expect are bands of baseline figures, which the
	// baseline phase itself must pass (a time to recover is not).
	Bands bool
}

// Fault is one fault phase of a managed dependency.
type Fault struct {
	Dep   *Managed
	Kind  string // latency, down, restart
	Phase string
	After string
	Words string // how the contracts name it
}

// Faults lists the fault phases, in order.
func (d *Draft) Faults() []Fault {
	var fs []Fault
	for _, m := range d.Deps {
		for _, k := range []string{"latency", "down", "restart"} {
			f := Fault{Dep: m, Kind: k, Phase: m.Name + "-" + k, After: "after-" + m.Name + "-" + k}
			switch k {
			case "latency":
				f.Words = fmt.Sprintf("%s answers %s late", m.Name, d.Opts.Latency)
			case "down":
				f.Words = m.Name + " is unreachable"
			case "restart":
				f.Words = m.Name + " restarts"
			}
			fs = append(fs, f)
		}
	}
	return fs
}

// Propose writes contracts from the baseline measurement: per route,
// error share ≤ baseline + ε while each fault is on; once it is over
// (after RecoveryBound), error share ≤ baseline + ε and p99 within
// max(k × baseline, baseline + slack); and per fault, a time to recover
// within RecoveryBound. A route the baseline did not measure gets none.
func (d *Draft) Propose(m *Measurement) {
	d.Measured, d.Proposals = m, nil
	for _, f := range d.Faults() {
		for _, lr := range d.Routes {
			s := m.Routes[lr.Tag]
			if s == nil || s.Count == 0 {
				continue
			}
			errs := errorBound(s.ErrorShare())
			p99 := s.P99()
			lat := max(LatencyFactor*p99, p99+LatencySlack).Round(time.Millisecond)
			if lat < p99 {
				lat += time.Millisecond
			}
			measured := fmt.Sprintf("baseline: %s errors (%d of %d), p99 %s", pct(s.ErrorShare()), s.Errors, s.Count, p99.Round(10*time.Microsecond))
			d.Proposals = append(d.Proposals,
				&Proposal{Name: fmt.Sprintf("GET %s answers while %s (proposed)", lr.Route.Path, f.Words), Phase: f.Phase, Settle: FaultSettle,
					Tag: lr.Tag, Expect: []string{fmt.Sprintf("status == 0 || status >= 500 for <= %s", errs)}, Measured: measured, Bands: true},
				&Proposal{Name: fmt.Sprintf("GET %s is back to its baseline after %s (proposed)", lr.Route.Path, f.Words), Phase: f.After, Settle: RecoveryBound,
					Tag: lr.Tag, Expect: []string{fmt.Sprintf("status == 0 || status >= 500 for <= %s", errs), fmt.Sprintf("p99 latency < %s", lat)},
					Measured: measured, Bands: true})
		}
		d.Proposals = append(d.Proposals, &Proposal{Name: fmt.Sprintf("recovers within %s after %s (proposed)", RecoveryBound, f.Words),
			Phase: f.After, Expect: []string{fmt.Sprintf("time_to_recover < %s", RecoveryBound)},
			Measured: "a bound, not a measurement: the baseline has no fault to recover from"})
	}
}

// errorBound is baseline + ε as a percentage a contract can state,
// rounded up to a tenth of a percent.
func errorBound(share float64) string {
	v := math.Ceil((share+errorSlack)*1000) / 10
	return pct(v / 100)
}

func pct(share float64) string {
	s := fmt.Sprintf("%.1f", share*100)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		s = s[:len(s)-2]
	}
	return s + "%"
}
