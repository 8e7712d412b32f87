package runner

import (
	"testing"

	"github.com/chaoskit/chaoskit/plan"
)

// Every source of faults the loader knows makes an actuator for a run,
// and only failpoints go in the rollback record.
func TestEveryFaultSourceHasAnActuator(t *testing.T) {
	for _, f := range []plan.Fault{{Point: "p"}, {Proxy: "pg"}, {Process: "target"}, {Path: "left/on"}} {
		src := f.Source()
		if src.Actuator == nil || src.Actuator(runEnv{}) == nil {
			t.Errorf("fault %+v: source %q has no actuator", f, src.Name)
		}
		if src.Marker != (f.Proxy == "" && f.Process == "") {
			t.Errorf("fault %+v: source %q marker %v", f, src.Name, src.Marker)
		}
	}
}
