package fuzz

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// Outcome is what one run of a schedule showed.
type Outcome struct {
	// Verdicts are the scenario's contracts (its invariants) judged on the
	// run, in the scenario's order; Failed names those that failed.
	Verdicts []contract.Verdict
	Failed   []string
	// Mix lists the classes (and fallback sources) that served at least
	// mixShare of the requests sent while a fault was on:
	// "fallback:cache", "primary", "rejected".
	Mix []string
	// Hits counts marker hits per fault, keyed by phase and fault key
	// ("faults-1/store/productQuery=timeout"); a fault that never fired
	// has 0.
	Hits map[string]int64
	// Dir is the run directory; File the scenario file that was run.
	Dir  string
	File string
	// Elapsed is how long the run took.
	Elapsed time.Duration
}

// mixShare is the least share of the faulted requests a class must serve
// to count in an outcome's mix.
const mixShare = 0.05

// Violated reports whether an invariant failed.
func (o *Outcome) Violated() bool { return len(o.Failed) > 0 }

// Fails reports whether the named invariant failed.
func (o *Outcome) Fails(name string) bool { return slices.Contains(o.Failed, name) }

// Signature is the effect of a run as exploration compares them: the
// invariants that failed and the classification mix.
func (o *Outcome) Signature() string {
	return "failed[" + strings.Join(o.Failed, "; ") + "] mix[" + strings.Join(o.Mix, " ") + "]"
}

// Unfired returns the faults of s whose marker never fired in the run.
func (o *Outcome) Unfired(s Schedule) []string {
	var out []string
	for _, p := range s.Phases {
		for _, f := range p.Faults {
			if h, ok := o.Hits[p.Name+"/"+f.Key()]; ok && h == 0 {
				out = append(out, f.Key())
			}
		}
	}
	return out
}

// Trier runs schedules; trials.Runner runs them for real.
type Trier interface {
	// Try runs schedule s under the label (which names its run directory).
	Try(ctx context.Context, label string, s Schedule) (*Outcome, error)
}

// Judge judges the scenario's contracts on a recorded run with the one
// judge every command uses (plan.Scenario.Judge), and measures the run's
// classification mix and fault hits. It reads the run as a stream, in
// bounded memory, as chaoskit report does.
//
// A fault whose marker never fired had no effect on the run: a random
// schedule often switches on a fault on a path no request took (a cache
// fault while the database is healthy). Unlike chaoskit run, which calls a
// contract with such a fault in its window inconclusive (the service may be
// a plain build, which the runner refuses before any fault is switched
// on), a campaign judges the invariant on what the requests showed
// (contract.JudgeOptions.UnfiredJudged); coverage counts the fault as
// scheduled but not fired. The error is one reading the requests.
func Judge(sc *plan.Scenario, src timeline.Source) (*Outcome, error) {
	o := &Outcome{Hits: map[string]int64{}}
	vs, _, err := sc.Judge(src, nil, contract.JudgeOptions{UnfiredJudged: true})
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		o.Verdicts = append(o.Verdicts, v)
		if v.Outcome == contract.Fail {
			o.Failed = append(o.Failed, v.Name)
		}
	}
	tl := src.Head()
	if o.Mix, err = mix(sc, src); err != nil {
		return nil, err
	}
	keys := map[string]string{}  // phase/path -> phase/key
	proxied := map[string]bool{} // phase/path of proxy faults
	for _, p := range sc.Phases {
		for _, f := range p.Faults {
			name := f.Point
			if f.Proxy != "" || f.Process != "" {
				name = f.Path
				proxied[p.Name+"/"+f.Path] = true
			}
			k := p.Name + "/" + name + "=" + f.Action
			keys[p.Name+"/"+f.Path] = k
			o.Hits[k] += 0
		}
	}
	for _, e := range tl.Events {
		k, ok := keys[e.Phase+"/"+e.Point]
		switch {
		case !ok:
		case e.Kind == timeline.FaultHits && e.Hits != nil:
			o.Hits[k] += *e.Hits
		case e.Kind == timeline.FaultOn && proxied[e.Phase+"/"+e.Point]:
			// A proxy or a process has no marker to count: its fault
			// fired when it was switched on.
			o.Hits[k]++
		}
	}
	return o, nil
}

// mix returns the classes serving at least mixShare of the requests sent
// while a fault was on.
func mix(sc *plan.Scenario, src timeline.Source) ([]string, error) {
	spans := contract.FaultSpans(src.Head())
	cls := sc.Classification()
	counts := map[string]int{}
	n := 0
	err := src.EachRequest(func(r *timeline.Request) error {
		on := false
		for _, s := range spans {
			if !r.Time.Before(s.On) && (s.Off.IsZero() || r.Time.Before(s.Off)) {
				on = true
				break
			}
		}
		if !on {
			return nil
		}
		n++
		c, src := cls.Classify(r)
		name := string(c)
		if c == contract.Fallback && src != "" {
			name += ":" + src
		}
		counts[name]++
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for name, k := range counts {
		if float64(k) >= mixShare*float64(n) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}
