package fuzztarget

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/plan"
)

// Parse is the body of the loader's fuzz targets (FuzzParse in plan's
// tests for go test -fuzz, and here for go-fuzz): any bytes load as a valid scenario or fail
// with errors that name the file and a line of it, never a panic. It
// panics on a broken property and returns 1 for a valid scenario.
func Parse(data []byte) int {
	const name = "fuzz.yaml"
	sc, err := plan.Parse(name, data, plan.Options{})
	if err != nil {
		var l plan.ErrorList
		if !errors.As(err, &l) || len(l) == 0 {
			panic(fmt.Sprintf("Parse failed with %T %v, not an ErrorList", err, err))
		}
		// The YAML decoder may place an error at the end of the input, on
		// the line after the last, and counts a lone CR as a line break.
		lines := bytes.Count(data, []byte("\n")) + bytes.Count(data, []byte("\r")) + 2
		for _, e := range l {
			if e.File != name || e.Msg == "" || e.Line < 0 || e.Line > lines || e.Col < 0 {
				panic(fmt.Sprintf("error %#v: want %s, a message and a line within the %d of the input", e, name, lines))
			}
			_ = e.Detail()
		}
		return 0
	}
	if sc.Name == "" || len(sc.Phases) == 0 || len(sc.Load.Requests) == 0 {
		panic(fmt.Sprintf("valid scenario without a name, phases or requests: %+v", sc))
	}
	for _, p := range sc.Phases {
		if p.Duration <= 0 || len(p.Effective.Requests) == 0 || (p.Effective.Rate.IsZero() && p.Effective.Pacer == nil) {
			panic(fmt.Sprintf("valid scenario with phase %+v", p))
		}
		for _, f := range p.Faults {
			if !f.Source().Marker {
				continue
			}
			if f.Term == "" || inject.CheckTerm(f.Term) != nil {
				panic(fmt.Sprintf("valid scenario with fault %+v and a term pingcap/failpoint refuses", f))
			}
		}
	}
	return 1
}
