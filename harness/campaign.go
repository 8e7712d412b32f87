package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/fuzz"
	"github.com/chaoskit/chaoskit/fuzz/trials"
	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/internal/outdir"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/runner"
)

// Files a campaign writes to its report directory.
const (
	reproducerFile = "reproducer.yaml"
	FuzzFile       = "fuzz.json"
	ExploreFile    = "explore.json"
	TrialsDir      = "trials"
)

// LoadFuzz loads the fuzz scenario a campaign works on: the bundled one
// named bundled, or the one file in paths. It returns the options the
// campaign's schedules load with (the variables are in the scenario
// already); allowHosts are the hosts the command consents to
// (--allow-host).
func LoadFuzz(paths []string, bundled string, vars map[string]string, allowHosts []string) (*plan.Scenario, plan.Options, error) {
	opts := LoadOptions(vars, 1, allowHosts)
	var sc *plan.Scenario
	var err error
	switch {
	case bundled != "" && len(paths) > 0:
		return nil, opts, exitcode.New(exitcode.Invalid, "give a scenario file or --bundled NAME, not both")
	case bundled != "":
		sc, err = plan.BundledFuzz(bundled, opts)
	case len(paths) != 1:
		return nil, opts, exitcode.New(exitcode.Invalid, "give one fuzz scenario file, or --bundled NAME (%s)", strings.Join(plan.BundledFuzzNames(), ", "))
	default:
		var scs []*plan.Scenario
		if scs, err = plan.LoadAll(paths, opts); err == nil {
			sc = scs[0]
		}
	}
	if err != nil {
		return nil, opts, err
	}
	if sc.Fuzz == nil {
		return nil, opts, exitcode.New(exitcode.Invalid, "%s is not a fuzz scenario: it has no fuzz section with a fault space (see docs/fuzzing.md)", sc.File)
	}
	opts.Vars = nil
	return sc, opts, nil
}

// Campaign is fault-schedule fuzzing or exploration of one fuzz scenario:
// every trial a real run of the target, judged by the scenario's contracts
// (its invariants).
type Campaign struct {
	Scenario *plan.Scenario
	// Load are the options the trials' scenarios load with (LoadFuzz).
	Load plan.Options
	// ReportDir receives the reports, the reproducer and, below trials/,
	// the trials' run directories; KeepTrials keeps every trial's, not
	// only the violating one's.
	ReportDir  string
	KeepTrials bool
	// Log receives every trial's phase lines (nil: none). Out receives the
	// confirming run's progress and table; Live, Color, Width and
	// LiveWidth as in Options.
	Log              io.Writer
	Out              io.Writer
	Live             bool
	Color            bool
	Width, LiveWidth int
	// Tool, Self and StateDir are as in Options.
	Tool, Self, StateDir string
	// Progress, when set, is told about every trial and shrink step; Found
	// about a violation before it is shrunk; Shrunk about the search's
	// result, its violation shrunk, and the reproducer written, before the
	// confirming run.
	Progress func(fuzz.Event)
	Found    func(*fuzz.Violation)
	Shrunk   func(res *fuzz.Result, reproducer string)
}

// trier returns the trier whose every schedule is a real run of the
// runner, below ReportDir/trials.
//
// The report directory stays locked until release: a campaign writes it to
// its last trial and report.
func (c *Campaign) trier() (tr *trials.Runner, release func(), err error) {
	if c.Self == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, nil, &runner.InfraError{Msg: "cannot find the chaoskit executable", Err: err}
		}
		c.Self = self
	}
	release, err = claimReportDir(c.ReportDir, c.Tool, append(reportFilesOf([]reports.Format{reports.JSON}), reproducerFile, FuzzFile, ExploreFile))
	if err != nil {
		return nil, nil, err
	}
	if err := claimTrialsDir(filepath.Join(c.ReportDir, TrialsDir), c.Tool); err != nil {
		release()
		return nil, nil, err
	}
	log := c.Log
	if log == nil {
		log = io.Discard
	}
	return &trials.Runner{Base: c.Scenario, Load: c.Load, Dir: filepath.Join(c.ReportDir, TrialsDir),
		Run: runner.Options{Self: c.Self, Log: log, Tool: c.Tool, StateDir: c.StateDir}}, release, nil
}

