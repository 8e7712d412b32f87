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
	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/runner"
	"github.com/chaoskit/chaoskit/timeline"
)

// Options control a run of scenarios.
type Options struct {
	// ReportDir receives one run directory per scenario and the report
	// files; Formats names the reports (the table goes to Out).
	ReportDir string
	Formats   []reports.Format
	// Out receives the progress of each run, the table and the names of
	// the report files; Live redraws a progress line on it (a terminal)
	// and Color paints the table. Width is the terminal's width the table
	// fits in (reports.TableOptions.Width; 0 means no limit).
	Out   io.Writer
	Live  bool
	Color bool
	Width int
	// LiveWidth is the width of the terminal Out is, which the live line
	// is cut to (0: no limit); the phase lines wrap within Width, as the
	// table does.
	LiveWidth int
	// Mode says what the run prints as its result, and Results receives
	// it when it is printed apart from Out (see OutputMode); the zero
	// value prints everything on Out.
	Mode    OutputMode
	Results io.Writer
	// GitHub, when set, publishes the report to the GitHub Actions job
	// the run is a step of (see GitHubFromEnv); GitLab to the GitLab CI
	// job (see GitLabFromEnv). Each also folds each scenario's progress
	// into a section of the job's log.
	GitHub *GitHub
	GitLab *GitLab
	// Tool is the chaoskit version recorded on each timeline.
	Tool string
	// Self is the chaoskit executable that serves demo targets; empty
	// means the running one.
	Self string
	// StateDir indexes the faults of unfinished runs (see runner.Options).
	StateDir string
	// RateScale is the --rate-scale factor, recorded on each timeline (0
	// when none was given; the scenarios are loaded with it already).
	RateScale float64
	// KeepGoing goes on with the next scenario after one could not run.
	KeepGoing bool
	// Shard, NoFaults, FaultsOnly and StartAt slice the load across runs
	// (see runner.Options); `chaoskit report --merge` judges the slices as
	// one run.
	Shard      runner.Shard
	NoFaults   bool
	FaultsOnly bool
	StartAt    time.Time
}

func (o *Options) output() output {
	return newOutput(o.Out, o.Results, o.Mode, o.Color, o.Width, o.GitHub, o.GitLab)
}

func (o *Options) out() io.Writer { return o.output().progress }

func (o *Options) runnerOptions(dir string) runner.Options {
	return runner.Options{Self: o.Self, Dir: dir, Log: o.out(), Live: o.Live && o.Mode != OutputQuiet, Width: o.Width, LiveWidth: o.LiveWidth, Tool: o.Tool,
		StateDir: o.StateDir, RateScale: o.RateScale, Shard: o.Shard, NoFaults: o.NoFaults, FaultsOnly: o.FaultsOnly, StartAt: o.StartAt}
}

// Run runs each scenario into its run directory below ReportDir, judges
// its contracts and writes the reports. The error carries the exit code
// (internal/exitcode): ErrContractsFailed when the verdict is not pass, the
// first run's error when a scenario could not run (an interruption stops
// at once; another error stops unless KeepGoing), or a report that could
// not be written. The report is returned whenever it was made.
func Run(ctx context.Context, scs []*plan.Scenario, opts Options) (*reports.Report, error) {
	out := opts.out()
	if opts.Self == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, &runner.InfraError{Msg: "cannot find the chaoskit executable", Err: err}
		}
		opts.Self = self
	}
	if err := checkShardTargets(scs, opts); err != nil {
		return nil, err
	}
	unlock, err := claimReportDir(opts.ReportDir, opts.Tool, reportFilesOf(opts.Formats))
	if err != nil {
		return nil, err
	}
	defer unlock()
	started := time.Now()
	var reps []reports.ScenarioReport
	var runErr error
	prog := newOverall(scs, started)
	for i, sc := range scs {
		title := fmt.Sprintf("%s (%s) [%s]", sc.Name, sc.File, prog.at(i, time.Now()))
		endFold := opts.output().fold(sc.Name, title)
		ro := opts.runnerOptions(filepath.Join(opts.ReportDir, sc.Name))
		began := time.Now()
		ro.Overall = func(done time.Duration) string { return prog.live(i, done, began) }
		res, err := runner.Run(ctx, sc, ro)
		var src timeline.Source
		if res != nil {
			// The requests were streamed to disk and are judged from there,
			// in one pass, as `chaoskit report` judges them.
			if s, oerr := timeline.OpenDir(res.Dir); oerr == nil {
				src = s
			} else {
				src = res.Timeline
			}
		}
		rep := ScenarioReport(sc, src, sc.Name, err)
		if err != nil {
			how := ""
			if errors.Is(err, runner.ErrInterrupted) && res != nil {
				how = "; " + res.Summary.Interruption()
			}
			fmt.Fprintf(out, "  %s: %v%s\n", sc.Name, err, how)
		}
		endFold()
		reps = append(reps, rep)
		if err != nil {
			if runErr == nil || errors.Is(err, runner.ErrInterrupted) {
				runErr = err
			}
			if !opts.KeepGoing || errors.Is(err, runner.ErrInterrupted) {
				break
			}
		}
	}
	rep := reports.New(started, reps)
	if errors.Is(runErr, runner.ErrInterrupted) {
		rep.Interrupted = interruptCause(runErr)
	}
	fmt.Fprintln(out)
	if err := opts.output().finish(opts.ReportDir, rep, opts.Formats); err != nil {
		if runErr == nil {
			return rep, err
		}
		// The run's own failure is the cause (a full disk fails the run
		// first); the reports that could not be written follow from it.
		fmt.Fprintf(out, "  %v\n", err)
	}
	if runErr != nil {
		return rep, runErr
	}
	return rep, verdictError(rep)
}

