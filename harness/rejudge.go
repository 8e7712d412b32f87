package harness

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/internal/outdir"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/runner"
	"github.com/chaoskit/chaoskit/timeline"
)

// RejudgeOptions control Rejudge.
type RejudgeOptions struct {
	// ReportDir receives the report files; empty means the root given.
	ReportDir string
	Formats   []reports.Format
	// Scenario, when set, is the scenario file to judge with (one run
	// only), instead of the one the run was made from.
	Scenario string
	// Out receives a line per run, the table and the report files' names;
	// Color paints the table; Width is the terminal's width it fits in
	// (reports.TableOptions.Width; 0 means no limit).
	Out   io.Writer
	Color bool
	Width int
	// Mode, Results, GitHub and GitLab are Options'.
	Mode    OutputMode
	Results io.Writer
	GitHub  *GitHub
	GitLab  *GitLab
}

// Rejudge judges the runs saved at or below root again, without starting a
// service or sending a request, and writes their reports, judged with the
// scenario copy saved in each run directory or the one opts names (see
// findScenario). The error carries its exit code, as Run's does.
func Rejudge(root string, opts RejudgeOptions) (*reports.Report, error) {
	o := newOutput(opts.Out, opts.Results, opts.Mode, opts.Color, opts.Width, opts.GitHub, opts.GitLab)
	out := o.progress
	runs, err := findRuns(root)
	if err != nil {
		return nil, err
	}
	if opts.Scenario != "" && len(runs) > 1 {
		return nil, exitcode.New(exitcode.Invalid, "--scenario judges one run, and %s holds %d", root, len(runs))
	}
	dir := opts.ReportDir
	if dir == "" {
		dir = root
	}
	unlock, err := claimReportDir(dir, "", reportFilesOf(opts.Formats))
	if err != nil {
		return nil, err
	}
	defer unlock()
	var reps []reports.ScenarioReport
	var started, ended time.Time
	for _, run := range runs {
		src, err := timeline.OpenDir(run)
		if err != nil {
			return nil, exitcode.Wrap(exitcode.Invalid, err)
		}
		tl := src.Head()
		sc, from, err := findScenario(run, tl, opts.Scenario)
		if err != nil {
			return nil, err
		}
		reports.WriteWrapped(out, fmt.Sprintf("%s (%s, judged with %s)", sc.Name, run, from), opts.Width)
		rep := ScenarioReport(sc, src, runDirFrom(dir, run), recordedError(run, tl))
		if src.Cut && rep.Error == "" {
			rep.Error = "the request stream's last frame was cut short: the recording process died while writing it"
		}
		reps = append(reps, rep)
		start, end := runSpan(tl)
		if started.IsZero() || start.Before(started) {
			started = start
		}
		if end.After(ended) {
			ended = end
		}
	}
	rep := reports.New(started, reps)
	rep.Duration = ended.Sub(started)
	fmt.Fprintln(out)
	if err := o.finish(dir, rep, opts.Formats); err != nil {
		return rep, err
	}
	return rep, verdictError(rep)
}

// findRuns returns the run directories at or below root: those holding a
// timeline, in name order.
func findRuns(root string) ([]string, error) {
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() {
		return nil, exitcode.New(exitcode.Invalid, "%s is not a directory (give a run directory or one above run directories)", root)
	}
	var runs []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if _, err := os.Stat(filepath.Join(path, timeline.FileName)); err == nil {
			runs = append(runs, path)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, &runner.InfraError{Msg: "cannot read " + root, Err: err}
	}
	if len(runs) == 0 {
		return nil, exitcode.New(exitcode.Invalid, "no runs in %s: no %s at or below it", root, timeline.FileName)
	}
	sort.Strings(runs)
	return runs, nil
}

// runDirFrom names run as seen from the report directory: relative when
// it lies below it, else absolute.
func runDirFrom(dir, run string) string {
	absDir, err1 := filepath.Abs(dir)
	absRun, err2 := filepath.Abs(run)
	if err1 != nil || err2 != nil {
		return run
	}
	if rel, err := filepath.Rel(absDir, absRun); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return rel
	}
	return absRun
}

