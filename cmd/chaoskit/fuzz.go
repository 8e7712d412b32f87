package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/fuzz"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/termline"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/reports"
)

// fuzzTarget is how fuzz and explore name the fuzz scenario and its run
// settings.
type fuzzTarget struct {
	bundled    string
	vars       []string
	allowHosts []string
	reportDir  string
	budget     time.Duration
	verbose    bool
	keep       bool
	format     string
}

func (t *fuzzTarget) register(cmd *cobra.Command, budget time.Duration) {
	f := cmd.Flags()
	f.StringVar(&t.bundled, "bundled", "", "use the bundled fuzz scenario NAME ("+strings.Join(plan.BundledFuzzNames(), ", ")+")")
	f.StringArrayVar(&t.vars, "var", nil, "set a scenario variable: --var NAME=VALUE (repeatable)")
	allowHostFlag(cmd, &t.allowHosts)
	f.StringVar(&t.reportDir, "report-dir", "out", "directory for the reports, the reproducer and the trials' run directories")
	f.DurationVar(&t.budget, "budget", budget, "time the search may take")
	f.BoolVarP(&t.verbose, "verbose", "v", false, "show every run's phases")
	f.BoolVar(&t.keep, "keep-trials", false, "keep the run directories of every trial, not only the violating one")
	_ = cmd.RegisterFlagCompletionFunc("bundled", completeBundledFuzz)
	formatFlag(cmd, &t.format, "text", "json")
}

// streams returns where a campaign prints its progress and its result:
// both on stdout as text; with -o json the result alone on stdout, as one
// JSON document, and the progress on stderr.
func (t *fuzzTarget) streams(cmd *cobra.Command) (progress io.Writer, err error) {
	if err := checkFormat(t.format, "text", "json"); err != nil {
		return nil, err
	}
	if t.format == "json" {
		return cmd.ErrOrStderr(), nil
	}
	return cmd.OutOrStdout(), nil
}

// result prints a campaign's result v with -o json, or the error document
// when there is none; it returns err.
func (t *fuzzTarget) result(cmd *cobra.Command, v any, err error) error {
	if t.format != "json" {
		return err
	}
	if v != nil {
		if perr := printJSON(cmd.OutOrStdout(), v); perr != nil && err == nil {
			err = perr
		}
		return err
	}
	if err != nil {
		_ = harness.WriteErrorJSON(cmd.OutOrStdout(), err)
	}
	return err
}

