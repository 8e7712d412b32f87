// Package harness carries out what chaoskit's commands ask for, end to end:
// a run of scenarios (runner → contracts → reports), the judging of saved
// runs again, and fault-schedule fuzz campaigns (search → shrink → confirm)
// and explorations. cmd/chaoskit parses flags and prints; every decision a
// command needs is made here, once.
//
// Two of them matter to every stage, so they are made in one place:
//
//   - the classifier: the scenario's classify rules, then the defaults
//     (contract.Classification). The runner's progress lines and run.json,
//     the contracts, every report format, fuzz and explore all classify
//     requests with it (see Classifier);
//   - the response headers a run records: every header the scenario names
//     anywhere, in classify rules, in header("…") predicates and in write
//     read-backs (see RecordedHeaders). A header the run does not record
//     cannot be judged, so a rule on it would silently never match.
package harness

import (
	"errors"
	"slices"

	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/runner"
	"github.com/chaoskit/chaoskit/timeline"
)

// ErrContractsFailed is the error of an invocation whose verdict is not
// pass (exit code 1); the reports say why.
var ErrContractsFailed error = &exitcode.Error{Code: exitcode.Fail, Err: errors.New("contracts did not pass")}

// Classifier returns the classifier of sc's requests: the class the
// contracts judge a request by.
func Classifier(sc *plan.Scenario) func(*timeline.Request) timeline.Class {
	c := sc.Classification()
	return func(r *timeline.Request) timeline.Class {
		class, _ := c.Classify(r)
		return class
	}
}

// RecordedHeaders returns the response headers a run of sc must record,
// besides those every run keeps (Retry-After, Content-Type): the headers
// its classification reads (its target profile's conventions included), those
// its predicates name with header("…") and those its write read-backs take
// ({header.Location}). all is true when a predicate computes a header's
// name, so that only recording every header serves it.
func RecordedHeaders(sc *plan.Scenario) (names []string, all bool) {
	cls := sc.Classification()
	names = cls.Headers()
	for i := range sc.Contracts {
		cc := sc.Contracts[i].Compiled()
		if cc == nil {
			continue // validation refused it already
		}
		hs, any := cc.Headers()
		names = append(names, hs...)
		all = all || any
	}
	for i := range sc.Writes {
		names = append(names, sc.Writes[i].Headers()...)
	}
	slices.Sort(names)
	return slices.Compact(names), all
}

// runnerOptions completes base with what the harness decides for sc: its
// classifier and the headers its run records.
func runnerOptions(sc *plan.Scenario, base runner.Options) runner.Options {
	base.Classify = Classifier(sc)
	base.Headers, base.AllHeaders = RecordedHeaders(sc)
	return base
}
