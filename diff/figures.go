package diff

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/chaoskit/chaoskit/contract"
)

// Worse says which way of a figure is worse for the users.
type Worse string

// The directions. A figure with no worse side (a request count) is shown,
// and is never a regression nor an improvement.
const (
	Higher  Worse = "higher"
	Lower   Worse = "lower"
	Neither Worse = ""
)

// Units of figures: what a value counts, and how its band's floor is
// chosen (see floor).
const (
	UnitMs      = "ms"    // a latency
	UnitSeconds = "s"     // a time: to degrade, to recover, a breaker open
	UnitPercent = "%"     // a share of requests; deltas are in points
	UnitCount   = "count" // writes, transitions
	UnitVerdict = "pass"  // a verdict: 1 pass, 0 fail
	UnitRate    = "req/s"
	UnitNumber  = "" // a probe value, a metric expression
)

// Key names one figure of a scenario: run figures have no Contract;
// Fault is set for a fault's bill.
type Key struct {
	Scenario string `json:"scenario"`
	Contract string `json:"contract,omitempty"`
	Phase    string `json:"phase,omitempty"`
	Fault    string `json:"fault,omitempty"`
	// Name is the figure's name, matched by gates: p99, share.fallback,
	// status.5xx, breaker.orders.open, bill.failed, verdict, or a check's
	// expectation ("p99 < 200ms").
	Name string `json:"name"`
}

// String is the key as the table shows it: "db-timeout · p99",
// "cached-reads · verdict", "db-timeout · fault db/timeout · bill.failed".
func (k Key) String() string {
	var parts []string
	if k.Contract != "" {
		parts = append(parts, k.Contract)
	} else if k.Phase != "" {
		parts = append(parts, k.Phase)
	}
	if k.Fault != "" {
		parts = append(parts, "fault "+k.Fault)
	}
	parts = append(parts, k.Name)
	return strings.Join(parts, " · ")
}

// value is one repetition's figure: a number, or the reason there is none.
type value struct {
	v       float64
	known   bool
	unknown string
}

// meta is what a figure is, whatever its values.
type meta struct {
	unit  string
	worse Worse
}

// figureSet is the figures of one run, by key, in the order first met.
type figureSet struct {
	keys []Key
	meta map[Key]meta
	vals map[Key]value
}

func newFigureSet() *figureSet {
	return &figureSet{meta: map[Key]meta{}, vals: map[Key]value{}}
}

func (s *figureSet) put(k Key, m meta, v value) {
	if _, ok := s.vals[k]; !ok {
		s.keys = append(s.keys, k)
	}
	s.meta[k] = m
	s.vals[k] = v
}

func (s *figureSet) num(k Key, unit string, worse Worse, v float64) {
	s.put(k, meta{unit, worse}, value{v: v, known: true})
}

func (s *figureSet) unknown(k Key, unit string, worse Worse, why string) {
	s.put(k, meta{unit, worse}, value{unknown: why})
}

// figures lists every figure of one run: per phase the class shares,
// status classes, p50/p90/p99 and throughput, the breakers' open time and
// transitions; per fault its bill; per contract its verdict and the figure
// of each check that measures one.
func figures(r Run) *figureSet {
	s := newFigureSet()
	sc := r.Scenario
	if m := r.Measurement; m != nil {
		faulted := map[string]bool{}
		for _, f := range m.Faults {
			faulted[f.Phase] = true
		}
		for _, p := range m.Phases {
			k := Key{Scenario: sc, Phase: p.Name}
			at := func(name string) Key { k := k; k.Name = name; return k }
			s.num(at("requests"), UnitCount, Neither, float64(p.Requests))
			if p.Requests == 0 {
				why := "no requests in the phase"
				for _, n := range []string{"p50", "p90", "p99"} {
					s.unknown(at(n), UnitMs, Higher, why)
				}
				for _, c := range contract.Classes {
					s.unknown(at("share."+string(c)), UnitPercent, classWorse(c, faulted[p.Name]), why)
				}
				continue
			}
			s.num(at("rps"), UnitRate, Lower, p.RPS)
			s.num(at("p50"), UnitMs, Higher, ms(p.P50))
			s.num(at("p90"), UnitMs, Higher, ms(p.P90))
			s.num(at("p99"), UnitMs, Higher, ms(p.P99))
			for _, c := range contract.Classes {
				s.num(at("share."+string(c)), UnitPercent, classWorse(c, faulted[p.Name]), pct(p.Classes[c], p.Requests))
			}
			groups := map[string]int{}
			for code, n := range p.Statuses {
				groups[statusGroup(code)] += n
			}
			for _, g := range []string{"2xx", "3xx", "4xx", "5xx", "none"} {
				w := Higher
				if g == "2xx" {
					w = Lower
				}
				s.num(at("status."+g), UnitPercent, w, pct(groups[g], p.Requests))
			}
			for _, b := range p.Breakers {
				s.num(at("breaker."+b.Name+".open"), UnitSeconds, Higher, b.Open.Seconds())
				s.num(at("breaker."+b.Name+".transitions"), UnitCount, Higher, float64(b.Transitions))
			}
		}
		for _, b := range billsNamed(m.Bills) {
			billFigures(s, sc, b)
		}
	}
	for _, v := range r.Verdicts {
		k := Key{Scenario: sc, Contract: v.Name, Phase: v.Phase, Name: "verdict"}
		switch v.Outcome {
		case contract.Pass:
			s.num(k, UnitVerdict, Lower, 1)
		case contract.Fail:
			s.num(k, UnitVerdict, Lower, 0)
		default:
			s.unknown(k, UnitVerdict, Lower, "inconclusive: "+v.Reason)
		}
		for _, c := range v.Checks {
			ck := Key{Scenario: sc, Contract: v.Name, Phase: v.Phase, Name: c.Expect}
			unit, worse := checkUnit(c)
			if c.Value == nil {
				if c.Outcome == contract.Inconclusive || c.Reason != "" {
					s.unknown(ck, unit, worse, firstNonEmpty(c.Reason, c.Measured))
				}
				continue
			}
			v := *c.Value
			if unit == UnitMs {
				v *= 1000
			}
			s.num(ck, unit, worse, v)
			if c.Writes != nil {
				wk := ck
				wk.Name = "writes.lost"
				s.num(wk, UnitCount, Higher, float64(c.Writes.Lost))
				wk.Name = "writes.unknown"
				s.num(wk, UnitCount, Higher, float64(c.Writes.Unknown))
			}
		}
	}
	if r.Err != "" && r.Measurement == nil {
		s.unknown(Key{Scenario: sc, Name: "run"}, UnitVerdict, Lower, r.Err)
	}
	return s
}

