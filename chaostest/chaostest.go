// Package chaostest runs chaoskit scenarios from go test, as package
// net/http/httptest serves handlers to tests. A test names a scenario file
// and the service to run it against (a handler it serves in the test, a
// service it started, or a command chaoskit starts), and Run fails the test
// with one t.Errorf per failed check, naming the contract's file and line,
// the check, the measured and expected figures and the first violating
// request; the contract table with its evidence goes to the test's log.
//
//	func TestCheckoutDegrades(t *testing.T) {
//		chaostest.Run(t, "testdata/checkout.yaml", chaostest.Target{Handler: newServer()})
//	}
//
// The verdicts are those of `chaoskit run`: the scenario loads and runs
// through package harness, with real vegeta load over loopback, and is
// judged by the same contracts, so a scenario file serves the CLI and the
// test alike.
//
// # Faults
//
// A handler served in the test has no failpoint control endpoint of its
// own, so what a Target can do depends on where its faults live:
//
//   - a scenario without faults runs against any target: steady-state
//     contracts, latency, rate limits, load shedding;
//   - failpoint faults need the service's control endpoint: a Command
//     that is a fault-injection build (`chaoskit build`; chaoskit starts it
//     with the endpoint's address and the run's token in
//     CHAOSKIT_FAILPOINTS_HTTP and CHAOSKIT_FAILPOINTS_TOKEN), or a URL
//     whose Failpoints the test gives. A test binary that is itself a
//     fault-injection build (go test -toolexec=failpoint-toolexec) can
//     serve inject.ControlHandler(token) on a loopback listener, set the
//     token in CHAOSKIT_FAILPOINTS_TOKEN (t.Setenv) and give the listener
//     as Failpoints beside its Handler;
//   - network faults through chaoskit's proxies need no help from the
//     service, and will run against every target once scenarios can
//     declare them.
//
// A scenario that switches failpoint faults on a target without a control
// endpoint is refused before any load, at the fault's line.
package chaostest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/reports"
)

// Target says where the service a scenario runs against is. It replaces
// how the scenario's own target reaches its service and keeps the rest of
// it: the readiness probe, the state probe, the fault-hit report, the
// failpoint list and the source the fault points are checked against. Set
// one of Handler, Command or URL; the zero Target runs the scenario's own
// target as `chaoskit run` would.
type Target struct {
	// Handler is served on a loopback listener of Run's own for the length
	// of the run; the scenario's load, readiness probe and state probe go
	// to it. It must answer the scenario's readiness probe (target.ready,
	// by default GET /healthz with 200).
	Handler http.Handler
	// Command is a service chaoskit starts, as a scenario's
	// target.command: argv, with {port} and {port:NAME} filled with free
	// loopback ports; URL is then where it listens, such as
	// http://127.0.0.1:{port}. It is stopped at the end of the run, and it
	// is given its failpoint control endpoint's address (Failpoints, or a
	// port chaoskit picks) and the run's token. Env is added to the test's environment, and Dir is its
	// working directory, by default the test's (the package's directory).
	Command []string
	Env     map[string]string
	Dir     string
	// URL is where the service listens: a service the test started, or
	// the Command's. Loopback addresses only.
	URL string
	// Failpoints is the service's failpoint control endpoint, for
	// scenarios that switch failpoint faults. Loopback addresses only.
	// chaoskit sends it $CHAOSKIT_FAILPOINTS_TOKEN when the service is not
	// a Command.
	Failpoints string
}

// config is what the options set.
type config struct {
	dir       string
	vars      map[string]string
	rateScale float64
	formats   []reports.Format
	// allowHosts are the hosts beyond loopback consented to (AllowHosts).
	allowHosts []string
	// log receives the run's progress; nil discards it.
	log io.Writer
}

// Option changes how Run and Check run a scenario.
type Option func(*config)

// ReportDir writes the run directory and the report files into dir instead
// of a temporary directory (t.TempDir() for Run, one removed before Check
// returns), so that they outlive the test.
func ReportDir(dir string) Option { return func(c *config) { c.dir = dir } }

// Vars sets scenario variables, as --var NAME=VALUE does; a later Vars
// overrides an earlier one's values.
func Vars(vars map[string]string) Option {
	return func(c *config) {
		if c.vars == nil {
			c.vars = map[string]string{}
		}
		for k, v := range vars {
			c.vars[k] = v
		}
	}
}

// RateScale multiplies every rate of the scenario by f, as --rate-scale
// does: 0.5 for a lighter run.
func RateScale(f float64) Option { return func(c *config) { c.rateScale = f } }

// AllowHosts consents to traffic to hosts beyond loopback (host names, IP
// addresses, CIDR prefixes), as --allow-host does: a scenario may reach a
// host only when its allow_hosts lists it and this option names it too.
// A target URL beyond loopback needs it as well. Later calls add hosts.
func AllowHosts(hosts ...string) Option {
	return func(c *config) { c.allowHosts = append(c.allowHosts, hosts...) }
}

// Formats names the report files written into the report directory
// (reports.JSON by default); the table is always in the Result.
func Formats(fs ...reports.Format) Option { return func(c *config) { c.formats = fs } }

