package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/runner"
	"github.com/chaoskit/chaoskit/timeline"
)

// DefaultDiffRuns is how many runs a diff makes of each side by default:
// the fewest from which a spread can be told from a single outlier.
const DefaultDiffRuns = 3

// DiffOptions control a diff: which builds are compared, how often each
// runs, and where the runs go.
type DiffOptions struct {
	// Base and Head are the two sides (see Side); their Names are set
	// to "base" and "head".
	Base, Head Side
	// Build says how a side given as a revision is built.
	Build BuildOptions
	// Runs is the number of runs of each side, per scenario (default
	// DefaultDiffRuns). They are interleaved, base then head, so that a
	// drift of the machine's speed hits both sides alike.
	Runs int
	// ReportDir receives one run directory per scenario, side and run
	// (NAME-base-1, NAME-head-1, …) and the diff's reports.
	ReportDir string
	// Out receives the progress; Width wraps its lines (0: no limit).
	Out   io.Writer
	Width int
	// Tool, Self and StateDir are as in Options.
	Tool, Self, StateDir string
}

// DiffRun is one run of one side of a diff, judged.
type DiffRun struct {
	// Side is "base" or "head"; Index counts the side's runs from 1.
	Side  string
	Index int
	// Dir is the run directory.
	Dir string
	// Report is the run judged as `chaoskit report` judges it.
	Report reports.ScenarioReport
	// Elapsed is how long the run took, start-up and read-back included.
	Elapsed time.Duration
}

// DiffScenario holds the runs of both sides of one scenario.
type DiffScenario struct {
	Scenario   *plan.Scenario
	Base, Head []DiffRun
}

// RunDiff runs each scenario against both sides, Runs times each,
// interleaved (base 1, head 1, base 2, head 2, …), each run into its own
// run directory below ReportDir, and judges every run with the judge of
// `chaoskit report`. Both sides get the same scenario: the same phases,
// faults, load and seed; only the target's program and arguments differ.
// Sides given as revisions are built first (see BuildRevision).
//
// A run that fails (the target did not start, a fault could not be
// switched: exit 3) stops the diff with its error; the runs made so far
// are returned with it. The report directory is locked until RunDiff
// returns; the diff's reports are written by the caller.
func RunDiff(ctx context.Context, scs []*plan.Scenario, opts DiffOptions) (_ []DiffScenario, release func(), err error) {
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	if opts.Runs == 0 {
		opts.Runs = DefaultDiffRuns
	}
	if opts.Runs < 1 {
		return nil, nil, exitcode.New(exitcode.Invalid, "--runs %d: give 1 or more runs of each side (%d is the default)", opts.Runs, DefaultDiffRuns)
	}
	opts.Base.Name, opts.Head.Name = "base", "head"
	for _, s := range []Side{opts.Base, opts.Head} {
		if err := checkSide(s); err != nil {
			return nil, nil, err
		}
	}
	if opts.Self == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, nil, &runner.InfraError{Msg: "cannot find the chaoskit executable", Err: err}
		}
		opts.Self = self
	}
	// Every scenario must take both sides before anything runs: a bad
	// argument is exit 2 at once, not after minutes of runs.
	base, head := sideTarget{Side: opts.Base}, sideTarget{Side: opts.Head}
	for _, sc := range scs {
		for _, s := range []sideTarget{base, head} {
			if _, _, err := s.apply(sc, opts.Self); err != nil {
				return nil, nil, err
			}
		}
	}
	if opts.Base.same(opts.Head) {
		fmt.Fprintln(out, "note: base and head are the same build: this diff measures the machine's noise")
	}
	// The builds first: an unknown revision leaves no directory behind.
	for _, s := range []*sideTarget{&base, &head} {
		if s.Program, err = sideProgram(ctx, s.Side, scs, opts); err != nil {
			return nil, nil, err
		}
	}
	unlock, err := claimReportDir(opts.ReportDir, opts.Tool, diffReportFiles)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			unlock()
		}
	}()
	var res []DiffScenario
	for _, sc := range scs {
		ds := DiffScenario{Scenario: sc}
		fmt.Fprintf(out, "%s (%s): %d runs of %s and of %s, interleaved\n", sc.Name, sc.File, opts.Runs, base.Side, head.Side)
		for i := 1; i <= opts.Runs; i++ {
			for _, s := range []sideTarget{base, head} {
				r, err := runSide(ctx, sc, s, i, opts)
				if s.Name == "base" {
					ds.Base = append(ds.Base, r)
				} else {
					ds.Head = append(ds.Head, r)
				}
				if err != nil {
					return append(res, ds), unlock, err
				}
			}
		}
		res = append(res, ds)
	}
	return res, unlock, nil
}

