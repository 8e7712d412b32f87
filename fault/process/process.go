// Package process is the fault source of the processes chaoskit started:
// a fault names the target or a dependency and kills, terminates, pauses
// or restarts it.
package process

import (
	"slices"

	"github.com/chaoskit/chaoskit/fault"
	"github.com/chaoskit/chaoskit/internal/suggest"
	"github.com/chaoskit/chaoskit/netfault"
)

func init() {
	fault.Register(&fault.Source{Name: "process",
		Names: func(s *fault.Spec) bool { return s.Process != "" && s.Proxy == "" },
		Check: check,
		Overlap: func(sc fault.Scope, s *fault.Spec, phase, other string) {
			sc.Errorf(".process", "give the actions separate after/for windows", "process %s has two actions at once in phase %q: this one and %s", s.Process, phase, other)
		},
		Actuator: func(env fault.Env) fault.Actuator { return actuator{env} }})
}

// actions are what a process fault may do.
var actions = []string{"kill", "terminate", "pause", "restart"}

// check checks a process fault and fills in Path and Term.
func check(sc fault.Scope, s *fault.Spec) bool {
	if s.Point != "" {
		sc.Errorf("", "split it into one fault per source", "a fault names one of point, proxy or process")
		return false
	}
	names := sc.Processes()
	switch {
	case !slices.Contains(names, s.Process):
		sc.Errorf(".process", suggest.Hint(s.Process, names), "no process named %q: process faults act on the target or a dependency", s.Process)
		return false
	case s.Process == names[0] && !sc.TargetStarted():
		sc.Errorf(".process", "give target.command, so that chaoskit starts the service and can stop it", "the target is not started by chaoskit, so it cannot be killed or paused")
		return false
	case !slices.Contains(actions, s.Action):
		sc.Errorf(".action", suggest.Hint(s.Action, actions), "unknown process action %q", s.Action)
		return false
	case s.Value != "" || s.Count != 0 || s.Probability != 0 || s.Settings != (netfault.Fault{}) || s.Distribution != "":
		sc.Errorf("", "remove everything but process, action, after and for", "a process fault takes no value, count, probability, distribution or proxy settings")
		return false
	case s.Match != nil:
		sc.Errorf(".match", "put the fault on an HTTP or gRPC proxy in front of the process to fault some requests only", "a process fault acts on the whole process: it takes no match")
		return false
	case s.Action == "restart" && s.For != 0:
		sc.Errorf(".for", "remove for: restart starts the process again at once; for a longer outage write action: kill (or terminate) with for", "a restart has no duration")
		return false
	}
	s.Path = "process/" + s.Process
	s.Term = "process " + s.Process + " " + s.Action
	if s.For > 0 && s.Action != "restart" {
		s.Term += " for " + s.For.String()
	}
	return true
}

// actuator kills, pauses, terminates or restarts a process chaoskit
// started.
type actuator struct{ env fault.Env }

func (a actuator) On(s fault.Spec) error { return a.env.StartProcessFault(s.Process, s.Action) }

func (a actuator) Off(s fault.Spec, rollingBack bool) error {
	if rollingBack && s.Action != "pause" {
		return nil // the run is over: nothing to bring back for
	}
	return a.env.EndProcessFault(s.Process, s.Action)
}

func (actuator) BackAtOnce(s fault.Spec) bool { return s.Action == "restart" }
