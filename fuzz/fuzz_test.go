package fuzz

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/internal/reach"
	"github.com/chaoskit/chaoskit/plan"
)

const demoPkg = "github.com/chaoskit/chaoskit/demo/"

// catalog resolves the demo's failpoints without importing the demo.
var catalog = plan.Options{Catalog: func(plan.Target, *reach.Policy) (*inject.Catalog, error) {
	return inject.NewCatalog(demoPkg+"store/productQuery", demoPkg+"store/orderWrite", demoPkg+"cache/cacheGet"), nil
}}

func shop(t testing.TB) *plan.Scenario {
	t.Helper()
	sc, err := plan.BundledFuzz("shop", catalog)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestSameSeedSameSchedules(t *testing.T) {
	fz := shop(t).Fuzz
	var first []Schedule
	for trial := 1; trial <= 50; trial++ {
		first = append(first, Generate(fz, 42, trial))
	}
	// A second search with the same seed, drawing in another order, gets
	// the same schedules: a trial's schedule depends on the seed and its
	// number only.
	for trial := 50; trial >= 1; trial-- {
		if s := Generate(fz, 42, trial); !reflect.DeepEqual(s, first[trial-1]) {
			t.Fatalf("trial %d: %s, then %s", trial, first[trial-1], s)
		}
	}
	differ := 0
	for trial := 1; trial <= 50; trial++ {
		if Generate(fz, 43, trial).String() != first[trial-1].String() {
			differ++
		}
	}
	if differ < 45 {
		t.Errorf("seed 43 drew %d of 50 schedules unlike seed 42's", differ)
	}
}

func TestSearchesWithTheSameSeedRunTheSameSchedules(t *testing.T) {
	sc := shop(t)
	search := func(seed uint64) []string {
		clk := &fakeClock{}
		tr := &fakeTrier{clk: clk, judge: func(Schedule) []string { return nil }}
		_, err := Search(context.Background(), sc, tr, Config{Seed: seed, Budget: time.Hour, Runs: 8, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		return tr.ran
	}
	a, b, c := search(1), search(1), search(2)
	if len(a) != 8 || !slices.Equal(a, b) {
		t.Fatalf("seed 1 ran\n%s\nthen\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	if slices.Equal(a, c) {
		t.Error("seeds 1 and 2 ran the same schedules")
	}
}

func TestGeneratedSchedulesStayInTheFaultSpace(t *testing.T) {
	sc := shop(t)
	fz := sc.Fuzz
	seen := map[string]bool{}
	for trial := 1; trial <= 500; trial++ {
		s := Generate(fz, 7, trial)
		if err := s.Validate(fz); err != nil {
			t.Fatalf("trial %d: %v: %s", trial, err, s)
		}
		n := len(s.Phases) - 2
		if s.Phases[0].Name != "warmup" || s.Phases[0].Duration != 1500*time.Millisecond || s.Phases[n+1].Name != "recovery" ||
			n < fz.Phases.Min || n > fz.Phases.Max {
			t.Fatalf("trial %d: %s", trial, s)
		}
		for _, p := range s.Phases[1 : n+1] {
			if p.Duration < fz.Duration.Min || p.Duration > fz.Duration.Max || len(p.Faults) < 1 || len(p.Faults) > fz.MaxFaults {
				t.Fatalf("trial %d: phase %s: %s", trial, p.Name, s)
			}
			for _, f := range p.Faults {
				seen[f.Key()] = true
				ff := spaceOf(fz, f.Path)
				prob := f.Probability
				if prob == 0 {
					prob = 1
				}
				if prob < ff.Probability.Min || prob > ff.Probability.Max {
					t.Fatalf("trial %d: %s outside probability %v", trial, f, ff.Probability)
				}
				if f.Action == inject.Latency {
					d, _ := time.ParseDuration(f.Value)
					if d < ff.Latency.Min || d > ff.Latency.Max {
						t.Fatalf("trial %d: %s outside latency %v", trial, f, ff.Latency)
					}
				}
			}
		}
	}
	// Every point × action of the space is drawn.
	for _, c := range Singles(fz) {
		if !seen[c[0].Key()] {
			t.Errorf("%s never drawn in 500 trials", c[0].Key())
		}
	}
}

func spaceOf(fz *plan.FaultSpace, path string) *plan.FuzzFault {
	for i := range fz.Faults {
		if fz.Faults[i].Path == path {
			return &fz.Faults[i]
		}
	}
	return nil
}

func TestDecodeBytes(t *testing.T) {
	fz := shop(t).Fuzz
	// No bytes choose the first option everywhere: one short phase, the
	// first fault, its first action, the whole phase.
	s := Decode(fz, nil)
	want := "warmup 1.5s | faults-1 1s: store/productQuery=timeout 30% | recovery 3s"
	if s.String() != want {
		t.Errorf("Decode(nil) = %s\nwant %s", s, want)
	}
	// The bytes are the choices: 2 more phases (3 in all), the first 1.1s
	// long with 2 faults, ...
	s = Decode(fz, []byte{2, 1, 1})
	if len(s.Phases) != 5 || s.Phases[1].Duration != 1100*time.Millisecond || len(s.Phases[1].Faults) != 2 {
		t.Errorf("Decode(2,1,1) = %s", s)
	}
	if !reflect.DeepEqual(Decode(fz, []byte("same bytes")), Decode(fz, []byte("same bytes"))) {
		t.Error("the same bytes decoded to two schedules")
	}
}

func TestRenderedScheduleLoadsAsTheSameSchedule(t *testing.T) {
	sc := shop(t)
	for trial := 1; trial <= 40; trial++ {
		s := Generate(sc.Fuzz, 3, trial)
		s.RateScale = 0.5
		got, text, err := Load(sc, s, "shop-trial", filepath.Join(t.TempDir(), "trial.yaml"), "found by a test\nline two", catalog)
		if err != nil {
			t.Fatalf("trial %d: %v\n%s", trial, err, text)
		}
		if back := Extract(got); !reflect.DeepEqual(back.Phases, s.Phases) {
			t.Fatalf("trial %d: rendered\n%s\nloaded back as\n%s\n%s", trial, s, back, text)
		}
		if got.Fuzz != nil || got.Load.Rate.String() != "75/s" || got.Name != "shop-trial" || len(got.Contracts) != len(sc.Contracts) {
			t.Fatalf("trial %d: loaded %+v", trial, got)
		}
		if !strings.HasPrefix(string(text), "# found by a test\n# line two\nname: shop-trial\n") {
			t.Fatalf("header:\n%s", text)
		}
	}
}

func TestRenderFillsVariablesAndMakesPathsAbsolute(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "body.json"), []byte(`{"a": 1}`), 0o644)
	src := `name: svc
vars: {rate: 40/s, flag: "--x"}
target:
  command:
    argv: [./server, "${flag}=$$HOME", --listen, "127.0.0.1:{port}"]
  url: http://127.0.0.1:{port}
  points: [example.com/svc/store/query]
load:
  rate: ${rate}
  requests:
    - {method: POST, path: /items, body_file: ../body.json}
fuzz:
  faults:
    - {point: store/query, actions: [error]}
contracts:
  - name: ok
    phase: recovery
    expect: [status == 200 for >= 99%]
`
	file := filepath.Join(dir, "sub", "svc.yaml")
	os.MkdirAll(filepath.Dir(file), 0o755)
	os.WriteFile(file, []byte(src), 0o644)
	opts := plan.Options{Catalog: func(t plan.Target, _ *reach.Policy) (*inject.Catalog, error) {
		return inject.NewCatalog(t.Points...), nil
	}}
	sc, err := plan.LoadFile(file, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Rendered elsewhere, the scenario still finds its body file and its
	// program, and keeps the escaped dollar.
	got, text, err := Load(sc, Decode(sc.Fuzz, nil), "svc-repro", filepath.Join(t.TempDir(), "repro.yaml"), "", opts)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	c := got.Target.Command
	if c.Dir != filepath.Join(dir, "sub") || c.Argv[1] != "--x=$HOME" || got.Load.Rate.String() != "40/s" {
		t.Errorf("command %+v, rate %v\n%s", c, got.Load.Rate, text)
	}
	if got.Load.Requests[0].Body != `{"a": 1}` || strings.Contains(string(text), "${") || strings.Contains(string(text), "vars:") {
		t.Errorf("body %q\n%s", got.Load.Requests[0].Body, text)
	}
}

// fakeClock is a clock that moves only when a fake run takes time.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

// fakeTrier stands in for real runs where the search or shrinking logic
// is under test: a run takes its schedule's duration and a second, and
// fails the invariants judge names.
type fakeTrier struct {
	clk   *fakeClock
	judge func(Schedule) []string
	ran   []string
	mix   func(Schedule) []string
	err   error
	// unfired says which faults never fire; default the cache's.
	unfired func(Fault) bool
}

func (f *fakeTrier) Try(_ context.Context, _ string, s Schedule) (*Outcome, error) {
	if f.err != nil {
		return nil, f.err
	}
	f.clk.now = f.clk.now.Add(s.Duration() + time.Second)
	f.ran = append(f.ran, s.String())
	o := &Outcome{Failed: f.judge(s), Hits: map[string]int64{}, Elapsed: s.Duration() + time.Second}
	for _, name := range []string{"A", "B"} {
		v := contract.Verdict{Name: name, Outcome: contract.Pass}
		if slices.Contains(o.Failed, name) {
			v.Outcome = contract.Fail
		}
		o.Verdicts = append(o.Verdicts, v)
	}
	if f.mix != nil {
		o.Mix = f.mix(s)
	}
	for _, p := range s.Phases {
		for _, fl := range p.Faults {
			o.Hits[p.Name+"/"+fl.Key()] = 10
			if (f.unfired == nil && fl.Point == "cache/cacheGet") || (f.unfired != nil && f.unfired(fl)) {
				o.Hits[p.Name+"/"+fl.Key()] = 0
			}
		}
	}
	return o, nil
}

func TestSearchStopsAtTheBudget(t *testing.T) {
	sc := shop(t)
	clk := &fakeClock{now: time.Unix(1000, 0)}
	tr := &fakeTrier{clk: clk, judge: func(Schedule) []string { return nil }}
	var events []EventKind
	res, err := Search(context.Background(), sc, tr, Config{Seed: 1, Budget: time.Minute, Clock: clk, Progress: func(e Event) { events = append(events, e.Kind) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil || res.Stopped != "budget" || res.Elapsed > time.Minute || len(res.Trials) < 4 {
		t.Fatalf("stopped %s after %v and %d trials", res.Stopped, res.Elapsed, len(res.Trials))
	}
	// The next trial would not have ended within the minute.
	next := Generate(sc.Fuzz, 1, len(res.Trials)+1)
	if res.Elapsed+next.Duration()+time.Second <= time.Minute {
		t.Errorf("stopped at %v although trial %d (%v) fitted", res.Elapsed, len(res.Trials)+1, next.Duration())
	}
	if len(events) != 2*len(res.Trials) || events[0] != TrialStart || events[1] != TrialDone {
		t.Errorf("events %v", events)
	}
	if c := res.Coverage; c.Runs != len(res.Trials) || c.byName["A"].Pass != len(res.Trials) || c.byName[sc.Contracts[0].Name].Checked() != 0 {
		t.Errorf("coverage: %d runs, A %+v", c.Runs, c.byName["A"])
	}
}

func TestSearchStopsAtTheFirstViolation(t *testing.T) {
	sc := shop(t)
	clk := &fakeClock{}
	calls := 0
	tr := &fakeTrier{clk: clk, judge: func(Schedule) []string {
		calls++
		if calls == 3 {
			return []string{"B"}
		}
		return nil
	}}
	res, err := Search(context.Background(), sc, tr, Config{Seed: 5, Budget: time.Hour, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Violation
	if v == nil || v.Trial != 3 || v.Invariant != "B" || res.Stopped != "violation" || len(res.Trials) != 3 {
		t.Fatalf("result %+v", res)
	}
	if v.Original.String() != Generate(sc.Fuzz, 5, 3).String() || v.FoundAfter != res.Elapsed {
		t.Errorf("violation %+v", v)
	}
	// A failing run stops the search with its error.
	tr.err = errors.New("target did not start")
	if _, err := Search(context.Background(), sc, tr, Config{Seed: 5, Budget: time.Hour, Clock: clk}); err != tr.err {
		t.Errorf("error %v", err)
	}
}

// staleAfterRecovery is a model of the demo's planted bug: the recovery
// invariant B fails when a product-query fault of at least 20 % in some
// phase before the recovery left the cache serving.
func staleAfterRecovery(s Schedule) []string {
	var failed []string
	for _, p := range s.Phases {
		if p.Name == "recovery" {
			if len(p.Faults) > 0 {
				return []string{"A", "B"} // a fault in the recovery breaks more
			}
			break
		}
		for _, f := range p.Faults {
			if f.Point == "store/productQuery" && (f.Probability == 0 || f.Probability >= 0.2) {
				failed = []string{"B"}
			}
		}
	}
	return failed
}

func TestShrinkToOneFaultPhaseAndTheRecovery(t *testing.T) {
	sc := shop(t)
	clk := &fakeClock{}
	tr := &fakeTrier{clk: clk, judge: staleAfterRecovery}
	// The seed's first schedule with a product-query fault in it.
	var s Schedule
	for trial := 1; ; trial++ {
		if s = Generate(sc.Fuzz, 1, trial); len(s.Phases) == 5 && s.Faults() >= 3 && staleAfterRecovery(s) != nil {
			break
		}
	}
	sh := &Shrinker{Trier: tr, Invariant: "B", Allowed: []string{"B"}, Keep: map[string]bool{"recovery": true}, Space: sc.Fuzz,
		MinScale: 0.5, Config: Config{Clock: clk}}
	got, rec, err := sh.Shrink(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Phases) != 2 || got.Faults() != 1 || rec.Stopped != "minimal" {
		t.Fatalf("shrunk %s to %s (%s)", s, got, rec.Stopped)
	}
	p, f := got.Phases[0], got.Phases[0].Faults[0]
	// Within the fault space: the shortest fault phase, the lowest
	// probability; the recovery untouched; the rate halved once.
	if p.Duration != sc.Fuzz.Duration.Min || f.Probability != 0.3 || f.After != 0 || f.For != 0 ||
		!reflect.DeepEqual(got.Phases[1], Phase{Name: "recovery", Duration: 3 * time.Second}) || got.Scale() != 0.5 {
		t.Errorf("shrunk to %s", got)
	}
	for _, ran := range tr.ran {
		if strings.Contains(ran, "recovery 3s:") || !strings.Contains(ran, "recovery 3s") {
			t.Errorf("a candidate changed the recovery: %s", ran)
		}
	}
	kept := 0
	for _, st := range rec.Steps {
		if st.Accepted {
			kept++
		}
	}
	if rec.Runs != len(tr.ran) || len(rec.Steps) != rec.Runs || kept < 4 {
		t.Errorf("%d runs, %d steps, %d kept", rec.Runs, len(rec.Steps), kept)
	}
}

func TestShrinkKeepsOnlyWhatFailsTheSameInvariant(t *testing.T) {
	sc := shop(t)
	clk := &fakeClock{}
	// Dropping any fault breaks A instead of B: nothing may be dropped.
	s := Generate(sc.Fuzz, 1, 1)
	n := s.Faults()
	tr := &fakeTrier{clk: clk, judge: func(c Schedule) []string {
		if c.Faults() < n {
			return []string{"A", "B"}
		}
		return []string{"B"}
	}}
	sh := &Shrinker{Trier: tr, Invariant: "B", Allowed: []string{"B"}, Keep: map[string]bool{"recovery": true}, Space: sc.Fuzz, Config: Config{Clock: clk}}
	got, _, err := sh.Shrink(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if got.Faults() != n {
		t.Errorf("shrunk %s to %s, dropping faults whose loss broke another invariant", s, got)
	}
}

func TestShrinkStopsAtItsBudget(t *testing.T) {
	sc := shop(t)
	clk := &fakeClock{}
	tr := &fakeTrier{clk: clk, judge: func(Schedule) []string { return []string{"B"} }}
	s := Generate(sc.Fuzz, 1, 1)
	sh := &Shrinker{Trier: tr, Invariant: "B", Allowed: []string{"B"}, Space: sc.Fuzz, Config: Config{Clock: clk, ShrinkBudget: 30 * time.Second}}
	_, rec, err := sh.Shrink(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Stopped != "budget" || rec.Elapsed > 30*time.Second || rec.Runs == 0 {
		t.Errorf("stopped %s after %v and %d runs", rec.Stopped, rec.Elapsed, rec.Runs)
	}
	sh.ShrinkBudget, sh.ShrinkRuns = 0, 2
	if _, rec, _ = sh.Shrink(context.Background(), s); rec.Stopped != "runs" || rec.Runs != 2 {
		t.Errorf("stopped %s after %d runs", rec.Stopped, rec.Runs)
	}
}

func TestMergeKeepsFaultsAtTheirTimes(t *testing.T) {
	sc := shop(t)
	s := Schedule{Phases: []Phase{
		{Name: "warmup", Duration: time.Second},
		{Name: "faults-1", Duration: 2 * time.Second, Faults: []Fault{{Point: "store/productQuery", Path: demoPkg + "store/productQuery", Action: "error", After: 500 * time.Millisecond}}},
		{Name: "faults-2", Duration: time.Second, Faults: []Fault{{Point: "store/orderWrite", Path: demoPkg + "store/orderWrite", Action: "error", For: 300 * time.Millisecond}}},
		{Name: "recovery", Duration: 3 * time.Second},
	}}
	sh := &Shrinker{Keep: map[string]bool{"recovery": true}, Space: sc.Fuzz}
	var got []string
	for _, c := range sh.mergePhases(s) {
		got = append(got, c.s.String())
	}
	want := []string{
		"faults-1 3s: store/productQuery=error +1.5s | faults-2 1s: store/orderWrite=error for 300ms | recovery 3s",
		"warmup 1s | faults-1 3s: store/productQuery=error +500ms for 1.5s, store/orderWrite=error +2s for 300ms | recovery 3s",
	}
	if !slices.Equal(got, want) {
		t.Errorf("merges\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestExploreRunsSinglesThenPairsSkippingCoveredOnes(t *testing.T) {
	sc := shop(t)
	clk := &fakeClock{}
	// Every product-query fault has one effect, every order-write fault
	// another; the cache fault never fires alone.
	mixOf := func(s Schedule) []string {
		var out []string
		for _, f := range s.Phases[1].Faults {
			out = append(out, strings.Split(f.Point, "/")[1])
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	tr := &fakeTrier{clk: clk, judge: func(s Schedule) []string {
		if strings.Contains(s.String(), "productQuery=latency") && strings.Contains(s.String(), "orderWrite=timeout") {
			return []string{"A"}
		}
		return nil
	}, mix: mixOf}
	ex, err := Explore(context.Background(), sc, tr, Config{Budget: time.Hour, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	// 3 product-query faults, 1 cache, 2 order-write: 6 singles and
	// 3×1 + 3×2 + 1×2 = 11 pairs. Pairs of product-query × order-write
	// all have one effect (1 run, 5 saved); product-query × cache one
	// effect (1 run, 2 saved); cache × order-write one (1 run, 1 saved).
	if len(ex.Singles) != 6 || len(ex.Pairs) != 11 || ex.Runs != 1+6+3 || ex.Saved != 8 || ex.Unexplored != 0 {
		t.Fatalf("%d singles, %d pairs, %d runs, %d saved, %d unexplored", len(ex.Singles), len(ex.Pairs), ex.Runs, ex.Saved, ex.Unexplored)
	}
	if ex.Baseline.Label != "no fault" || !ex.Baseline.Run || len(tr.ran) != ex.Runs {
		t.Errorf("baseline %+v, %d runs", ex.Baseline, len(tr.ran))
	}
	for _, r := range ex.Singles {
		if !r.Run {
			t.Errorf("single %s not run", r.Label)
		}
	}
	if u := ex.Singles[3]; u.Label != "cache/cacheGet=error" || !slices.Equal(u.Unfired, []string{"cache/cacheGet=error"}) {
		t.Errorf("cache fault row %+v", u)
	}
	// The reduction's blind spot, as documented: the one pair that breaks
	// A is covered by an equivalent pair and never runs.
	if ex.Violated() {
		t.Error("the failing pair ran although an equivalent one had")
	}
	for _, r := range ex.Pairs {
		if r.Label == "store/productQuery=latency + store/orderWrite=timeout" && r.CoveredBy != "store/productQuery=timeout + store/orderWrite=error" {
			t.Errorf("pair %+v", r)
		}
	}
	// Faults that never fired alone stand for themselves only: with the
	// order-write error unfired too, its pairs with the product-query
	// faults are not covered by the cache fault's.
	clk3 := &fakeClock{}
	tr3 := &fakeTrier{clk: clk3, judge: func(Schedule) []string { return nil }, mix: mixOf,
		unfired: func(f Fault) bool { return f.Point == "cache/cacheGet" || f.Key() == "store/orderWrite=error" }}
	if ex, err = Explore(context.Background(), sc, tr3, Config{Budget: time.Hour, Clock: clk3}); err != nil || ex.Runs != 1+6+5 || ex.Saved != 6 {
		t.Errorf("two unfired faults: %d runs, %d saved, %v", ex.Runs, ex.Saved, err)
	}

	// With the budget for a few runs only, the rest stays unexplored.
	clk2 := &fakeClock{}
	tr2 := &fakeTrier{clk: clk2, judge: func(Schedule) []string { return nil }, mix: mixOf}
	ex, err = Explore(context.Background(), sc, tr2, Config{Budget: 40 * time.Second, Clock: clk2})
	if err != nil || ex.Runs != 5 || ex.Unexplored != 2+11 {
		t.Errorf("budget 40s: %d runs, %d unexplored, %v", ex.Runs, ex.Unexplored, err)
	}
}

func TestCoverageCountsFaultsAndVerdicts(t *testing.T) {
	sc := shop(t)
	c := NewCoverage(sc)
	s := Schedule{Phases: []Phase{
		{Name: "faults-1", Duration: time.Second, Faults: []Fault{{Point: "store/productQuery", Action: "timeout"}, {Point: "cache/cacheGet", Action: "error"}}},
		{Name: "faults-2", Duration: time.Second, Faults: []Fault{{Point: "store/productQuery", Action: "timeout"}}},
	}}
	o := &Outcome{Hits: map[string]int64{"faults-1/store/productQuery=timeout": 5, "faults-1/cache/cacheGet=error": 0, "faults-2/store/productQuery=timeout": 7},
		Verdicts: []contract.Verdict{{Name: sc.Contracts[0].Name, Outcome: contract.Fail}, {Name: sc.Contracts[1].Name, Outcome: contract.Inconclusive}}}
	c.Add(s, o)
	got := map[string]string{}
	for _, f := range c.Faults {
		got[f.Key] = fmt.Sprintf("%d/%d/%d", f.Scheduled, f.Fired, f.Hits)
	}
	if got["store/productQuery=timeout"] != "2/2/12" || got["cache/cacheGet=error"] != "1/0/0" || got["store/orderWrite=error"] != "0/0/0" || len(got) != 6 {
		t.Errorf("fault coverage %v", got)
	}
	if i := c.Invariants; len(i) != len(sc.Contracts) || i[0].Fail != 1 || i[0].Checked() != 1 || i[1].Inconclusive != 1 || i[1].Checked() != 0 || i[2].Checked() != 0 {
		t.Errorf("invariant coverage %+v %+v %+v", i[0], i[1], i[2])
	}
}

// TestRenderInlinesIncludes checks a fuzz scenario that includes a shared
// file renders trials that load from another directory (they failed to find
// the include, and chaoskit fuzz and explore exited 2), as the same
// scenario with the schedule's phases.
func TestRenderInlinesIncludes(t *testing.T) {
	src, err := os.ReadFile("../scenarios/fuzz/shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	start, end := strings.Index(text, "target:"), strings.Index(text, "writes:")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "_common.yaml"), []byte(text[start:end]), 0o644)
	os.WriteFile(filepath.Join(dir, "shop.yaml"), []byte(text[:start]+"include: _common.yaml\n"+text[end:]), 0o644)
	base, err := plan.LoadFile(filepath.Join(dir, "shop.yaml"), catalog)
	if err != nil {
		t.Fatal(err)
	}
	want := shop(t)
	for trial := 1; trial <= 10; trial++ {
		s := Generate(base.Fuzz, 5, trial)
		got, text, err := Load(base, s, "shop-trial", filepath.Join(t.TempDir(), "trial.yaml"), "", catalog)
		if err != nil {
			t.Fatalf("trial %d: %v\n%s", trial, err, text)
		}
		if back := Extract(got); !reflect.DeepEqual(back.Phases, s.Phases) {
			t.Fatalf("trial %d: loaded back as %s", trial, back)
		}
		if !reflect.DeepEqual(got.Target, want.Target) || !reflect.DeepEqual(got.Load, want.Load) || strings.Contains(string(text), "include") {
			t.Fatalf("trial %d: target %+v load %+v, want the bundled scenario's\n%s", trial, got.Target, got.Load, text)
		}
	}
}
