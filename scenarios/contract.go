package scenarios

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/chaoskit/chaoskit/contract"
)

// Contract states what must hold in a window of the run.
type Contract struct {
	Name string `yaml:"name"`
	// Phase is the window; Settle skips its first part.
	Phase  string   `yaml:"phase"`
	Settle Duration `yaml:"settle"`
	// Expect holds the assertions, e.g. `status == 200 for >= 99%`.
	Expect []string `yaml:"expect"`
	// MinSamples is the fewest requests a verdict may rest on; default 50.
	MinSamples int `yaml:"min_samples"`
}

func (v *validator) validateContract(i int, phases map[string]*Phase) {
	c := &v.sc.Contracts[i]
	at := fmt.Sprintf("$.contracts[%d]", i)
	if strings.TrimSpace(c.Name) == "" {
		v.errorf(at, "add name: what the contract promises", "contract %d has no name", i+1)
	}
	p, ok := phases[c.Phase]
	switch {
	case c.Phase == "":
		v.errorf(at, "add phase: the phase the contract judges", "contract %q names no phase", c.Name)
	case !ok:
		names := make([]string, 0, len(phases))
		for n := range phases {
			names = append(names, n)
		}
		sort.Strings(names)
		v.errorf(at+".phase", didYouMean(c.Phase, names), "contract %q names phase %q, which the scenario does not have", c.Name, c.Phase)
	case c.Settle >= p.Duration:
		v.errorf(at+".settle", "make settle shorter than the phase", "settle %v leaves nothing of phase %q (%v)", c.Settle.D(), p.Name, p.Duration.D())
	}
	if c.MinSamples < 0 {
		v.errorf(at+".min_samples", "", "min_samples %d is negative", c.MinSamples)
	}
	if len(c.Expect) == 0 {
		v.errorf(at, "add expect: [status == 200 for >= 99%]", "contract %q has no expectations", c.Name)
		return
	}
	_, err := contract.Compile(c.Spec())
	var ee *contract.ExpectError
	if errors.As(err, &ee) {
		msg, hint := ee.Err.Error(), ""
		var se *contract.SyntaxError
		if errors.As(ee.Err, &se) {
			msg, hint = se.Msg, se.Hint
		}
		v.errorf(fmt.Sprintf("%s.expect[%d]", at, ee.Index), hint, "%s", msg)
		if se != nil && se.Column > 1 {
			last := v.errs[len(v.errs)-1]
			last.Col += se.Column - 1
		}
	} else if err != nil {
		v.errorf(at, "", "%v", err)
	}
}

// Spec returns the contract as the contract package takes it.
func (c Contract) Spec() contract.Spec {
	return contract.Spec{Name: c.Name, Phase: c.Phase, Settle: c.Settle.D(), Expect: c.Expect, MinSamples: c.MinSamples}
}