// findScenario loads the scenario to judge a saved run with, and says
// where it came from: override when given; else the copy saved in the run
// directory, when it still has the SHA-256 the run recorded; else, for a
// run that saved no copy, the bundled scenario of the same name. It loads
// with the variable values and rate scale the run used; the load is not
// sent again, so request bodies are not needed.
//
// A run directory is data from elsewhere (a CI artifact, a shard): the
// scenario file its record names is never opened, and nothing outside the
// run directory is read on its word.
func findScenario(run string, tl *timeline.Timeline, override string) (*plan.Scenario, string, error) {
	opts := plan.Options{Vars: tl.Meta.Vars, RateScale: tl.Meta.RateScale, SkipBodyFiles: true}
	if override != "" {
		if _, err := os.Stat(override); err != nil {
			return nil, "", exitcode.New(exitcode.Invalid, "--scenario %s: no such file", override)
		}
		sc, err := plan.LoadFile(override, opts)
		return sc, override, err
	}
	copyPath := filepath.Join(run, plan.CopyFile)
	if _, err := os.Lstat(copyPath); err == nil {
		sc, err := plan.LoadCopy(run, tl.Meta.ScenarioSHA256, opts)
		var he *plan.CopyHashError
		if errors.As(err, &he) {
			return nil, "", exitcode.New(exitcode.Invalid, "%s: %v; judge the run with --scenario FILE", run, err)
		}
		if errors.Is(err, outdir.ErrNotRecorded) {
			return nil, "", exitcode.New(exitcode.Invalid, "%s: %v; judge the run with --scenario FILE", run, err)
		}
		if err == nil && tl.Meta.ScenarioSHA256 != "" && tl.Meta.File != "" {
			// The copy holds the bytes of the file the run was made from
			// (its hash says so): positions name that file, as the run's
			// did, so that an annotation lands on the line in the user's
			// tree. The name is a label; the file is never opened.
			for i := range sc.Contracts {
				if p := &sc.Contracts[i].Position; p.File == copyPath {
					p.File = tl.Meta.File
				}
			}
			sc.File = tl.Meta.File
		}
		return sc, copyPath, err
	}
	scs, err := plan.Bundled(opts)
	if err == nil {
		for _, sc := range scs {
			if sc.Name == tl.Meta.Scenario {
				return sc, "the bundled scenario " + sc.File, nil
			}
		}
	}
	return nil, "", exitcode.New(exitcode.Invalid, "%s: no scenario copy (%s) in the run directory, and no bundled scenario is named %q; name the scenario file with --scenario", run, plan.CopyFile, tl.Meta.Scenario)
}

// recordedError is the error the run in dir ended with, as its timeline
// records it: the run_end message unless the run completed. A timeline that
// stops short was cut by the recording process's death or by a write that
// failed (a full disk): the run directory's marker, written in place where
// no new file fits, tells which.
func recordedError(dir string, tl *timeline.Timeline) error {
	if !tl.Complete {
		if _, cause, ok := runner.RecordedOutcome(dir); ok && cause != "" {
			return fmt.Errorf("the timeline stops short: %s", cause)
		}
		return errors.New("the timeline stops short: the recording process was killed")
	}
	for i := len(tl.Events) - 1; i >= 0; i-- {
		if e := tl.Events[i]; e.Kind == timeline.RunEnd {
			if e.Message != "" && e.Message != "completed" {
				return errors.New(e.Message)
			}
			return nil
		}
	}
	return nil
}

// runSpan is when a recorded run started and ended.
func runSpan(tl *timeline.Timeline) (time.Time, time.Time) {
	start, end := tl.Meta.Start, tl.Meta.Start
	for _, e := range tl.Events {
		if start.IsZero() || e.Time.Before(start) {
			start = e.Time
		}
		if e.Time.After(end) {
			end = e.Time
		}
	}
	return start, end
}