// billsNamed gives a fault switched on more than once in one phase a
// number after its name from its second time on (db/timeout #2), so that
// each time has figures of its own.
func billsNamed(bills []contract.Bill) []contract.Bill {
	seen := map[[2]string]int{}
	out := make([]contract.Bill, len(bills))
	for i, b := range bills {
		k := [2]string{b.Phase, b.Fault}
		seen[k]++
		if n := seen[k]; n > 1 {
			b.Fault = fmt.Sprintf("%s #%d", b.Fault, n)
		}
		out[i] = b
	}
	return out
}

// billFigures adds the figures of one fault's bill. Shares are compared,
// not counts, so that a phase that ran a little longer on one side does
// not look worse; the bill itself shows the counts.
func billFigures(s *figureSet, sc string, b contract.Bill) {
	k := Key{Scenario: sc, Phase: b.Phase, Fault: b.Fault}
	at := func(name string) Key { k := k; k.Name = name; return k }
	if b.Requests == 0 {
		why := "no requests sent while the fault was on"
		for _, n := range []string{"bill.failed", "bill.degraded", "bill.stale", "bill.refused"} {
			s.unknown(at(n), UnitPercent, Higher, why)
		}
	} else {
		s.num(at("bill.failed"), UnitPercent, Higher, pct(b.Failed, b.Requests))
		// More fallback under a fault is not worse in itself (it is what
		// stands between a user and an error): the failed share says
		// whether users lost; degraded is shown, never gated on its own.
		s.num(at("bill.degraded"), UnitPercent, Neither, pct(b.Degraded, b.Requests))
		s.num(at("bill.stale"), UnitPercent, Higher, pct(b.Stale, b.Requests))
		s.num(at("bill.refused"), UnitPercent, Higher, pct(b.Refused, b.Requests))
	}
	if b.P99Added != nil {
		s.num(at("bill.p99_added"), UnitMs, Higher, ms(*b.P99Added))
	} else {
		s.unknown(at("bill.p99_added"), UnitMs, Higher, firstNonEmpty(b.P99Unknown, "no baseline phase to add to"))
	}
	if b.DegradedIn != nil {
		s.num(at("bill.time_to_degrade"), UnitSeconds, Higher, b.DegradedIn.Seconds())
	} else {
		s.unknown(at("bill.time_to_degrade"), UnitSeconds, Higher, firstNonEmpty(b.DegradeUnknown, "did not degrade"))
	}
	if b.Recovered != nil {
		s.num(at("bill.recover"), UnitSeconds, Higher, b.Recovered.Seconds())
	} else {
		s.unknown(at("bill.recover"), UnitSeconds, Higher, firstNonEmpty(b.RecoverUnknown, "did not recover"))
	}
	if b.Writes != nil {
		s.num(at("bill.writes_lost"), UnitCount, Higher, float64(b.Writes.Lost))
		s.num(at("bill.writes_unknown"), UnitCount, Higher, float64(b.Writes.Unknown))
	}
}

// classWorse is the worse side of a class's share. Primary is the answer
// users want; errors, timeouts and refusals are worse the more there are.
// A fallback answer under a fault is what stands between a user and an
// error, so fewer of them there is worse; in a phase with no fault a
// fallback is degradation without cause, so more of them is worse.
func classWorse(c contract.Class, faulted bool) Worse {
	switch c {
	case contract.Primary:
		return Lower
	case contract.Fallback:
		if faulted {
			return Lower
		}
		return Higher
	}
	return Higher
}

// checkUnit is the unit and worse side of a check's figure: the worse side
// is the one its threshold forbids (p99 < 200ms: higher is worse), and
// neither for == and !=.
func checkUnit(c contract.CheckResult) (string, Worse) {
	unit := UnitNumber
	switch c.Unit {
	case contract.UnitSeconds:
		unit = UnitMs
		if strings.HasPrefix(c.Expect, "time_to") || strings.Contains(c.Expect, "breaker") {
			unit = UnitSeconds
		}
	case contract.UnitPercent:
		unit = UnitPercent
	case contract.UnitCount:
		unit = UnitCount
	}
	switch c.Worse {
	case "higher":
		return unit, Higher
	case "lower":
		return unit, Lower
	}
	return unit, Neither
}

func statusGroup(code string) string {
	n, err := strconv.Atoi(code)
	if err != nil || n <= 0 {
		return "none"
	}
	return fmt.Sprintf("%dxx", n/100)
}

func pct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// unionKeys is the union of the keys of sets, in the order first met.
func unionKeys(sets ...[]*figureSet) []Key {
	seen := map[Key]bool{}
	var out []Key
	for _, ss := range sets {
		for _, s := range ss {
			for _, k := range s.keys {
				if !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
	}
	return out
}