// campaign loads the fuzz scenario the arguments name and sets up the
// campaign on it, its output on out.
func (t *fuzzTarget) campaign(args []string, out io.Writer) (*harness.Campaign, error) {
	vars, err := parseVars(t.vars)
	if err != nil {
		return nil, err
	}
	allow, err := checkAllowHosts(t.allowHosts)
	if err != nil {
		return nil, err
	}
	sc, opts, err := harness.LoadFuzz(args, t.bundled, vars, allow)
	if err != nil {
		return nil, err
	}
	c := &harness.Campaign{Scenario: sc, Load: opts, ReportDir: t.reportDir, KeepTrials: t.keep, Out: out,
		Live: isTerminal(out), Color: colorOK(out), Width: terminalWidth(out), LiveWidth: liveWidth(out), Tool: version, StateDir: stateDir()}
	if t.verbose {
		c.Log = out
	}
	return c, nil
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

-o json prints the result as one JSON document on stdout (fuzz.json's
content: the trials, the violation, its shrunk schedule and the reproducer)
and the progress on stderr.

Exit codes: 0 no violation within the budget, 1 a violation (see the
reproducer), 2 invalid input, 3 infrastructure error, 130 interrupted.`,
		Example: `  chaoskit fuzz --bundled shop --budget 60s --seed 1
  chaoskit fuzz --bundled shop --var bug=stale-after-recovery --seed 1 --report-dir out/fuzz
  chaoskit fuzz checkout-fuzz.yaml --runs 20`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tuneGCForLoad()
			if !cmd.Flags().Changed("seed") {
				f.seed = rand.Uint64() % 1_000_000
			}
			out, err := f.streams(cmd)
			if err != nil {
				return err
			}
			rep, err := runFuzz(cmd.Context(), out, args, f)
			if rep == nil {
				return f.result(cmd, nil, err)
			}
			return f.result(cmd, rep, err)
		},
	}
	f.register(cmd, time.Minute)
	cmd.Flags().Uint64Var(&f.seed, "seed", 0, "seed of the schedules (default: a random one, printed)")
	cmd.Flags().IntVar(&f.runs, "runs", 0, "run at most N trials (0: as many as the budget allows)")
	cmd.Flags().DurationVar(&f.shrinkBudget, "shrink-budget", 3*time.Minute, "time shrinking may take")
	cmd.Flags().IntVar(&f.shrinkRuns, "shrink-runs", 0, "re-run at most N candidates while shrinking (0: as many as the shrink budget allows)")
	return cmd
}

func runFuzz(ctx context.Context, out io.Writer, args []string, f fuzzFlags) (*harness.FuzzReport, error) {
	c, err := f.campaign(args, out)
	if err != nil {
		return nil, err
	}
	sc := c.Scenario
	fmt.Fprintf(out, "fuzzing %s (%s): seed %d, budget %v, %d invariants, %d points × actions\n",
		sc.Name, sc.File, f.seed, f.budget, len(sc.Contracts), len(fuzz.Singles(sc.Fuzz)))
	prog := newProgress(out, f.budget)
	defer prog.stop()
	c.Progress = prog.event
	c.Found = func(v *fuzz.Violation) {
		prog.note(fmt.Sprintf("trial %d broke %q after %v: %s", v.Trial, v.Invariant, v.FoundAfter.Round(100*time.Millisecond), v.Original))
		prog.shrinking(f.shrinkBudget)
	}
	c.Shrunk = func(res *fuzz.Result, repro string) {
		prog.stop()
		reports.WriteCoverage(out, res.Coverage)
		v := res.Violation
		fmt.Fprintf(out, "\nviolation: %q broken by trial %d (seed %d), found after %v\n", v.Invariant, v.Trial, f.seed, v.FoundAfter.Round(100*time.Millisecond))
		fmt.Fprintf(out, "  schedule: %s\n", v.Original)
		fmt.Fprintf(out, "  shrunk:   %s\n", v.Shrunk)
		fmt.Fprintf(out, "  from %d phases and %d faults to %d phases and %d fault(s) in %d runs (%v, %s)\n",
			len(v.Original.Phases), v.Original.Faults(), len(v.Shrunk.Phases), v.Shrunk.Faults(), v.Shrink.Runs, v.Shrink.Elapsed.Round(time.Second), v.Shrink.Stopped)
		fmt.Fprintf(out, "  reproducer: %s\n\nconfirming: chaoskit run %s\n", repro, repro)
	}
	rep, err := c.Fuzz(ctx, harness.FuzzConfig{Seed: f.seed, Budget: f.budget, Runs: f.runs, ShrinkBudget: f.shrinkBudget, ShrinkRuns: f.shrinkRuns})
	prog.stop()
	if err == nil && rep != nil && rep.Result != nil && rep.Result.Violation == nil {
		res := rep.Result
		reports.WriteCoverage(out, res.Coverage)
		fmt.Fprintf(out, "\nno invariant broken in %d trials (%v, stopped by the %s); seed %d\n", len(res.Trials), res.Elapsed.Round(time.Second), res.Stopped, f.seed)
	}
	return rep, err
}

// progress shows a search's progress: on a terminal a bar redrawn in
// place, otherwise one line per run.
type progress struct {
	out  io.Writer
	live bool
	// width is what the lines that stay wrap within, liveWidth what the
	// bar is cut to (terminalWidth and liveWidth).
	width, liveWidth int
	mu               sync.Mutex
	start            time.Time
	budget           time.Duration
	phase            string // "search", "shrink" or "explore"
	runs             int
	label            string
	line             string
	done             chan struct{}
	once             sync.Once
}

func newProgress(out io.Writer, budget time.Duration) *progress {
	p := &progress{out: out, live: isTerminal(out), width: terminalWidth(out), liveWidth: liveWidth(out), start: time.Now(), budget: budget, phase: "search", done: make(chan struct{})}
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
	line := fmt.Sprintf("  %s %s %4.0fs/%.0fs  run %d  %s", p.phase, bar, elapsed.Seconds(), p.budget.Seconds(), p.runs, p.line)
	fmt.Fprint(p.out, "\r\033[K"+termline.Cut(line, p.liveWidth))
}

// note prints a line that stays.
func (p *progress) note(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live {
		fmt.Fprint(p.out, "\r\033[K")
	}
	for _, row := range termline.Wrap(s, p.width, "    ") {
		fmt.Fprintln(p.out, row)
	}
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