// prune removes the trials' files except those keep names (see
// pruneTrials: only what chaoskit made goes). Pruning is tidying: a trial
// it cannot remove stays, and the campaign's result stands.
func (c *Campaign) prune(keep ...string) {
	if c.KeepTrials {
		return
	}
	_ = pruneTrials(filepath.Join(c.ReportDir, TrialsDir), keep)
}

// FuzzConfig bounds a fuzz campaign.
type FuzzConfig struct {
	// Seed chooses the schedules.
	Seed uint64
	// Budget and Runs bound the search (Runs 0: as many as the budget
	// allows); ShrinkBudget and ShrinkRuns bound shrinking.
	Budget       time.Duration
	Runs         int
	ShrinkBudget time.Duration
	ShrinkRuns   int
}

// FuzzReport is what a fuzz campaign found, as fuzz.json holds it.
type FuzzReport struct {
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

// Fuzz searches the fault space for a schedule that breaks an invariant;
// when one does, it shrinks it, writes the minimal schedule as an ordinary
// scenario (ReportDir/reproducer.yaml) and confirms it by running it as
// chaoskit run would, with its reports in ReportDir. It writes fuzz.json
// either way. The error carries its exit code: exit 1 with the replay
// command when an invariant broke.
func (c *Campaign) Fuzz(ctx context.Context, cfg FuzzConfig) (*FuzzReport, error) {
	if cfg.Budget <= 0 || cfg.ShrinkBudget < 0 || cfg.Runs < 0 || cfg.ShrinkRuns < 0 {
		return nil, exitcode.New(exitcode.Invalid, "--budget must be above 0; --shrink-budget, --runs and --shrink-runs must not be negative")
	}
	sc := c.Scenario
	tr, release, err := c.trier()
	if err != nil {
		return nil, err
	}
	defer release()
	fc := fuzz.Config{Seed: cfg.Seed, Budget: cfg.Budget, Runs: cfg.Runs, ShrinkBudget: cfg.ShrinkBudget, ShrinkRuns: cfg.ShrinkRuns, Progress: c.Progress}
	rep := &FuzzReport{Scenario: sc.Name, File: sc.File, Seed: cfg.Seed, Budget: cfg.Budget.String()}
	res, err := fuzz.Search(ctx, sc, tr, fc)
	rep.Result = res
	if err != nil {
		return rep, searchError(err)
	}
	v := res.Violation
	if v == nil {
		c.prune()
		return rep, c.writeJSON(FuzzFile, rep)
	}
	if c.Found != nil {
		c.Found(v)
	}
	sh := &fuzz.Shrinker{Trier: tr, Invariant: v.Invariant, Allowed: v.Failed, Keep: referencedPhases(sc), Space: sc.Fuzz,
		Valid: func(s fuzz.Schedule) error {
			_, _, err := fuzz.Load(sc, s, sc.Name+"-candidate", filepath.Join(tr.Dir, "candidate.yaml"), "", c.Load)
			return err
		},
		MinScale: minScale(sc), Config: fc}
	shrunk, rec, err := sh.Shrink(ctx, v.Original)
	v.Shrunk, v.Shrink, v.Schedules[1] = shrunk, rec, shrunk.String()
	if err != nil {
		return rep, searchError(err)
	}
	c.prune(fmt.Sprintf("trial-%03d", v.Trial))

	// The reproducer is confirmed the way a user replays it: loaded from
	// its file, run and judged as chaoskit run does.
	comment := fmt.Sprintf("chaoskit fuzz found this schedule breaking %q:\nseed %d, trial %d of %s, shrunk from %d phases and %d faults in %d runs.\nReplay it with: chaoskit run %s",
		v.Invariant, cfg.Seed, v.Trial, sc.File, len(v.Original.Phases), v.Original.Faults(), rec.Runs, reproducerFile)
	text, err := fuzz.Render(sc, shrunk, sc.Name+"-reproducer", comment)
	if err != nil {
		return rep, err
	}
	repro := filepath.Join(c.ReportDir, reproducerFile)
	if err := outdir.WriteBytes(repro, text); err != nil {
		return rep, &runner.InfraError{Msg: "cannot write the reproducer", Err: err}
	}
	rep.Reproducer = repro
	if c.Shrunk != nil {
		c.Shrunk(res, repro)
	}
	confirmed, err := c.confirm(ctx, repro, v.Invariant)
	rep.Confirmed = &confirmed
	if werr := c.writeJSON(FuzzFile, rep); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return rep, err
	}
	msg := fmt.Sprintf("invariant %q broken; replay with: chaoskit run %s", v.Invariant, repro)
	if !confirmed {
		msg += " (the confirming run did not break it again: the violation may depend on timing)"
	}
	return rep, exitcode.New(exitcode.Fail, "%s", msg)
}

