package harness

import (
	"fmt"
	"io"
	"strings"

	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/timeline"
)

// Merge judges the runs recorded in dirs as one run: the shards of one
// scenario's load (chaoskit run --shard i/n), with the run that switched
// the faults (shard 1, or a --faults-only run), and writes the reports in
// opts.ReportDir (default: the first directory). Verdicts and counts are
// those of one run of the whole load (timeline.Merge says how the records
// combine). The error carries its exit code, as Rejudge's does.
func Merge(dirs []string, opts RejudgeOptions) (*reports.Report, error) {
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	if len(dirs) < 2 {
		return nil, exitcode.New(exitcode.Invalid, "--merge needs the run directories of at least two shards, and was given %d", len(dirs))
	}
	for _, d := range dirs {
		if runs, err := findRuns(d); err != nil {
			return nil, err
		} else if len(runs) != 1 || runs[0] != d {
			return nil, exitcode.New(exitcode.Invalid, "--merge takes run directories (each holding %s), and %s holds %d runs below it: name the shards' run directories", timeline.FileName, d, len(runs))
		}
	}
	m, err := timeline.Merge(dirs)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Invalid, err)
	}
	if err := checkShards(m); err != nil {
		return nil, err
	}
	dir := opts.ReportDir
	if dir == "" {
		dir = dirs[0]
	}
	if err := claimReportDir(dir, "", reportFilesOf(opts.Formats)); err != nil {
		return nil, err
	}
	head := m.Head()
	sc, from, err := findScenario(dirs[0], head, opts.Scenario)
	if err != nil {
		return nil, err
	}
	reports.WriteWrapped(out, fmt.Sprintf("%s (merged: %s; judged with %s)", sc.Name, strings.Join(m.Shards(), ", "), from), opts.Width)
	rep := ScenarioReport(sc, m, runDirFrom(dir, dirs[0]), RecordedError(dirs[0], head))
	start, end := runSpan(head)
	r := reports.New(start, []reports.ScenarioReport{rep})
	r.Duration = end.Sub(start)
	fmt.Fprintln(out)
	if err := writeReports(out, dir, r, opts.Formats, opts.Color, opts.Width); err != nil {
		return r, err
	}
	return r, verdictError(r)
}

// checkShards refuses a merge that cannot be one run: two runs of the same
// shard, shards of different splits, or more than one run switching the
// faults.
func checkShards(m *timeline.Merged) error {
	seen := map[string]bool{}
	count := ""
	switched := 0
	for _, s := range m.Streams() {
		meta := s.Head().Meta
		if s.Switched() {
			switched++
		}
		if meta.Shard == "" {
			continue
		}
		_, n, _ := strings.Cut(meta.Shard, "/")
		if count != "" && n != count {
			return exitcode.New(exitcode.Invalid, "%s is shard %s, and another run is a shard of %s: merge the shards of one split", s.Dir(), meta.Shard, count)
		}
		count = n
		if seen[meta.Shard] {
			return exitcode.New(exitcode.Invalid, "%s is shard %s, as another run given is: give each shard once", s.Dir(), meta.Shard)
		}
		seen[meta.Shard] = true
	}
	if switched > 1 {
		return exitcode.New(exitcode.Invalid, "%d of the runs given switched faults: only shard 1 (or one --faults-only run, with every shard run --no-faults) may", switched)
	}
	return nil
}
