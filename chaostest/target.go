package chaostest

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/plan"
)

// zero reports whether the target leaves the scenario's own in place.
func (tg Target) zero() bool {
	return tg.Handler == nil && len(tg.Command) == 0 && tg.URL == "" && tg.Failpoints == "" && tg.Env == nil && tg.Dir == ""
}

// invalid is a mistake in the test's Target: invalid input.
func invalid(format string, args ...any) error {
	return exitcode.New(exitcode.Invalid, "chaostest.Target: "+format, args...)
}

// check refuses a target that cannot serve sc, before anything starts.
func (tg Target) check(sc *plan.Scenario) error {
	command := len(tg.Command) > 0
	switch {
	case tg.zero():
		if sc.Target.Demo != nil {
			return invalid("%s: the scenario's target is chaoskit's bundled demo, which only the chaoskit binary serves, not this test: "+
				`give Target{Command: []string{CHAOSKIT, "demo", "serve", "--listen", "127.0.0.1:{port}"}, URL: "http://127.0.0.1:{port}"} with CHAOSKIT a fault-injection build of chaoskit (make build)`, sc.File)
		}
		return nil // the loader checked the scenario's own target
	case tg.Handler != nil && (command || tg.URL != ""):
		return invalid("give Handler, or Command with URL, or URL alone (Run serves a Handler at an address of its own)")
	case command && strings.TrimSpace(tg.Command[0]) == "":
		return invalid("Command[0] is empty: give the program, a path or a name in PATH")
	case command && tg.URL == "":
		return invalid("Command needs URL: where the started service listens, such as http://127.0.0.1:{port} with {port} in Command")
	case !command && (tg.Env != nil || tg.Dir != ""):
		return invalid("Env and Dir are the Command's: give Command as well, or leave them out")
	case tg.Handler == nil && !command && tg.URL == "":
		return invalid("Failpoints without a service: give Handler, Command with URL, or URL")
	}
	for k := range tg.Env {
		if k == "" || strings.ContainsAny(k, "= \x00") {
			return invalid("environment variable name %q in Env is not valid", k)
		}
	}
	probe := plan.Target{URL: tg.URL, Failpoints: tg.Failpoints}
	if names := probe.PortNames(); len(names) > 0 && !command {
		return invalid("{port} in URL or Failpoints is filled only for a Command, which chaoskit starts on the ports it picks")
	}
	ports := map[string]int{}
	for _, n := range (plan.Target{URL: tg.URL, Failpoints: tg.Failpoints, Command: &plan.Command{Argv: tg.Command, Env: tg.Env}}).PortNames() {
		ports[n] = 1
	}
	for _, a := range []struct{ field, addr string }{{"URL", tg.URL}, {"Failpoints", tg.Failpoints}} {
		if a.addr == "" {
			continue
		}
		// A service chaoskit starts listens on loopback; one already
		// running may be on a host the scenario and AllowHosts allow.
		allow := sc.Reach
		if command {
			allow = nil
		}
		if err := plan.CheckReach(plan.FillPorts(a.addr, ports), allow); err != nil {
			return invalid("%s: %v (chaoskit sends load and control traffic to loopback addresses, 127.0.0.0/8 and ::1, and beyond them only to a host of the scenario's allow_hosts named by AllowHosts too)", a.field, err)
		}
	}
	if command || tg.Failpoints != "" {
		return nil // chaoskit gives a Command its endpoint; Failpoints is one
	}
	for i, p := range sc.Phases {
		for j, f := range p.Faults {
			what, fix := "a handler served in the test", "run the service as a Command built with `chaoskit build`, or, in a test binary that is a fault-injection build, "+
				"serve inject.ControlHandler on loopback and give its address as Failpoints; scenarios without faults need neither"
			if tg.Handler == nil {
				what, fix = "the service at "+tg.URL, "give Failpoints: the address of the service's failpoint control endpoint"
			}
			e := faultPosition(sc, i, j)
			e.Msg = fmt.Sprintf("phase %q switches the failpoint fault %s (%s), and %s has no failpoint control endpoint", p.Name, f.Point, f.Action, what)
			e.Hint = fix
			return e
		}
	}
	return nil
}

// apply points sc at the target, keeping what the target does not say.
func (tg Target) apply(sc *plan.Scenario) error {
	if tg.zero() {
		return nil
	}
	t := plan.Target{URL: tg.URL, Failpoints: tg.Failpoints}
	if len(tg.Command) > 0 {
		dir, err := filepath.Abs(tg.Dir) // "" is the test's directory
		if err != nil {
			return err
		}
		t.Command = &plan.Command{Argv: tg.Command, Env: tg.Env, Dir: dir}
	}
	sc.Bind(t)
	return nil
}

// faultPosition is where sc writes the j-th fault of its i-th phase, as an
// error to complete: in the file, or else in the last included file that
// holds it; the file alone when that cannot be told.
func faultPosition(sc *plan.Scenario, i, j int) *plan.Error {
	type source struct {
		name string
		data []byte
	}
	srcs := []source{{sc.File, sc.Source}}
	for k := len(sc.Included) - 1; k >= 0; k-- {
		srcs = append(srcs, source{sc.Included[k].Path, sc.Included[k].Data})
	}
	path, err := yaml.PathString(fmt.Sprintf("$.phases[%d].faults[%d]", i, j))
	for _, src := range srcs {
		if err != nil {
			break
		}
		f, perr := parser.ParseBytes(src.data, 0)
		if perr != nil {
			continue
		}
		n, ferr := path.FilterFile(f)
		if ferr != nil || n == nil || n.GetToken() == nil {
			continue
		}
		tk := n.GetToken()
		// A block mapping's token is its first ':'; its first key is
		// where a reader looks.
		if m, ok := n.(*ast.MappingNode); ok && !m.IsFlowStyle && len(m.Values) > 0 && m.Values[0].Key.GetToken() != nil {
			tk = m.Values[0].Key.GetToken()
		}
		e := &plan.Error{File: src.name, Line: tk.Position.Line, Col: tk.Position.Column}
		if lines := strings.Split(string(src.data), "\n"); e.Line <= len(lines) {
			e.Excerpt = strings.TrimRight(lines[e.Line-1], "\r")
		}
		return e
	}
	return &plan.Error{File: sc.File}
}

// testLog writes the run's progress to a test's log, a line at a time.
type testLog struct {
	t   testing.TB
	mu  sync.Mutex
	buf []byte
}

// maxLogLine bounds a line kept while its end has not come.
const maxLogLine = 64 << 10

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 && len(l.buf) < maxLogLine {
			return len(p), nil
		}
		if i < 0 {
			i = len(l.buf)
		}
		l.t.Log(string(l.buf[:i]))
		l.buf = l.buf[min(i+1, len(l.buf)):]
		if len(l.buf) == 0 {
			l.buf = nil
			return len(p), nil
		}
	}
}
