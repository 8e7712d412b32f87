package plan

import (
	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/timeline"
)

// Judge judges the scenario's contracts, as loading compiled them, over a
// recorded run, and measures the run when cls is not nil, in one pass
// (contract.JudgeWith). It is the one judge of run, report, merge,
// chaostest, fuzz and explore; fault-schedule campaigns judge with
// opts.UnfiredJudged, every other command with the zero options. A
// contract validation refused, and every contract when
// the run's requests cannot be read, is inconclusive with the reason.
// Each verdict carries where its contract is written.
func (sc *Scenario) Judge(src timeline.Source, cls *contract.Classification, opts contract.JudgeOptions) ([]contract.Verdict, *contract.Measurement, error) {
	var compiled []*contract.Contract
	for i := range sc.Contracts {
		if cc := sc.Contracts[i].compiled; cc != nil {
			compiled = append(compiled, cc)
		}
	}
	vs, m, err := contract.JudgeWith(src, compiled, cls, opts)
	out := make([]contract.Verdict, len(sc.Contracts))
	k := 0
	for i, c := range sc.Contracts {
		v := contract.Verdict{Name: c.Name, Phase: c.Phase, Outcome: contract.Inconclusive, Measured: "no data"}
		switch {
		case c.compiled == nil:
			v.Reason = "the contract did not compile when its scenario loaded"
		case err != nil:
			v.Reason = "the run's requests cannot be read: " + err.Error()
		default:
			v = vs[k]
		}
		if c.compiled != nil {
			k++
		}
		v.Position = c.Position
		out[i] = v
	}
	return out, m, err
}
