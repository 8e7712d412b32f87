package harness

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/plan"
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
	unlock, err := claimReportDir(dir, "", reportFilesOf(opts.Formats))
	if err != nil {
		return nil, err
	}
	defer unlock()
	head := m.Head()
	sc, from, err := findScenario(dirs[0], head, opts.Scenario)
	if err != nil {
		return nil, err
	}
	reports.WriteWrapped(out, fmt.Sprintf("%s (merged: %s; judged with %s)", sc.Name, strings.Join(m.Shards(), ", "), from), opts.Width)
	rep := ScenarioReport(sc, m, runDirFrom(dir, dirs[0]), recordedError(dirs[0], head))
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
// shard, shards of different splits, a shard of the split missing, more
// than one run switching the faults, runs of different scenarios, with
// different variables or rate scales, or runs whose phases did not run
// together.
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
	if n, err := strconv.Atoi(count); err == nil {
		var missing []string
		for i := 1; i <= n; i++ {
			if sh := fmt.Sprintf("%d/%d", i, n); !seen[sh] {
				missing = append(missing, sh)
			}
		}
		if len(missing) > 0 {
			return exitcode.New(exitcode.Invalid, "shard %s of the split is missing: merged without it, the run would be judged on %d of the %d slices of its load; give the run directory of every shard", strings.Join(missing, ", "), n-len(missing), n)
		}
	}
	streams := m.Streams()
	ref := streams[0]
	for _, s := range streams[1:] {
		if err := sameRun(ref, s); err != nil {
			return err
		}
	}
	return nil
}

// sameRun refuses s as part of ref's run: another version of the scenario
// (the copy each run directory keeps), other variables, another rate
// scale, other phases, or phases that did not overlap ref's for at least
// half their length (a shard started late, whose load never met the
// faults it is judged under).
func sameRun(ref, s *timeline.Stream) error {
	a, b := ref.Head().Meta, s.Head().Meta // of one scenario by name (timeline.Merge)
	if ca, cb := scenarioCopy(ref.Dir()), scenarioCopy(s.Dir()); ca != nil && cb != nil && !bytes.Equal(ca, cb) {
		return exitcode.New(exitcode.Invalid, "%s and %s ran different versions of scenario %q (their copies of it, %s, differ): run every shard from one scenario file", ref.Dir(), s.Dir(), a.Scenario, plan.CopyFile)
	}
	names := slices.Sorted(maps.Keys(a.Vars))
	for k := range b.Vars {
		if _, ok := a.Vars[k]; !ok {
			names = append(names, k)
		}
	}
	for _, k := range names {
		va, oka := a.Vars[k]
		vb, okb := b.Vars[k]
		if va != vb || oka != okb {
			return exitcode.New(exitcode.Invalid, "%s ran with %s and %s with %s: run every shard with the same --var values", ref.Dir(), varText(k, va, oka), s.Dir(), varText(k, vb, okb))
		}
	}
	if ra, rb := rateScale(a.RateScale), rateScale(b.RateScale); ra != rb {
		return exitcode.New(exitcode.Invalid, "%s ran at --rate-scale %g and %s at %g: each shard sends its slice of one load; run every shard with the same --rate-scale", ref.Dir(), ra, s.Dir(), rb)
	}
	pa, pb := ref.Head().Phases(), s.Head().Phases()
	if len(pa) != len(pb) {
		return exitcode.New(exitcode.Invalid, "%s ran %d phases (%s) and %s ran %d (%s): merge runs that ran every phase", ref.Dir(), len(pa), phaseNames(pa), s.Dir(), len(pb), phaseNames(pb))
	}
	origin := pa[0].Start
	for i := range pa {
		p, q := pa[i], pb[i]
		if p.Name != q.Name {
			return exitcode.New(exitcode.Invalid, "%s ran phases %s and %s ran %s: merge the runs of one scenario", ref.Dir(), phaseNames(pa), s.Dir(), phaseNames(pb))
		}
		overlap := minTime(p.End, q.End).Sub(maxTime(p.Start, q.Start))
		shorter := min(p.End.Sub(p.Start), q.End.Sub(q.Start))
		if overlap*2 < shorter {
			return exitcode.New(exitcode.Invalid, "%s ran phase %q from %s to %s and %s from %s to %s (from %s's first phase start): they overlap %s, less than half the phase, so the shards did not run together; start every shard with one --start-at",
				s.Dir(), q.Name, offset(q.Start, origin), offset(q.End, origin), ref.Dir(), offset(p.Start, origin), offset(p.End, origin), ref.Dir(), max(overlap, 0).Round(time.Millisecond))
		}
	}
	return nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// offset writes t as seconds from origin: "+10.2s", "-0.5s".
func offset(t, origin time.Time) string {
	return fmt.Sprintf("%+.1fs", t.Sub(origin).Seconds())
}

func phaseNames(ps []timeline.Phase) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// rateScale is a recorded rate scale, 0 meaning none (1).
func rateScale(f float64) float64 {
	if f == 0 {
		return 1
	}
	return f
}

// varText writes one variable as a run had it.
func varText(name, value string, set bool) string {
	if !set {
		return name + " unset"
	}
	return name + "=" + value
}

// maxScenarioCopy bounds how much of a scenario copy a merge compares.
const maxScenarioCopy = 16 << 20

// scenarioCopy is the copy of its scenario a run directory keeps, nil
// when it keeps none (only a regular file there is its copy).
func scenarioCopy(dir string) []byte {
	f, err := os.OpenFile(filepath.Join(dir, plan.CopyFile), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, maxScenarioCopy))
	if err != nil {
		return nil
	}
	return b
}
