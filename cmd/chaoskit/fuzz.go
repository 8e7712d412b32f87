package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/fuzz"
	"github.com/chaoskit/chaoskit/fuzz/trials"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/runner"
	"github.com/chaoskit/chaoskit/scenarios"
)

// Files a fuzz or explore invocation writes to its report directory.
const (
	reproducerFile = "reproducer.yaml"
	fuzzFile       = "fuzz.json"
	exploreFile    = "explore.json"
	trialsDir      = "trials"
)

// fuzzTarget is how fuzz and explore name the fuzz scenario and its run
// settings.
type fuzzTarget struct {
	bundled   string
	vars      []string
	reportDir string
	budget    time.Duration
	verbose   bool
	keep      bool
}

func (t *fuzzTarget) register(cmd *cobra.Command, budget time.Duration) {
	f := cmd.Flags()
	f.StringVar(&t.bundled, "bundled", "", "use the bundled fuzz scenario NAME ("+strings.Join(scenarios.BundledFuzzNames(), ", ")+")")
	f.StringArrayVar(&t.vars, "var", nil, "set a scenario variable: --var NAME=VALUE (repeatable)")
	f.StringVar(&t.reportDir, "report-dir", "out", "directory for the reports, the reproducer and the trials' run directories")
	f.DurationVar(&t.budget, "budget", budget, "time the search may take")
	f.BoolVarP(&t.verbose, "verbose", "v", false, "show every run's phases")
	f.BoolVar(&t.keep, "keep-trials", false, "keep the run directories of every trial, not only the violating one")
}

// load loads the fuzz scenario the arguments name.
func (t *fuzzTarget) load(args []string) (*scenarios.Scenario, scenarios.Options, error) {
	lf := loadFlags{vars: t.vars, rateScale: 1}
	opts, err := lf.options()
	if err != nil {
		return nil, opts, err
	}
	var sc *scenarios.Scenario
	switch {
	case t.bundled != "" && len(args) > 0:
		return nil, opts, usageError("give a scenario file or --bundled NAME, not both")
	case t.bundled != "":
		sc, err = scenarios.BundledFuzz(t.bundled, opts)
	case len(args) != 1:
		return nil, opts, usageError("give one fuzz scenario file, or --bundled NAME (%s)", strings.Join(scenarios.BundledFuzzNames(), ", "))
	default:
		var scs []*scenarios.Scenario
		if scs, err = scenarios.LoadAll(args, opts); err == nil {
			sc = scs[0]
		}
	}
	if err != nil {
		return nil, opts, err
	}
	if sc.Fuzz == nil {
		return nil, opts, usageError("%s is not a fuzz scenario: it has no fuzz section with a fault space (see docs/fuzzing.md)", sc.File)
	}
	opts.Vars = nil
	return sc, opts, nil
}

// trier returns the real trier: each schedule a real run of chaoskit's
// runner, below DIR/trials.
func (t *fuzzTarget) trier(sc *scenarios.Scenario, opts scenarios.Options, out io.Writer) (*trials.Runner, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, &runner.InfraError{Msg: "cannot find the chaoskit executable", Err: err}
	}
	if err := os.MkdirAll(t.reportDir, 0o755); err != nil {
		return nil, &runner.InfraError{Msg: "cannot create the report directory", Err: err}
	}
	log := io.Discard
	if t.verbose {
		log = out
	}
	return &trials.Runner{Base: sc, Load: opts, Dir: filepath.Join(t.reportDir, trialsDir),
		Run: runner.Options{Self: self, Log: log, Tool: version, StateDir: stateDir()}}, nil
}

// prune removes the trials' files except those keep names.
func (t *fuzzTarget) prune(keep ...string) {
	if t.keep {
		return
	}
	dir := filepath.Join(t.reportDir, trialsDir)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !slices.Contains(keep, strings.TrimSuffix(e.Name(), ".yaml")) {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) == 0 {
		os.Remove(dir)
	}
}

type fuzzFlags struct {
	fuzzTarget
	seed         uint64
	runs         int
	shrinkBudget time.Duration
	shrinkRuns   int
}

