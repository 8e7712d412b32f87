package diff

import (
	"time"

	"github.com/chaoskit/chaoskit/contract"
)

// BillPair is one fault's bill on each side: the median of each figure
// over the side's repetitions (contract.Bill). A side that never switched
// the fault on has none.
type BillPair struct {
	Scenario string         `json:"scenario"`
	Phase    string         `json:"phase,omitempty"`
	Fault    string         `json:"fault"`
	Base     *contract.Bill `json:"base,omitempty"`
	Head     *contract.Bill `json:"head,omitempty"`
}

type billKey struct{ scenario, phase, fault string }

// billPairs pairs the sides' bills per scenario, phase and fault, in the
// order first met.
func billPairs(base, head []Run) []BillPair {
	var order []billKey
	bs, hs := map[billKey][]contract.Bill{}, map[billKey][]contract.Bill{}
	gather := func(runs []Run, into map[billKey][]contract.Bill) {
		for _, r := range runs {
			if r.Measurement == nil {
				continue
			}
			for _, b := range billsNamed(r.Measurement.Bills) {
				k := billKey{r.Scenario, b.Phase, b.Fault}
				if _, ok := bs[k]; !ok {
					if _, ok := hs[k]; !ok {
						order = append(order, k)
					}
				}
				into[k] = append(into[k], b)
			}
		}
	}
	gather(base, bs)
	gather(head, hs)
	out := make([]BillPair, 0, len(order))
	for _, k := range order {
		out = append(out, BillPair{Scenario: k.scenario, Phase: k.phase, Fault: k.fault, Base: MedianBill(bs[k]), Head: MedianBill(hs[k])})
	}
	return out
}

// MedianBill is the bill of the medians of bills, figure by figure; nil
// for none. A time the runs could not tell is left out of its median, and
// is unknown when most could not.
func MedianBill(bills []contract.Bill) *contract.Bill {
	if len(bills) == 0 {
		return nil
	}
	out := contract.Bill{Fault: bills[0].Fault, Term: bills[0].Term, Phase: bills[0].Phase}
	ints := func(get func(b contract.Bill) int) int {
		v := make([]float64, len(bills))
		for i, b := range bills {
			v[i] = float64(get(b))
		}
		return int(median(v) + 0.5)
	}
	out.Requests = ints(func(b contract.Bill) int { return b.Requests })
	out.Failed = ints(func(b contract.Bill) int { return b.Failed })
	out.Degraded = ints(func(b contract.Bill) int { return b.Degraded })
	out.Stale = ints(func(b contract.Bill) int { return b.Stale })
	out.Refused = ints(func(b contract.Bill) int { return b.Refused })
	out.P99 = time.Duration(ints(func(b contract.Bill) int { return int(b.P99) }))
	durs := func(get func(b contract.Bill) *time.Duration, why func(b contract.Bill) string) (*time.Duration, string) {
		var v []float64
		reason := ""
		for _, b := range bills {
			if d := get(b); d != nil {
				v = append(v, float64(*d))
			} else if reason == "" {
				reason = why(b)
			}
		}
		if len(v) == 0 || len(v) < len(bills)-len(v) {
			return nil, reason
		}
		d := time.Duration(median(v))
		return &d, ""
	}
	out.P99Added, out.P99Unknown = durs(func(b contract.Bill) *time.Duration { return b.P99Added }, func(b contract.Bill) string { return b.P99Unknown })
	out.DegradedIn, out.DegradeUnknown = durs(func(b contract.Bill) *time.Duration { return b.DegradedIn }, func(b contract.Bill) string { return b.DegradeUnknown })
	out.Recovered, out.RecoverUnknown = durs(func(b contract.Bill) *time.Duration { return b.Recovered }, func(b contract.Bill) string { return b.RecoverUnknown })
	never := 0
	for _, b := range bills {
		if b.Never {
			never++
		}
	}
	out.Never = out.Recovered != nil && 2*never > len(bills)
	var writes []contract.Bill
	for _, b := range bills {
		if b.Writes != nil {
			writes = append(writes, b)
		}
	}
	if len(writes) > 0 {
		wb := writes
		w := contract.WriteCounts{}
		f := func(get func(c *contract.WriteCounts) int) int {
			v := make([]float64, len(wb))
			for i, b := range wb {
				v[i] = float64(get(b.Writes))
			}
			return int(median(v) + 0.5)
		}
		w.Acknowledged = f(func(c *contract.WriteCounts) int { return c.Acknowledged })
		w.OK = f(func(c *contract.WriteCounts) int { return c.OK })
		w.Lost = f(func(c *contract.WriteCounts) int { return c.Lost })
		w.Unknown = f(func(c *contract.WriteCounts) int { return c.Unknown })
		out.Writes = &w
	}
	return &out
}