// Result is what a run of a scenario showed.
type Result struct {
	// Report holds the verdicts, as report.json does.
	Report *reports.Report
	// Failures say what kept the verdict from pass, one message each: a
	// failed check, an inconclusive contract or a run that broke, each
	// starting with the file:line:col of its contract. Run reports each
	// with t.Errorf.
	Failures []string
	// Table is the contract table with its evidence, as chaoskit run
	// prints it.
	Table string
	// Dir is the report directory.
	Dir string
}

// Passed reports whether every contract passed.
func (r *Result) Passed() bool { return len(r.Failures) == 0 }

// Run runs the scenario in file (or each scenario of a directory, as
// chaoskit run does) against target and fails t with one
// t.Errorf per failed check, inconclusive contract or broken run; the
// contract table and the run's progress go to t's log. A scenario that
// does not load, or a target that cannot serve it, fails t with t.Fatalf
// before any load. Run returns the report, or nil when there is none.
func Run(t testing.TB, file string, target Target, opts ...Option) *reports.Report {
	t.Helper()
	c := newConfig(opts)
	if c.dir == "" {
		c.dir = t.TempDir()
	}
	c.log = &testLog{t: t}
	res, err := check(t.Context(), file, target, c)
	if err != nil {
		t.Fatalf("%s", errorText(err))
		return nil
	}
	t.Logf("chaoskit report (run directory below %s):\n%s", res.Dir, res.Table)
	for _, f := range res.Failures {
		t.Errorf("%s", f)
	}
	return res.Report
}

// Check runs the scenario in file against target, as Run does, and
// returns what it showed instead of failing a test. The error says why
// there is no report: the scenario did not load, the target cannot serve
// it, or the report directory could not be used; a run that broke is a
// failure in the Result.
func Check(ctx context.Context, file string, target Target, opts ...Option) (*Result, error) {
	c := newConfig(opts)
	if c.dir == "" {
		dir, err := os.MkdirTemp("", "chaostest-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		c.dir = dir
	}
	return check(ctx, file, target, c)
}

func newConfig(opts []Option) *config {
	c := &config{rateScale: 1}
	for _, o := range opts {
		o(c)
	}
	return c
}

func check(ctx context.Context, file string, target Target, c *config) (*Result, error) {
	if c.rateScale <= 0 || math.IsNaN(c.rateScale) || math.IsInf(c.rateScale, 0) {
		return nil, exitcode.New(exitcode.Invalid, "chaostest.RateScale(%v): give a factor above 0, such as 0.5 or 2", c.rateScale)
	}
	scs, err := plan.LoadAll([]string{file}, harness.LoadOptions(c.vars, c.rateScale, c.allowHosts))
	if err != nil {
		return nil, err
	}
	for _, sc := range scs {
		if err := target.check(sc); err != nil {
			return nil, err
		}
	}
	if target.Handler != nil {
		srv := httptest.NewServer(target.Handler) // 127.0.0.1, a port of its own
		defer srv.Close()
		target.URL = srv.URL
	}
	for _, sc := range scs {
		if err := target.apply(sc); err != nil {
			return nil, err
		}
	}
	var formats []reports.Format
	for _, f := range c.formats {
		if f != reports.Table {
			formats = append(formats, f)
		}
	}
	if c.formats == nil {
		formats = []reports.Format{reports.JSON}
	}
	scale := c.rateScale
	if scale == 1 {
		scale = 0
	}
	rep, err := harness.Run(ctx, scs, harness.Options{ReportDir: c.dir, Formats: formats, Out: c.log, Tool: "chaostest", RateScale: scale})
	if rep == nil {
		return nil, err
	}
	var table strings.Builder
	if terr := reports.WriteTable(&table, rep, reports.TableOptions{Dir: c.dir}); terr != nil {
		return nil, terr
	}
	res := &Result{Report: rep, Table: table.String(), Dir: c.dir, Failures: failures(rep)}
	if err != nil && !errors.Is(err, harness.ErrContractsFailed) && !reported(rep, err) {
		res.Failures = append(res.Failures, "chaostest: "+err.Error())
	}
	return res, nil
}

// failures words rep's shortfalls as test failures: one per failed check.
func failures(rep *reports.Report) []string {
	var out []string
	for _, sf := range harness.Shortfalls(rep) {
		what := sf.Scenario + ": the run did not complete"
		if sf.Contract != "" {
			what = sf.Scenario + " / " + sf.Contract
		}
		for _, r := range sf.Reasons {
			out = append(out, fmt.Sprintf("%s: %s: %s", sf.At, what, r))
		}
	}
	return out
}

// reported says whether err is the error a scenario of rep ended with.
func reported(rep *reports.Report, err error) bool {
	for _, s := range rep.Scenarios {
		if s.Error != "" && s.Error == err.Error() {
			return true
		}
	}
	return false
}

// errorText is err as a test failure shows it: a scenario's errors each
// with the offending line, as chaoskit prints them.
func errorText(err error) string {
	var list plan.ErrorList
	var one *plan.Error
	switch {
	case errors.As(err, &list):
		return list.Detail()
	case errors.As(err, &one):
		return one.Detail()
	}
	return err.Error()
}
