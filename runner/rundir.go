package runner

import (
	"context"
	"errors"
	"path/filepath"
	"slices"

	"github.com/chaoskit/chaoskit/internal/outdir"
	"github.com/chaoskit/chaoskit/internal/reach"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// Files the target's output goes to, in the run directory.
const (
	TargetStdout = "target.stdout"
	TargetStderr = "target.stderr"
	// DepsDir holds each dependency's data directory and output.
	DepsDir = "deps"
)

// runFiles are the entries chaoskit writes in a run directory: the run's
// own, the reports `chaoskit report` writes there, and the temporary files
// of older versions' renames. Replacing a run directory removes these and
// nothing else.
var runFiles = []string{
	timeline.FileName, timeline.RequestsFile, ResultsFile, FaultRecord, SummaryFile, ScenarioCopy, plan.CopyIncludeDir,
	TargetStdout, TargetStderr, DepsDir, StepsDir, ProxyLog, FaultRecord + ".tmp", SummaryFile + ".tmp",
	"report.json", "junit.xml", "report.md", "report.html",
}

// isRunFile says whether name is an entry chaoskit writes in a run
// directory.
func isRunFile(name string, isDir bool) bool {
	return slices.Contains(runFiles, name) && isDir == (name == plan.CopyIncludeDir || name == DepsDir || name == StepsDir)
}

// IsRunDir reports whether dir is a run directory chaoskit made: it
// carries chaoskit's marker of a run.
func IsRunDir(dir string) bool {
	m, ok, err := outdir.ReadMarker(dir)
	return ok && err == nil && (m.Kind == outdir.Run || m.Kind == "")
}

// replaceRunDir empties dir of a run's files, if it is a run directory
// chaoskit made (see IsRunDir); files it does not write there stay.
func replaceRunDir(dir string) error {
	return outdir.RemoveFiles(dir, isRunFile)
}

// RemoveRunDir removes a run directory chaoskit made: its run's files and
// then the directory, unless something chaoskit did not write is in it.
func RemoveRunDir(dir string) error {
	return outdir.RemoveDir(dir, isRunFile)
}

// prepareDir makes dir the run directory of sc: created and marked as
// chaoskit's, or, when it holds an earlier run of chaoskit's, emptied of
// that run's files after the faults that run may have left on are rolled
// back (reaching only where allow allows). A directory chaoskit did not
// make is refused (exit 3) and left as it is, whatever path the
// scenario's name made of it.
//
// The directory is locked (outdir.Lock) before anything in it is touched,
// and stays locked until release: a second chaoskit writing the same run
// directory is refused, naming the first.
func prepareDir(ctx context.Context, dir string, m outdir.Marker, allow *reach.Policy) (release func(), err error) {
	if dir == "" {
		return nil, infra("no run directory given", "", nil)
	}
	unlock, lerr := outdir.LockNew(dir)
	if le := (*outdir.LockedError)(nil); errors.As(lerr, &le) {
		return nil, infra("another chaoskit is writing the run directory "+dir, "wait for it to end, or give this run another --report-dir", lerr)
	}
	if unlock == nil {
		unlock = func() {} // no directory: Claim says what is there
	}
	defer func() {
		if err != nil {
			unlock()
		}
	}()
	m.Kind = outdir.Run
	earlier, err := outdir.Claim(dir, m, func(k outdir.Kind) bool { return k == outdir.Run })
	var fe *outdir.ForeignError
	if errors.As(err, &fe) {
		return nil, infra("will not write the run into "+dir, "chaoskit replaces only run directories it made: give --report-dir, or the scenario a name, that makes a new or empty directory", err)
	}
	if err != nil {
		return nil, infra("cannot create the run directory", "", err)
	}
	if lerr != nil {
		return nil, infra("cannot lock the run directory "+dir, "", lerr)
	}
	if !earlier {
		return unlock, nil
	}
	if fr, err := readRecord(filepath.Join(dir, FaultRecord)); err == nil && len(fr.Points) > 0 {
		_, _ = rollbackRecord(ctx, fr, allow)
	}
	if err := replaceRunDir(dir); err != nil {
		return nil, infra("cannot replace the earlier run in "+dir, "", err)
	}
	if err := outdir.Mark(dir, m); err != nil {
		return nil, infra("cannot create the run directory", "", err)
	}
	return unlock, nil
}

// RecordedOutcome returns how the run in dir ended as its marker records
// it (see Run): ok is false when the marker holds no outcome, as after a
// kill -9 or for a run made before markers.
func RecordedOutcome(dir string) (outcome, errText string, ok bool) {
	m, marked, err := outdir.ReadMarker(dir)
	if err != nil || !marked || m.Outcome == "" {
		return "", "", false
	}
	return m.Outcome, m.Error, true
}
