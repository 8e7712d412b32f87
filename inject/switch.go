package inject

import (
	"os"
	"runtime"
	"sync/atomic"

	"github.com/pingcap/failpoint"
)

// Switch is a fault point switched at run time: it works in a plain
// `go build` (no failpoint-toolexec, no rewrite), off by default, and costs
// an atomic load when no failpoint control was ever armed in the process.
// It is the alternative to a pingcap/failpoint marker (failpoint.Inject),
// which costs nothing in a plain build because it is rewritten only in a
// fault-injection build, for teams that prefer one binary.
//
//	var productQuery = inject.NewSwitch("productQuery")
//
//	func (s *Store) Product(ctx context.Context, id int) (Product, error) {
//		if v, ok := productQuery.Eval(); ok {
//			if err := inject.Fire(ctx, v); err != nil {
//				return Product{}, err
//			}
//		}
//		…
//	}
//
// A Switch's path is its package's import path + "/" + name, as a marker's
// is, so scenarios name both alike, switch both through the same control
// endpoint, and `chaoskit init` finds both. Never give a Switch the name of a
// failpoint.Inject marker of the same package: in a fault-injection build
// both would fire.
type Switch struct {
	path string
}

// armed is set once anything in the process may switch failpoints on (see
// Arm); until then every Switch is off at the cost of one atomic load.
var armed atomic.Bool

// Arm makes every Switch consult pingcap/failpoint's registry, where
// failpoint.Enable, its HTTP handler and GO_FAILPOINTS put terms. The
// control endpoint (ControlHandler) arms on its first request, and a process
// started with ControlEnv, GO_FAILPOINTS or GO_FAILPOINTS_HTTP set is armed
// from its start; code that calls failpoint.Enable itself (a test) or serves
// failpoint.HttpHandler on its own calls Arm first. It cannot be undone:
// switches then cost a registry lookup (tens of nanoseconds) each.
func Arm() { armed.Store(true) }

func init() {
	for _, env := range []string{ControlEnv, "GO_FAILPOINTS", "GO_FAILPOINTS_HTTP"} {
		if os.Getenv(env) != "" {
			Arm()
		}
	}
}

// NewSwitch returns the fault point name of the calling package. Call it
// once, in a package-level variable: it looks up its caller.
func NewSwitch(name string) *Switch {
	pkg := "unknown"
	if pc, _, _, ok := runtime.Caller(1); ok {
		pkg = packageOf(runtime.FuncForPC(pc).Name())
	}
	return &Switch{path: pkg + "/" + name}
}

// Path returns the switch's full failpoint path: package import path + "/" +
// name.
func (p *Switch) Path() string { return p.path }

// Eval returns the switch's value and true when its failpoint is switched on
// (and its term's count or probability lets it fire), as a rewritten marker
// would; hand the value to Fire. Off, it returns nil, false.
func (p *Switch) Eval() (any, bool) {
	if !armed.Load() {
		return nil, false
	}
	v, err := failpoint.Eval(p.path)
	if err != nil {
		return nil, false
	}
	return v, true
}
