package reports

import (
	"fmt"

	"github.com/chaoskit/chaoskit/contract"
)

// billHeader names the columns of billCells.
var billHeader = []string{"Fault", "Phase", "Requests", "Failed", "Degraded", "Stale", "Refused", "p99 added", "Degraded in", "Recovered in", "Writes lost", "Writes unknown"}

// billCells are one fault's bill in user terms, a cell per billHeader
// column: counts with their share, the p99 added to the baseline phase's,
// the time to degrade and the time to recover, the writes acknowledged while it was on and lost or
// unknown ("–" where the run cannot tell, with the reason in the cell).
func billCells(b contract.Bill) []string {
	share := func(n int) string {
		if b.Requests == 0 {
			return "0"
		}
		return fmt.Sprintf("%d (%s)", n, pctText(n, b.Requests))
	}
	p99 := "– (" + b.P99Unknown + ")"
	if b.P99Added != nil {
		d := *b.P99Added
		sign := "+"
		if d < 0 {
			sign, d = "-", -d
		}
		p99 = sign + fmtMs(d)
	}
	deg := "– (" + b.DegradeUnknown + ")"
	if b.DegradedIn != nil {
		deg = fmtMs(*b.DegradedIn)
	}
	rec := "– (" + b.RecoverUnknown + ")"
	if b.Recovered != nil {
		rec = fmt.Sprintf("%.2fs", b.Recovered.Seconds())
		if b.Never {
			rec = "not in " + rec
		}
	}
	lost, unknown := "– (no read-back)", "– (no read-back)"
	if b.Writes != nil {
		lost, unknown = fmt.Sprintf("%d of %d", b.Writes.Lost, b.Writes.Acknowledged), fmt.Sprintf("%d of %d", b.Writes.Unknown, b.Writes.Acknowledged)
	}
	return []string{b.Fault, b.Phase, fmt.Sprint(b.Requests), share(b.Failed), share(b.Degraded), share(b.Stale), share(b.Refused), p99, deg, rec, lost, unknown}
}

// billLine is a bill in one line of the terminal table.
func billLine(b contract.Bill) string {
	where := b.Fault
	if b.Phase != "" {
		where += " in " + b.Phase
	}
	return "bill of " + where + ": " + b.String()
}
