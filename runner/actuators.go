package runner

import (
	"context"

	"github.com/chaoskit/chaoskit/fault"
	"github.com/chaoskit/chaoskit/netfault"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// actuator returns the run's actuator of f's source (package fault): the
// runner never tells sources apart.
func (r *run) actuator(f plan.Fault) fault.Actuator { return f.Source().Actuator(runEnv{r}) }

// runEnv is what a run lends the fault sources' actuators (fault.Env).
type runEnv struct{ r *run }

func (e runEnv) EnableFailpoint(path, term string) error {
	return enableRetry.do(e.r.controlCtx(), func(c context.Context) error {
		return e.r.tgt.control.Enable(c, path, term)
	})
}

func (e runEnv) DisableFailpoint(path string) error {
	if e.r.tgt.control == nil {
		return nil // no failpoint can have been switched on
	}
	return disableRetry.do(e.r.controlCtx(), func(c context.Context) error {
		return e.r.tgt.control.Disable(c, path)
	})
}

func (e runEnv) EnableProxy(f netfault.Fault) error { return e.r.proxies.Enable(f) }

func (e runEnv) DisableProxy(f netfault.Fault) error { return e.r.proxies.Disable(f) }

func (e runEnv) StartProcessFault(process, action string) error {
	return e.r.actionOn(process, action)
}

func (e runEnv) EndProcessFault(process, action string) error {
	return e.r.actionOff(e.r.controlCtx(), process, action)
}

func (e runEnv) Proxy(name string) fault.Server {
	if srv, ok := e.r.servers[name]; ok {
		return srv
	}
	return nil
}

func (e runEnv) Event(ev timeline.Event) { e.r.event(ev) }
