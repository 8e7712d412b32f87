package inproc

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/demo"
	_ "github.com/chaoskit/chaoskit/demo/profile" // the demo's failpoints and headers
	"github.com/chaoskit/chaoskit/fuzz"
	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/internal/reach"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/runner"
	"github.com/chaoskit/chaoskit/timeline"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// needLive skips a test under the race detector: the in-process demo's
// timeouts (100ms on a database read) and its degrade switch (engaged by a
// p95 read latency over 100ms) are real-time promises, which the demo keeps
// when built normally and does not keep slowed several times by the race
// detector on a shared machine: there its SQLite reads alone trip the
// switch, and the shop's invariants then judge the machine. The demo's
// fault points are switches, live in any build.
func needLive(t testing.TB) {
	t.Helper()
	if raceEnabled {
		t.Skip("the in-process demo's real-time promises do not hold under the race detector: run without -race (make test does)")
	}
}

// shop returns the bundled fuzz scenario, its points resolved against the
// demo's markers.
func shop(t testing.TB) *plan.Scenario {
	t.Helper()
	sc, err := plan.BundledFuzz("shop", plan.Options{Catalog: func(plan.Target, *reach.Policy) (*inject.Catalog, error) {
		return inject.NewCatalog(demo.Failpoints()...), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// trier runs schedules against an in-process demo with the given bug
// planted ("" for none).
func trier(t testing.TB, sc *plan.Scenario, bug string) *Trier {
	return &Trier{
		Base: sc,
		Load: plan.Options{Catalog: func(plan.Target, *reach.Policy) (*inject.Catalog, error) {
			return inject.NewCatalog(demo.Failpoints()...), nil
		}},
		Run: runner.Options{Tool: "inproc-test"},
		Dir: t.TempDir(),
		Service: func(ctx context.Context) (http.Handler, func() error, error) {
			s, err := demo.New(ctx, demo.Config{Bug: bug})
			if err != nil {
				return nil, nil, err
			}
			return s.Handler(), s.Close, nil
		},
	}
}

// short narrows the fault space to one fault phase of at most a second: a
// trial then takes about 5.5 s (warmup 1.5 s, recovery 3 s), inside the
// fuzzing engine's 10 s limit for one input.
func short(fz *plan.FaultSpace) *plan.FaultSpace {
	c := *fz
	c.Phases = plan.IntRange{Min: 1, Max: 1}
	c.Duration = plan.DurationRange{Min: 500 * time.Millisecond, Max: time.Second}
	return &c
}

// dbErrors is a schedule that switches the product query to errors for a
// second: the error burst opens the breaker and the cache serves.
func dbErrors(fz *plan.FaultSpace) fuzz.Schedule {
	s := fuzz.Decode(fz, nil)
	s.Phases[1].Duration = time.Second
	s.Phases[1].Faults = []fuzz.Fault{{Point: "store/productQuery", Path: demoPath("store/productQuery"), Action: inject.Error, Value: "injected error"}}
	return s
}

func demoPath(p string) string {
	for _, full := range demo.Failpoints() {
		if strings.HasSuffix(full, "/"+p) {
			return full
		}
	}
	panic("no demo failpoint " + p)
}

// The in-process trier catches the planted bug with a schedule chaoskit
// fuzz finds it with, and the correct demo passes the same schedule.
func TestInProcessTrialsJudgeTheDemo(t *testing.T) {
	needLive(t)
	sc := shop(t)
	s := dbErrors(short(sc.Fuzz))
	for _, tc := range []struct {
		bug       string
		violation bool
	}{{"", false}, {"stale-after-recovery", true}} {
		o, err := trier(t, sc, tc.bug).Try(context.Background(), "db-errors", s)
		if err != nil {
			t.Fatalf("bug %q: %v", tc.bug, err)
		}
		if o.Violated() != tc.violation {
			t.Errorf("bug %q: failed invariants %v, want a violation: %v", tc.bug, o.Failed, tc.violation)
		}
		if h := o.Hits["faults-1/store/productQuery=error"]; h == 0 {
			t.Errorf("bug %q: the fault never fired (hits %v)", tc.bug, o.Hits)
		}
	}
}

// FuzzShopInProcess drives schedules decoded from the engine's bytes, with
// the decoder chaoskit fuzz's generator uses, against an in-process demo
// and fails on any broken invariant of the shop fuzz scenario. A failure
// names the schedule and the scenario file that replays it with chaoskit
// run.
func FuzzShopInProcess(f *testing.F) {
	needLive(f)
	sc := shop(f)
	fz := short(sc.Fuzz)
	f.Add([]byte{})
	f.Add([]byte{0, 1, 0, 3, 0, 7, 0, 0})
	f.Add([]byte{0, 2, 1, 1, 9, 0, 4, 2, 1, 0, 1, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := fuzz.Decode(fz, data)
		o, err := trier(t, sc, "").Try(context.Background(), "trial", s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		for _, v := range o.Verdicts {
			t.Logf("%s: %s %s (%s)", v.Name, v.Outcome, v.Measured, v.Expected)
		}
		if o.Violated() {
			t.Fatalf("%s broke %s; replay: chaoskit run %s", s, strings.Join(o.Failed, "; "), o.File)
		}
	})
}

// An in-process trial records exactly the response headers its scenario
// names (plan.Scenario.RecordedHeaders: its classification, the target
// profile's conventions, its predicates) besides the two every run keeps,
// as a trial run as a process does: binding the test's handler changes
// the service, never what is recorded.
func TestInProcessTrialsRecordTheHeadersTheScenarioNames(t *testing.T) {
	needLive(t)
	sc := shop(t)
	tr := trier(t, sc, "")
	o, err := tr.Try(context.Background(), "headers", dbErrors(short(sc.Fuzz)))
	if err != nil {
		t.Fatal(err)
	}
	trial, err := plan.LoadFile(o.File, tr.Load)
	if err != nil {
		t.Fatal(err)
	}
	names, all := trial.RecordedHeaders()
	if all {
		t.Fatalf("the shop scenario names headers by computed names; this test wants it to name them")
	}
	named := map[string]bool{"Retry-After": true, "Content-Type": true}
	for _, n := range names {
		named[http.CanonicalHeaderKey(n)] = true
	}
	src, err := timeline.OpenDir(o.Dir)
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]int{}
	n := 0
	err = src.EachRequest(func(r *timeline.Request) error {
		n++
		for k := range r.Headers {
			recorded[k]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("the trial recorded no request")
	}
	for k, c := range recorded {
		if !named[k] {
			t.Errorf("header %s recorded on %d requests, and the scenario names only %v", k, c, slices.Sorted(maps.Keys(named)))
		}
	}
	cls := trial.Classification()
	for _, k := range []string{cls.SourceHeader, cls.AgeHeader} {
		if k == "" {
			t.Fatalf("the shop scenario's classification names no source or age header: %+v", cls)
		}
		if recorded[http.CanonicalHeaderKey(k)] == 0 {
			t.Errorf("header %s, which the scenario's classification reads, was recorded on none of %d requests (recorded: %v)", k, n, recorded)
		}
	}
}
