package harness

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/chaoskit/chaoskit/internal/outdir"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/runner"
)

// reportFiles are the files chaoskit writes in a report directory.
var reportFiles = []string{reports.FileJSON, reports.FileJUnit, reports.FileMarkdown, reports.FileHTML, reproducerFile, FuzzFile, ExploreFile}

// claimReportDir makes dir a report directory chaoskit may write files
// into: a run directory (chaoskit report writes next to the run's files),
// a directory chaoskit made or may make its own (see outdir.Claim), or
// else another directory where none of files exists unless an earlier
// chaoskit visit wrote it (see outdir.Visit). A file there that chaoskit
// did not write is never replaced: the run is refused with exit 3 before
// it starts, and the directory is left as it was.
//
// dir is locked until release: a second chaoskit command writing into it
// at the same time is refused, naming the first.
func claimReportDir(dir, tool string, files []string) (release func(), err error) {
	release, err = outdir.LockNew(dir)
	if le := (*outdir.LockedError)(nil); errors.As(err, &le) {
		return nil, &runner.InfraError{Msg: "another chaoskit is writing " + dir, Err: err,
			Fix: "wait for it to end, or give this command another --report-dir"}
	}
	if err != nil && !errors.Is(err, syscall.ELOOP) && !errors.Is(err, syscall.ENOTDIR) {
		return nil, &runner.InfraError{Msg: "cannot create the report directory", Err: err}
	}
	if release == nil {
		release = func() {} // no directory: Claim says what is there
	}
	if err := claimUnlocked(dir, tool, files); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

func claimUnlocked(dir, tool string, files []string) error {
	if runner.IsRunDir(dir) {
		return nil
	}
	_, err := outdir.Claim(dir, outdir.Marker{Kind: outdir.Report, Tool: tool}, func(k outdir.Kind) bool { return k != outdir.Guest })
	var fe *outdir.ForeignError
	if errors.As(err, &fe) {
		err = outdir.Visit(dir, files, isChaoskitReport)
	}
	if errors.As(err, &fe) {
		return &runner.InfraError{Msg: "will not write reports into " + dir, Err: err,
			Fix: "give --report-dir a new or empty directory, or move " + filepath.Join(dir, fe.Entry) + " away"}
	}
	if err != nil {
		return &runner.InfraError{Msg: "cannot create the report directory", Err: err}
	}
	return nil
}

// isChaoskitReport says whether path is a report.json chaoskit wrote: a
// JSON object with its schema version, verdict and scenarios. (The other
// report files of an older chaoskit, in a directory it shared, are not
// recognised and so never replaced.)
func isChaoskitReport(path string) bool {
	if filepath.Base(path) != reports.FileJSON {
		return false
	}
	f, err := outdir.Open(path) // a link under the name is not chaoskit's
	if err != nil {
		return false
	}
	defer f.Close()
	var r struct {
		SchemaVersion int               `json:"schema_version"`
		Verdict       string            `json:"verdict"`
		Scenarios     []json.RawMessage `json:"scenarios"`
	}
	return json.NewDecoder(io.LimitReader(f, 64<<20)).Decode(&r) == nil && r.SchemaVersion > 0 && r.Verdict != "" && r.Scenarios != nil
}

// reportFilesOf names the files formats write in a report directory.
func reportFilesOf(formats []reports.Format) []string {
	var out []string
	for _, f := range formats {
		if name := reports.FileOf(f); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// claimTrialsDir makes dir, below a campaign's report directory, the
// directory of its trials (see outdir.Claim).
func claimTrialsDir(dir, tool string) error {
	_, err := outdir.Claim(dir, outdir.Marker{Kind: outdir.Trials, Tool: tool}, func(k outdir.Kind) bool { return k == outdir.Trials })
	var fe *outdir.ForeignError
	if errors.As(err, &fe) {
		return &runner.InfraError{Msg: "will not write trials into " + dir, Err: err,
			Fix: "give --report-dir a new or empty directory: chaoskit writes only into directories it made"}
	}
	if err != nil {
		return &runner.InfraError{Msg: "cannot create the trials directory", Err: err}
	}
	return nil
}

// isTrialFile says whether name is a trial's scenario file.
func isTrialFile(e fs.DirEntry) bool {
	return e.Type().IsRegular() && filepath.Ext(e.Name()) == ".yaml"
}

// pruneTrials removes the trials in dir that keep does not name (by
// label: trial-007 keeps trial-007.yaml and the run directory trial-007),
// and dir itself once nothing is left in it. Only a trials directory
// chaoskit marked is pruned, and in it only trial files and run
// directories chaoskit made: nothing else is ever deleted.
func pruneTrials(dir string, keep []string) error {
	m, ok, err := outdir.ReadMarker(dir)
	if err != nil || !ok || m.Kind != outdir.Trials {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		label := e.Name()
		if isTrialFile(e) {
			label = label[:len(label)-len(".yaml")]
		}
		switch {
		case slices.Contains(keep, label):
		case isTrialFile(e):
			errs = append(errs, os.Remove(path))
		case e.IsDir() && runner.IsRunDir(path):
			errs = append(errs, runner.RemoveRunDir(path))
		}
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) == 1 && entries[0].Name() == outdir.MarkerFile {
		errs = append(errs, os.Remove(filepath.Join(dir, outdir.MarkerFile)), os.Remove(dir))
	}
	return errors.Join(errs...)
}