// overall is the progress of a run of several scenarios: how far along
// it is and, from the time the scenarios done so far took against their
// planned phases, when the rest should be done.
type overall struct {
	planned []time.Duration
	started time.Time
}

func newOverall(scs []*plan.Scenario, started time.Time) overall {
	o := overall{started: started}
	for _, sc := range scs {
		var d time.Duration
		for _, p := range sc.Phases {
			d += p.Duration.D()
		}
		o.planned = append(o.planned, d)
	}
	return o
}

// at says where the run is as scenario i starts, at now: "3/10" for the
// first, then "3/10, 24% done, about 1m40s left". The rest is estimated
// at the pace so far: the scenarios' start-up and read-back take a share
// of their phases' time that the ones done show.
func (o overall) at(i int, now time.Time) string {
	n := len(o.planned)
	s := fmt.Sprintf("%d/%d", i+1, n)
	if i == 0 || n < 2 {
		return s
	}
	var done, all time.Duration
	for k, d := range o.planned {
		all += d
		if k < i {
			done += d
		}
	}
	if done <= 0 || all <= 0 {
		return s
	}
	pace := float64(now.Sub(o.started)) / float64(done)
	left := time.Duration(float64(all-done) * pace).Round(time.Second)
	return fmt.Sprintf("%s, %d%% done, about %v left", s, int(100*float64(done)/float64(all)), left)
}

// live says where the run is while scenario i, begun at began, runs with
// done of its planned phase time passed, for the end of the live line:
// "2/10, 1m40s left" ("1m40s left" for a single scenario). The current
// scenario's phases run in real time; the scenarios after it are
// estimated at the pace of those before it (their start-up and read-back
// included), or at their planned time while none is done.
func (o overall) live(i int, done time.Duration, began time.Time) string {
	n := len(o.planned)
	if i < 0 || i >= n {
		return ""
	}
	var before, after time.Duration
	for k, d := range o.planned {
		switch {
		case k < i:
			before += d
		case k > i:
			after += d
		}
	}
	pace := 1.0
	if before > 0 {
		// The time the scenarios before i took, against their phases.
		pace = max(1, float64(began.Sub(o.started))/float64(before))
	}
	left := max(o.planned[i]-done, 0) + time.Duration(float64(after)*pace)
	s := fmt.Sprintf("%v left", left.Round(time.Second))
	if n > 1 {
		s = fmt.Sprintf("%d/%d, %s", i+1, n, s)
	}
	return s
}

// interruptCause is what stopped an interrupted run ("interrupt received"),
// without the "run interrupted" every such error starts with.
func interruptCause(err error) string {
	s := err.Error()
	if _, cause, ok := strings.Cut(s, runner.ErrInterrupted.Error()+": "); ok {
		return cause
	}
	return s
}

// verdictError is ErrContractsFailed unless every contract passed.
func verdictError(rep *reports.Report) error {
	if rep.Verdict != contract.Pass {
		return ErrContractsFailed
	}
	return nil
}

// ScenarioReport judges sc's contracts over a recorded run (nil when the
// run recorded nothing) and measures the run, for the reports and their
// chart, in one pass over its requests. runDir is the run directory as the reports name it;
// runErr the error the run ended with.
func ScenarioReport(sc *plan.Scenario, src timeline.Source, runDir string, runErr error) reports.ScenarioReport {
	rep := reports.ScenarioReport{Name: sc.Name, File: sc.File, RunDir: runDir}
	if src != nil {
		cls := sc.Classification()
		ser := reports.NewSeries(src.Head(), cls)
		verdicts, m, err := sc.Judge(src, &cls, contract.JudgeOptions{Each: ser.Add})
		rep.Contracts = verdicts
		if m != nil {
			rep.AddMeasurement(*m)
			rep.Series = ser.Series()
		}
		if err != nil && runErr == nil {
			runErr = err
		}
	}
	if runErr != nil {
		rep.Error = runErr.Error()
	}
	rep.Verdict = contract.Overall(rep.Contracts, runErr)
	return rep
}

// writeReports writes the reports in dir (the table to out, painted with
// color and fitted to width) and names the files written.
func writeReports(out io.Writer, dir string, rep *reports.Report, formats []reports.Format, color bool, width int) error {
	paths, err := reports.Write(dir, out, rep, formats, reports.Options{Table: reports.TableOptions{Color: color, Dir: dir, Width: width}})
	if err != nil {
		return &runner.InfraError{Msg: "cannot write the reports", Err: err}
	}
	for _, p := range paths {
		reports.WriteWrapped(out, "report: "+p, width)
	}
	return nil
}

// checkShardTargets refuses to slice the load of a scenario whose target
// chaoskit starts itself (a command or the demo): each shard would start
// a service of its own and load only its slice of it, and the merged
// verdict would judge services none of which got the scenario's load.
func checkShardTargets(scs []*plan.Scenario, opts Options) error {
	var flag string
	switch {
	case !opts.Shard.Whole():
		flag = "--shard " + opts.Shard.String()
	case opts.NoFaults:
		flag = "--no-faults"
	case opts.FaultsOnly:
		flag = "--faults-only"
	default:
		return nil
	}
	for _, sc := range scs {
		var starts string
		switch {
		case sc.Target.Command != nil:
			starts = "target.command"
		case sc.Target.Demo != nil:
			starts = "target.demo"
		default:
			continue
		}
		return exitcode.New(exitcode.Invalid, "%s: %s on a target chaoskit starts itself (%s): each shard would start a service of its own and send it only its slice of the load; "+
			"start the service once, where every shard reaches it, and give its address as target.url (with target.failpoints for point faults), or run without %s",
			sc.File, flag, starts, strings.Fields(flag)[0])
	}
	return nil
}