// confirm runs the reproducer as chaoskit run would and reports whether
// it broke the invariant again; its reports go to the report directory.
func (c *Campaign) confirm(ctx context.Context, file, invariant string) (bool, error) {
	sc, err := plan.LoadFile(file, c.Load)
	if err != nil {
		return false, err
	}
	opts := Options{ReportDir: c.ReportDir, Formats: []reports.Format{reports.Table, reports.JSON}, Out: c.Out, Live: c.Live,
		Color: c.Color, Width: c.Width, LiveWidth: c.LiveWidth, Tool: c.Tool, Self: c.Self, StateDir: c.StateDir}
	rep, err := Run(ctx, []*plan.Scenario{sc}, opts)
	if errors.Is(err, ErrContractsFailed) {
		err = nil
	}
	if rep != nil {
		for _, s := range rep.Scenarios {
			for _, v := range s.Contracts {
				if v.Name == invariant && v.Outcome == contract.Fail {
					return true, err
				}
			}
		}
	}
	return false, err
}

// Explore runs the fault space systematically (see fuzz.Explore) and
// writes explore.json. The error carries its exit code: exit 1 when a
// combination broke an invariant.
func (c *Campaign) Explore(ctx context.Context, budget time.Duration) (*fuzz.Exploration, error) {
	if budget <= 0 {
		return nil, exitcode.New(exitcode.Invalid, "--budget must be above 0")
	}
	tr, release, err := c.trier()
	if err != nil {
		return nil, err
	}
	defer release()
	ex, err := fuzz.Explore(ctx, c.Scenario, tr, fuzz.Config{Budget: budget, Progress: c.Progress})
	c.prune()
	if ex != nil {
		rep := struct {
			Scenario    string            `json:"scenario"`
			File        string            `json:"file"`
			Exploration *fuzz.Exploration `json:"exploration"`
		}{c.Scenario.Name, c.Scenario.File, ex}
		if werr := c.writeJSON(ExploreFile, rep); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		return ex, searchError(err)
	}
	if ex.Violated() {
		return ex, exitcode.New(exitcode.Fail, "a fault combination broke an invariant (see the matrix)")
	}
	return ex, nil
}

// searchError gives a search error its exit code: an interruption or an
// infrastructure error keeps its own; anything else is a schedule the
// scenario cannot express, a bug in the fault space (exit 2).
func searchError(err error) error {
	if trials.IsInfra(err) || plan.IsInvalid(err) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %v", runner.ErrInterrupted, err)
	}
	return exitcode.Wrap(exitcode.Invalid, err)
}

// referencedPhases names the phases the invariants refer to.
func referencedPhases(sc *plan.Scenario) map[string]bool {
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
func minScale(sc *plan.Scenario) float64 {
	if sc.Load.Pacer != nil || sc.Load.Rate.IsZero() {
		return 0
	}
	return sc.Fuzz.MinRate.PerSecond() / sc.Load.Rate.PerSecond()
}

func (c *Campaign) writeJSON(name string, v any) error {
	if err := outdir.WriteJSON(filepath.Join(c.ReportDir, name), v); err != nil {
		return &runner.InfraError{Msg: "cannot write " + name, Err: err}
	}
	return nil
}
