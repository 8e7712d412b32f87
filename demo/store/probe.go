package store

import (
	"reflect"
	"sync"

	"github.com/pingcap/failpoint"
)

// buildProbePath is the failpoint FaultInjectionLive switches on to test
// itself.
var buildProbePath = reflect.TypeOf(Store{}).PkgPath() + "/buildProbe"

// FaultInjectionLive reports whether this binary's failpoint markers were
// rewritten at build time (a fault-injection build). In a plain build
// failpoint.Inject is an empty function and no fault can ever fire, which is
// what chaoskit must detect before it reports on faults that never happened.
var FaultInjectionLive = sync.OnceValue(func() bool {
	if err := failpoint.Enable(buildProbePath, "return(true)"); err != nil {
		return false
	}
	defer failpoint.Disable(buildProbePath)
	return probe()
})

func probe() (live bool) {
	failpoint.Inject("buildProbe", func() { live = true })
	return live
}