func newFuzzCmd() *cobra.Command {
	var f fuzzFlags
	cmd := &cobra.Command{
		Use:   "fuzz SCENARIO | --bundled NAME",
		Short: "Search a fault space for schedules that break the invariants, and shrink what breaks them",
		Long: `Fuzz runs trials of a fuzz scenario: each a fault schedule drawn from the
scenario's fault space (a warmup, one to a few fault phases with random faults
and timings, a recovery), run for real against the target and judged by the
scenario's contracts, its invariants. The same --seed draws the same
schedules.

When a trial breaks an invariant, fuzz shrinks its schedule: it drops phases
and faults, merges and shortens phases, lowers probabilities, latencies and
the rate, re-running each candidate and keeping only what still breaks the
same invariant. The minimal schedule is written as an ordinary scenario,
DIR/reproducer.yaml, which fuzz runs once more to confirm, with its reports
in DIR; chaoskit run DIR/reproducer.yaml replays it.

Exit codes: 0 no violation within the budget, 1 a violation (see the
reproducer), 2 invalid input, 3 infrastructure error, 130 interrupted.`,
		Example: `  chaoskit fuzz --bundled shop --budget 60s --seed 1
  chaoskit fuzz --bundled shop --var bug=stale-after-recovery --seed 1 --report-dir out/fuzz
  chaoskit fuzz checkout-fuzz.yaml --runs 20`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("seed") {
				f.seed = rand.Uint64() % 1_000_000
			}
			return runFuzz(cmd.Context(), cmd.OutOrStdout(), args, f)
		},
	}
	f.register(cmd, time.Minute)
	cmd.Flags().Uint64Var(&f.seed, "seed", 0, "seed of the schedules (default: a random one, printed)")
	cmd.Flags().IntVar(&f.runs, "runs", 0, "run at most N trials (0: as many as the budget allows)")
	cmd.Flags().DurationVar(&f.shrinkBudget, "shrink-budget", 3*time.Minute, "time shrinking may take")
	cmd.Flags().IntVar(&f.shrinkRuns, "shrink-runs", 0, "re-run at most N candidates while shrinking (0: as many as the shrink budget allows)")
	return cmd
}

// fuzzReport is fuzz.json.
type fuzzReport struct {
	Scenario   string       `json:"scenario"`
	File       string       `json:"file"`
	Seed       uint64       `json:"seed"`
	Budget     string       `json:"budget"`
	Result     *fuzz.Result `json:"result"`
	Reproducer string       `json:"reproducer,omitempty"`
	// Confirmed says whether running the reproducer failed the same
	// invariant again.
	Confirmed *bool `json:"confirmed,omitempty"`
}

func runFuzz(ctx context.Context, out io.Writer, args []string, f fuzzFlags) error {
	if f.budget <= 0 || f.shrinkBudget < 0 || f.runs < 0 || f.shrinkRuns < 0 {
		return usageError("--budget must be above 0; --shrink-budget, --runs and --shrink-runs must not be negative")
	}
	sc, opts, err := f.load(args)
	if err != nil {
		return err
	}
	tr, err := f.trier(sc, opts, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "fuzzing %s (%s): seed %d, budget %v, %d invariants, %d points × actions\n",
		sc.Name, sc.File, f.seed, f.budget, len(sc.Contracts), len(fuzz.Singles(sc.Fuzz)))
	prog := newProgress(out, f.budget)
	defer prog.stop()
	cfg := fuzz.Config{Seed: f.seed, Budget: f.budget, Runs: f.runs, ShrinkBudget: f.shrinkBudget, ShrinkRuns: f.shrinkRuns, Progress: prog.event}
	rep := fuzzReport{Scenario: sc.Name, File: sc.File, Seed: f.seed, Budget: f.budget.String()}
	res, err := fuzz.Search(ctx, sc, tr, cfg)
	rep.Result = res
	if err != nil {
		prog.stop()
		return fuzzError(err)
	}
	v := res.Violation
	if v == nil {
		prog.stop()
		f.prune()
		printCoverage(out, res.Coverage)
		fmt.Fprintf(out, "\nno invariant broken in %d trials (%v, stopped by the %s); seed %d\n", len(res.Trials), res.Elapsed.Round(time.Second), res.Stopped, f.seed)
		return writeFuzzReport(f.reportDir, rep)
	}
	prog.note(fmt.Sprintf("trial %d broke %q after %v: %s", v.Trial, v.Invariant, v.FoundAfter.Round(100*time.Millisecond), v.Original))
	prog.shrinking(f.shrinkBudget)
	sh := &fuzz.Shrinker{Trier: tr, Invariant: v.Invariant, Allowed: v.Failed, Keep: referencedPhases(sc), Space: sc.Fuzz,
		Valid: func(s fuzz.Schedule) error {
			_, _, err := fuzz.Load(sc, s, sc.Name+"-candidate", filepath.Join(tr.Dir, "candidate.yaml"), "", opts)
			return err
		},
		MinScale: minScale(sc), Config: cfg}
	shrunk, rec, err := sh.Shrink(ctx, v.Original)
	v.Shrunk, v.Shrink, v.Schedules[1] = shrunk, rec, shrunk.String()
	prog.stop()
	if err != nil {
		return fuzzError(err)
	}
	trialLabel := fmt.Sprintf("trial-%03d", v.Trial)
	f.prune(trialLabel)
	printCoverage(out, res.Coverage)
	fmt.Fprintf(out, "\nviolation: %q broken by trial %d (seed %d), found after %v\n", v.Invariant, v.Trial, f.seed, v.FoundAfter.Round(100*time.Millisecond))
	fmt.Fprintf(out, "  schedule: %s\n", v.Original)
	fmt.Fprintf(out, "  shrunk:   %s\n", shrunk)
	fmt.Fprintf(out, "  from %d phases and %d faults to %d phases and %d fault(s) in %d runs (%v, %s)\n",
		len(v.Original.Phases), v.Original.Faults(), len(shrunk.Phases), shrunk.Faults(), rec.Runs, rec.Elapsed.Round(time.Second), rec.Stopped)

	// The reproducer is confirmed the way a user replays it: loaded from
	// its file, run and judged as chaoskit run does.
	name := sc.Name + "-reproducer"
	comment := fmt.Sprintf("chaoskit fuzz found this schedule breaking %q:\nseed %d, trial %d of %s, shrunk from %d phases and %d faults in %d runs.\nReplay it with: chaoskit run %s",
		v.Invariant, f.seed, v.Trial, sc.File, len(v.Original.Phases), v.Original.Faults(), rec.Runs, reproducerFile)
	text, err := fuzz.Render(sc, shrunk, name, comment)
	if err != nil {
		return err
	}
	repro := filepath.Join(f.reportDir, reproducerFile)
	if err := os.WriteFile(repro, text, 0o644); err != nil {
		return &runner.InfraError{Msg: "cannot write the reproducer", Err: err}
	}
	rep.Reproducer = repro
	fmt.Fprintf(out, "  reproducer: %s\n\nconfirming: chaoskit run %s\n", repro, repro)
	confirmed, err := confirm(ctx, out, repro, opts, f, v.Invariant)
	rep.Confirmed = &confirmed
	if werr := writeFuzzReport(f.reportDir, rep); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("invariant %q broken; replay with: chaoskit run %s", v.Invariant, repro)
	if !confirmed {
		msg += " (the confirming run did not break it again: the violation may depend on timing)"
	}
	return &exitError{code: exitFail, err: errors.New(msg)}
}

