package plan

import "github.com/chaoskit/chaoskit/inject"

// FaultSource is one source of faults: failpoint markers inside the
// service, the scenario's proxies, or processes. Everything that differs
// between sources is said here, once; the loader, the runner and fuzzing
// ask a fault's source (Fault.Source) instead of telling sources apart. A
// new source is its own check and actuator plus one entry of faultSources
// (and of the runner's actuators).
type FaultSource struct {
	// Name is the key a fault names its source by: point, proxy, process.
	Name string
	// Marker says the source's faults act through failpoint markers in the
	// target: they have hits to count, die with the target, and outlive
	// chaoskit, so the rollback record lists them.
	Marker bool
	// named says whether f names this source.
	named func(f *Fault) bool
	// check validates f (fat is where it is written), filling in its Path
	// and Term; false leaves the fault's window unchecked.
	check func(v *validator, fat string, f *Fault, cat *inject.Catalog) bool
	// overlap reports f switched on while another fault of the same thing
	// is on, in phase.
	overlap func(v *validator, fat string, f *Fault, phase string)
}

// Label is how a log line names f: the point and its action for a
// failpoint, the description of any other fault.
func (s *FaultSource) Label(f Fault) string {
	if s.Marker {
		return f.Point + "=" + f.Action
	}
	return f.Term
}

// faultSources are the sources of faults, tried in order; the failpoint,
// named by a point or by nothing else, comes last.
var faultSources = []*FaultSource{
	{Name: "proxy", named: func(f *Fault) bool { return f.Proxy != "" },
		check: func(v *validator, fat string, f *Fault, _ *inject.Catalog) bool { return v.validateProxyFault(fat, f) },
		overlap: func(v *validator, fat string, f *Fault, phase string) {
			v.errorf(fat+".proxy", "give the faults separate after/for windows, or put a second proxy in front of the same upstream", "proxy %s has two faults at once in phase %q", f.Proxy, phase)
		}},
	{Name: "process", named: func(f *Fault) bool { return f.Process != "" },
		check: func(v *validator, fat string, f *Fault, _ *inject.Catalog) bool {
			return v.validateProcessFault(fat, f)
		},
		overlap: func(v *validator, fat string, f *Fault, phase string) {
			v.errorf(fat+".process", "give the actions separate after/for windows", "process %s has two actions at once in phase %q", f.Process, phase)
		}},
	{Name: "point", Marker: true, named: func(*Fault) bool { return true },
		check: (*validator).checkPointFault,
		overlap: func(v *validator, fat string, f *Fault, phase string) {
			v.errorf(fat+".point", "a failpoint holds one term at a time; give the faults separate after/for windows, or merge them with action: term", "failpoint %s has two faults at once in phase %q", f.Path, phase)
		}},
}

// Source returns the source f comes from.
func (f Fault) Source() *FaultSource {
	for _, s := range faultSources {
		if s.named(&f) {
			return s
		}
	}
	panic("plan: no fault source") // the failpoint source names every fault
}
