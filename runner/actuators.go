package runner

import (
	"context"

	"github.com/chaoskit/chaoskit/plan"
)

// actuator switches the faults of one source (plan.FaultSource) on and
// off in a run. It is the only place the runner tells sources apart.
type actuator interface {
	on(f plan.Fault) error
	// off switches f off; rollingBack is set while the run's end rolls
	// back. f may know only its Path (a failpoint an earlier run left on).
	off(f plan.Fault, rollingBack bool) error
	// backAtOnce says f is over once it is on (a restart: down and up
	// again), so it is switched off right after.
	backAtOnce(f plan.Fault) bool
}

// actuators make a run's actuator of each fault source, by source name:
// adding a source is one line here and one in plan's faultSources.
var actuators = map[string]func(r *run) actuator{
	"point":   func(r *run) actuator { return pointActuator{r} },
	"proxy":   func(r *run) actuator { return proxyActuator{r} },
	"process": func(r *run) actuator { return processActuator{r} },
}

// actuator returns the run's actuator of f's source.
func (r *run) actuator(f plan.Fault) actuator { return actuators[f.Source().Name](r) }

// pointActuator switches failpoints through the target's control endpoint,
// with retries.
type pointActuator struct{ r *run }

func (a pointActuator) on(f plan.Fault) error {
	return enableRetry.do(a.r.controlCtx(), func(c context.Context) error {
		return a.r.tgt.control.Enable(c, f.Path, f.Term)
	})
}

func (a pointActuator) off(f plan.Fault, _ bool) error {
	if a.r.tgt.control == nil {
		return nil // no failpoint can have been switched on
	}
	return disableRetry.do(a.r.controlCtx(), func(c context.Context) error {
		return a.r.tgt.control.Disable(c, f.Path)
	})
}

func (pointActuator) backAtOnce(plan.Fault) bool { return false }

// proxyActuator puts toxics on the run's in-process proxies.
type proxyActuator struct{ r *run }

func (a proxyActuator) on(f plan.Fault) error { return a.r.proxies.Enable(*f.Net) }

func (a proxyActuator) off(f plan.Fault, _ bool) error { return a.r.proxies.Disable(*f.Net) }

func (proxyActuator) backAtOnce(plan.Fault) bool { return false }

// processActuator kills, pauses, terminates or restarts a process chaoskit
// started (see actions.go).
type processActuator struct{ r *run }

func (a processActuator) on(f plan.Fault) error { return a.r.actionOn(f) }

func (a processActuator) off(f plan.Fault, rollingBack bool) error {
	if rollingBack && f.Action != "pause" {
		return nil // the run is over: nothing to bring back for
	}
	return a.r.actionOff(a.r.controlCtx(), f)
}

func (processActuator) backAtOnce(f plan.Fault) bool { return f.Action == "restart" }