// confirm runs the reproducer as chaoskit run would and reports whether
// it broke the invariant again; its reports go to the report directory.
func confirm(ctx context.Context, out io.Writer, file string, opts scenarios.Options, f fuzzFlags, invariant string) (bool, error) {
	sc, err := scenarios.LoadFile(file, opts)
	if err != nil {
		return false, err
	}
	self, _ := os.Executable()
	started := time.Now()
	res, err := runner.Run(ctx, sc, runner.Options{Self: self, Dir: filepath.Join(f.reportDir, sc.Name), Log: out, Live: isTerminal(out),
		Tool: version, StateDir: stateDir()})
	rep := reports.ScenarioReport{Name: sc.Name, File: sc.File, RunDir: sc.Name}
	if res != nil {
		judge(&rep, sc, res.Timeline)
	}
	if err != nil {
		rep.Error = err.Error()
	}
	rep.Verdict = reports.ScenarioVerdict(rep.Contracts, err)
	fmt.Fprintln(out)
	if werr := writeReports(out, f.reportDir, reports.New(started, []reports.ScenarioReport{rep}), []reports.Format{reports.Table, reports.JSON}); werr != nil && err == nil {
		err = werr
	}
	for _, c := range rep.Contracts {
		if c.Name == invariant && c.Outcome == "fail" {
			return true, err
		}
	}
	return false, err
}

// fuzzError maps a search error: an interruption or an infrastructure
// error keeps its exit code; anything else is a schedule the target's
// scenario cannot express, a bug in the fault space.
func fuzzError(err error) error {
	if trials.IsInfra(err) || scenarios.IsInvalid(err) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %v", runner.ErrInterrupted, err)
	}
	return &exitError{code: exitInvalid, err: err}
}

// referencedPhases names the phases the invariants refer to.
func referencedPhases(sc *scenarios.Scenario) map[string]bool {
	out := map[string]bool{}
	for _, c := range sc.Contracts {
		if c.Phase != "" {
			out[c.Phase] = true
		}
		for _, e := range c.Expect {
			for _, p := range sc.Phases {
				if strings.Contains(e, `"`+p.Name+`"`) {
					out[p.Name] = true
				}
			}
		}
	}
	return out
}

// minScale is the lowest rate multiplier shrinking may try: the fault
// space's min_rate over the load's rate. A pacer's rate is not lowered.
func minScale(sc *scenarios.Scenario) float64 {
	if sc.Load.Pacer != nil || sc.Load.Rate.IsZero() {
		return 0
	}
	return sc.Fuzz.MinRate.PerSecond() / sc.Load.Rate.PerSecond()
}