// diffReportFiles are the files a diff writes in its report directory.
var diffReportFiles = []string{DiffFileJSON, DiffFileMarkdown, DiffFileHTML}

// The files of a diff's reports.
const (
	DiffFileJSON     = "diff.json"
	DiffFileMarkdown = "diff.md"
	DiffFileHTML     = "diff.html"
)

// runSide makes run i of side s of sc and judges it.
func runSide(ctx context.Context, sc *plan.Scenario, s sideTarget, i int, opts DiffOptions) (DiffRun, error) {
	name := fmt.Sprintf("%s-%s-%d", sc.Name, s.Name, i)
	r := DiffRun{Side: s.Name, Index: i, Dir: filepath.Join(opts.ReportDir, name)}
	ssc, self, err := s.apply(sc, opts.Self)
	if err != nil {
		return r, err
	}
	fmt.Fprintf(opts.Out, "  %s run %d/%d\n", s.Name, i, opts.Runs)
	began := time.Now()
	res, err := runner.Run(ctx, ssc, runner.Options{Self: self, Dir: r.Dir, Log: opts.Out, Width: opts.Width, Tool: opts.Tool, StateDir: opts.StateDir})
	r.Elapsed = time.Since(began)
	var src timeline.Source
	if res != nil {
		if d, oerr := timeline.OpenDir(res.Dir); oerr == nil {
			src = d
		} else {
			src = res.Timeline
		}
	}
	r.Report = ScenarioReport(ssc, src, name, err)
	if err != nil {
		if errors.Is(err, runner.ErrInterrupted) {
			return r, err
		}
		return r, &runner.InfraError{Msg: fmt.Sprintf("%s: run %d of %s failed", sc.Name, i, s.Side), Err: err, Fix: "see " + filepath.Join(r.Dir, runner.TargetStderr)}
	}
	fmt.Fprintf(opts.Out, "    %s in %v\n", r.Report.Verdict, r.Elapsed.Round(100*time.Millisecond))
	return r, nil
}

// sideProgram returns the program side s runs: its revision built (once,
// whatever the number of scenarios), its binary, its command's program,
// or "" for the scenario's own.
func sideProgram(ctx context.Context, s Side, scs []*plan.Scenario, opts DiffOptions) (string, error) {
	switch {
	case s.Binary != "":
		return executable(s.Binary, "--"+s.Name+"-binary")
	case len(s.Command) > 0:
		if !strings.Contains(s.Command[0], "/") {
			p, err := exec.LookPath(s.Command[0])
			if err != nil {
				return "", exitcode.New(exitcode.Invalid, "--%s-cmd: %s is not in PATH (name the program by its path: ./bin/%s)", s.Name, s.Command[0], s.Command[0])
			}
			return p, nil
		}
		return executable(s.Command[0], "--"+s.Name+"-cmd")
	case s.Rev != "":
		bo := opts.Build
		if bo.Package == "" && len(scs) > 0 && scs[0].Target.Demo != nil {
			bo.Package = "./cmd/chaoskit" // the demo is served by chaoskit itself
		}
		if bo.Log == nil {
			bo.Log = opts.Out
		}
		began := time.Now()
		b, err := BuildRevision(ctx, s.Rev, bo)
		if err != nil {
			return "", err
		}
		if !b.Cached {
			fmt.Fprintf(opts.Out, "  %s: built in %v\n", s.Rev, time.Since(began).Round(100*time.Millisecond))
		}
		return b.Binary, nil
	}
	return "", nil
}

// executable returns the absolute path of the program at path, relative
// to the working directory, as the shell the user typed it in would find
// it; a path that is no executable file is invalid input of flag.
func executable(path, flag string) (string, error) {
	p, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(p)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", exitcode.New(exitcode.Invalid, "%s %s: not an executable file", flag, path)
	}
	return p, nil
}
