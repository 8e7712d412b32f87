// Package buildprobe tells whether this binary is a fault-injection build:
// whether its failpoint markers were rewritten (failpoint-toolexec). The
// probe is a marker of chaoskit's own, so that `chaoskit version` need not
// ask any example service.
package buildprobe

import (
	"reflect"
	"sync"

	"github.com/pingcap/failpoint"
)

type self struct{}

// path is the failpoint Live switches on to test itself.
var path = reflect.TypeOf(self{}).PkgPath() + "/probe"

// Live reports whether this binary's failpoint markers were rewritten at
// build time. In a plain build failpoint.Inject is an empty function and
// no fault can ever fire.
var Live = sync.OnceValue(func() bool {
	if err := failpoint.Enable(path, "return(true)"); err != nil {
		return false
	}
	defer failpoint.Disable(path)
	return probe()
})

func probe() (live bool) {
	failpoint.Inject("probe", func() { live = true })
	return live
}