func writeFuzzReport(dir string, rep any) error {
	name := fuzzFile
	if _, ok := rep.(exploreReport); ok {
		name = exploreFile
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, name), append(data, '\n'), 0o644)
	}
	if err != nil {
		return &runner.InfraError{Msg: "cannot write " + name, Err: err}
	}
	return nil
}

// printCoverage prints which points × actions the runs exercised and how
// often each invariant was judged.
func printCoverage(out io.Writer, c *fuzz.Coverage) {
	fmt.Fprintf(out, "\ncoverage over %d runs\n", c.Runs)
	fmt.Fprintf(out, "  %-44s %9s %6s %9s\n", "point × action", "scheduled", "fired", "hits")
	for _, fc := range c.Faults {
		fmt.Fprintf(out, "  %-44s %9d %6d %9d\n", fc.Key, fc.Scheduled, fc.Fired, fc.Hits)
	}
	fmt.Fprintf(out, "  %-60s %7s %5s %5s %12s\n", "invariant", "checked", "pass", "fail", "inconclusive")
	for _, ic := range c.Invariants {
		fmt.Fprintf(out, "  %-60s %7d %5d %5d %12d\n", truncate(ic.Name, 60), ic.Checked(), ic.Pass, ic.Fail, ic.Inconclusive)
	}
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// progress shows a search's progress: on a terminal a bar redrawn in
// place, otherwise one line per run.
type progress struct {
	out    io.Writer
	live   bool
	mu     sync.Mutex
	start  time.Time
	budget time.Duration
	phase  string // "search", "shrink" or "explore"
	runs   int
	label  string
	line   string
	done   chan struct{}
	once   sync.Once
}

func newProgress(out io.Writer, budget time.Duration) *progress {
	p := &progress{out: out, live: isTerminal(out), start: time.Now(), budget: budget, phase: "search", done: make(chan struct{})}
	if p.live {
		go func() {
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-p.done:
					return
				case <-t.C:
					p.mu.Lock()
					p.redraw()
					p.mu.Unlock()
				}
			}
		}()
	}
	return p
}

// redraw draws the bar; p.mu is held.
func (p *progress) redraw() {
	elapsed := time.Since(p.start)
	const width = 24
	filled := min(width, int(float64(width)*elapsed.Seconds()/max(p.budget.Seconds(), 0.001)))
	bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
	fmt.Fprintf(p.out, "\r\033[K  %s %s %4.0fs/%.0fs  run %d  %s", p.phase, bar, elapsed.Seconds(), p.budget.Seconds(), p.runs, truncate(p.line, 70))
}

// note prints a line that stays.
func (p *progress) note(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live {
		fmt.Fprint(p.out, "\r\033[K")
	}
	fmt.Fprintln(p.out, s)
	if p.live {
		p.redraw()
	}
}

func (p *progress) shrinking(budget time.Duration) {
	p.mu.Lock()
	p.phase, p.start, p.budget, p.runs = "shrink", time.Now(), budget, 0
	p.mu.Unlock()
}

func (p *progress) stop() {
	p.once.Do(func() {
		close(p.done)
		if p.live {
			p.mu.Lock()
			fmt.Fprint(p.out, "\r\033[K")
			p.mu.Unlock()
		}
	})
}

// event is the search's Progress callback.
func (p *progress) event(e fuzz.Event) {
	p.mu.Lock()
	switch e.Kind {
	case fuzz.TrialStart, fuzz.ShrinkTry, fuzz.ComboStart:
		p.runs = e.Trial
		p.line = e.Schedule.String()
		if e.Step != "" {
			p.line = e.Step
		}
	}
	p.mu.Unlock()
	var line string
	switch e.Kind {
	case fuzz.TrialDone:
		line = fmt.Sprintf("trial %-3d %5.1fs  %-5s %s", e.Trial, e.Outcome.Elapsed.Seconds(), verdictWord(e.Outcome), e.Schedule)
	case fuzz.ShrinkDone:
		word := "undone"
		if e.Accepted {
			word = "kept"
		}
		line = fmt.Sprintf("shrink %-3d %5.1fs  %-6s %s", e.Trial, e.Outcome.Elapsed.Seconds(), word, e.Step)
	case fuzz.ComboDone:
		line = fmt.Sprintf("run %-3d %5.1fs  %-5s %s", e.Trial, e.Outcome.Elapsed.Seconds(), verdictWord(e.Outcome), e.Step)
	case fuzz.ComboSkip:
		line = fmt.Sprintf("skip             %s (covered by %s)", e.Step, e.Label)
	default:
		return
	}
	// On a terminal only what changes the picture stays on screen.
	if !p.live || (e.Kind == fuzz.ShrinkDone && e.Accepted) || e.Kind == fuzz.ComboDone {
		p.note(line)
	}
}

func verdictWord(o *fuzz.Outcome) string {
	if o.Violated() {
		return "FAIL"
	}
	return "pass"
}
