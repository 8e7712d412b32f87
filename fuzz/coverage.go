package fuzz

import (
	"sort"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/plan"
)

// Coverage says what a search exercised: how often each point × action of
// the fault space was scheduled and fired, and how often each invariant
// was judged, with what verdict.
type Coverage struct {
	// Runs is the number of runs counted.
	Runs       int                  `json:"runs"`
	Faults     []*FaultCoverage     `json:"faults"`
	Invariants []*InvariantCoverage `json:"invariants"`
	byKey      map[string]*FaultCoverage
	byName     map[string]*InvariantCoverage
}

// FaultCoverage counts one point × action.
type FaultCoverage struct {
	Key string `json:"fault"`
	// Scheduled counts the faults of that kind in the schedules run; Fired
	// those whose marker fired while on; Hits the marker's firings (for a
	// proxy fault, which has no marker, the times it was switched on).
	Scheduled int   `json:"scheduled"`
	Fired     int   `json:"fired"`
	Hits      int64 `json:"hits"`
}

// InvariantCoverage counts the verdicts of one invariant.
type InvariantCoverage struct {
	Name         string `json:"name"`
	Pass         int    `json:"pass"`
	Fail         int    `json:"fail"`
	Inconclusive int    `json:"inconclusive"`
}

// Checked is how often the invariant was judged pass or fail.
func (c *InvariantCoverage) Checked() int { return c.Pass + c.Fail }

// NewCoverage returns empty coverage of every point × action of the fault
// space and every invariant of the scenario.
func NewCoverage(sc *plan.Scenario) *Coverage {
	c := &Coverage{byKey: map[string]*FaultCoverage{}, byName: map[string]*InvariantCoverage{}}
	for _, ff := range sc.Fuzz.Faults {
		for _, a := range ff.Actions {
			c.fault(ff.Name() + "=" + a)
		}
	}
	for _, ct := range sc.Contracts {
		c.invariant(ct.Name)
	}
	return c
}

func (c *Coverage) fault(key string) *FaultCoverage {
	if f, ok := c.byKey[key]; ok {
		return f
	}
	f := &FaultCoverage{Key: key}
	c.byKey[key] = f
	c.Faults = append(c.Faults, f)
	sort.SliceStable(c.Faults, func(i, j int) bool { return c.Faults[i].Key < c.Faults[j].Key })
	return f
}

func (c *Coverage) invariant(name string) *InvariantCoverage {
	if v, ok := c.byName[name]; ok {
		return v
	}
	v := &InvariantCoverage{Name: name}
	c.byName[name] = v
	c.Invariants = append(c.Invariants, v)
	return v
}

// Add counts one run of schedule s.
func (c *Coverage) Add(s Schedule, o *Outcome) {
	c.Runs++
	for _, p := range s.Phases {
		for _, f := range p.Faults {
			fc := c.fault(f.Key())
			fc.Scheduled++
			h := o.Hits[p.Name+"/"+f.Key()]
			fc.Hits += h
			if h > 0 {
				fc.Fired++
			}
		}
	}
	for _, v := range o.Verdicts {
		ic := c.invariant(v.Name)
		switch v.Outcome {
		case contract.Pass:
			ic.Pass++
		case contract.Fail:
			ic.Fail++
		default:
			ic.Inconclusive++
		}
	}
}
