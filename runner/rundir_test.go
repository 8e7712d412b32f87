package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/internal/outdir"
	"github.com/chaoskit/chaoskit/timeline"
)

func writeFiles(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

func TestPrepareDirReplacesOnlyItsOwnRuns(t *testing.T) {
	marker := outdir.Marker{Name: "s"}
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, report string) (dir string)
		// left are the files that must be there afterwards (besides the
		// marker); refused says prepareDir must refuse.
		left    []string
		refused bool
	}{
		{"new", func(t *testing.T, report string) string { return filepath.Join(report, "s") }, nil, false},
		{"an earlier run", func(t *testing.T, report string) string {
			dir := filepath.Join(report, "s")
			if err := prepareReleased(dir, marker); err != nil {
				t.Fatal(err)
			}
			writeFiles(t, dir, timeline.FileName, ResultsFile, SummaryFile, "scenario-include/1-common.yaml", ".run.json.tmp-42", "notes.txt")
			return dir
		}, []string{"notes.txt"}, false},
		{"an unmarked run", func(t *testing.T, report string) string {
			dir := filepath.Join(report, "s")
			writeFiles(t, dir, timeline.FileName, FaultRecord, TargetStderr)
			return dir
		}, []string{FaultRecord, TargetStderr, timeline.FileName}, true},
		// A scenario named ".." makes the run directory the report
		// directory's parent: it is not chaoskit's and must stay whole.
		{"the parent of the report directory", func(t *testing.T, report string) string {
			parent := filepath.Dir(report)
			writeFiles(t, parent, timeline.FileName, "project/main.go")
			return filepath.Join(report, "..")
		}, []string{"project/main.go", timeline.FileName}, true},
		{"the report directory itself", func(t *testing.T, report string) string {
			if err := outdir.Mark(report, outdir.Marker{Kind: outdir.Report}); err != nil {
				t.Fatal(err)
			}
			writeFiles(t, report, "report.json", timeline.FileName)
			return report
		}, []string{"report.json", timeline.FileName}, true},
		{"someone's directory with a timeline in it", func(t *testing.T, report string) string {
			dir := filepath.Join(report, "s")
			writeFiles(t, dir, timeline.FileName, "thesis.tex")
			return dir
		}, []string{"thesis.tex", timeline.FileName}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			report := filepath.Join(t.TempDir(), "out")
			os.MkdirAll(report, 0o755)
			dir := tt.setup(t, report)
			err := prepareReleased(dir, marker)
			var ie *InfraError
			if tt.refused {
				if !errors.As(err, &ie) || !strings.Contains(err.Error(), "will not write the run into") || !strings.Contains(ie.Fix, "new or empty directory") {
					t.Fatalf("prepareDir = %v, want a refusal with a hint", err)
				}
				if got := entries(t, dir); !slices.Equal(withoutMarker(got), tt.left) {
					t.Errorf("a refused directory changed: %v, want %v", got, tt.left)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m, ok, _ := outdir.ReadMarker(dir); !ok || m.Kind != outdir.Run || m.Name != "s" {
				t.Errorf("marker %+v", m)
			}
			if got := withoutMarker(entries(t, dir)); !slices.Equal(got, tt.left) {
				t.Errorf("left %v, want %v", got, tt.left)
			}
		})
	}
}

func withoutMarker(files []string) []string {
	return slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == outdir.MarkerFile })
}

// TestPlantedLinksInAnEarlierRunAreNeverFollowed replaces deps/,
// scenario-include/ and target.stdout of an earlier run with links to a
// victim tree: preparing the run directory again, making deps/ and
// writing the outputs and the scenario's copy must leave the victims as
// they were.
func TestPlantedLinksInAnEarlierRunAreNeverFollowed(t *testing.T) {
	root := t.TempDir()
	dir, victim := filepath.Join(root, "run"), filepath.Join(root, "victim")
	writeFiles(t, victim, "redis/dump.rdb", "inc/keep", "file")
	marker := outdir.Marker{Kind: outdir.Run, Name: "s"}
	if err := prepareReleased(dir, marker); err != nil {
		t.Fatal(err)
	}
	for name, to := range map[string]string{DepsDir: victim, "scenario-include": filepath.Join(victim, "inc"), TargetStdout: filepath.Join(victim, "file"), DepsDir + ".x": victim} {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := prepareReleased(dir, marker); err != nil {
		t.Fatal(err)
	}
	// A link planted after the directory was prepared: the outputs are
	// opened without following it.
	if err := os.Symlink(filepath.Join(victim, "file"), filepath.Join(dir, TargetStderr)); err != nil {
		t.Fatal(err)
	}
	if p, err := startProcess([]string{"true"}, nil, dir, filepath.Join(dir, TargetStdout), filepath.Join(dir, TargetStderr)); err == nil {
		<-p.done
		t.Error("a process started with its stderr through a planted link")
	}
	for _, f := range []string{"redis/dump.rdb", "inc/keep", "file"} {
		if data, err := os.ReadFile(filepath.Join(victim, f)); err != nil || string(data) != f {
			t.Errorf("victim %s: %q, %v", f, data, err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(victim, "inc")); len(entries) != 1 {
		t.Errorf("the victim of scenario-include got files: %v", entries)
	}
	if _, err := os.Lstat(filepath.Join(dir, DepsDir)); err == nil {
		t.Error("the link named deps is still there")
	}
	if _, err := os.Lstat(filepath.Join(dir, DepsDir+".x")); err != nil {
		t.Error("a link under a name chaoskit does not write was removed")
	}
}

// prepareReleased is prepareDir with its lock released at once.
func prepareReleased(dir string, m outdir.Marker) error {
	release, err := prepareDir(context.Background(), dir, m, nil)
	if err == nil {
		release()
	}
	return err
}

// TestASecondWriterOfARunDirectoryIsRefused holds a run directory's lock
// in another process: prepareDir refuses, names that process, and touches
// nothing in the directory.
func TestASecondWriterOfARunDirectoryIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	marker := outdir.Marker{Kind: outdir.Run, Name: "s"}
	if err := prepareReleased(dir, marker); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, timeline.FileName)
	holder := exec.Command("flock", dir, "sleep", "30")
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // sleep inherits the lock
	if err := holder.Start(); err != nil {
		t.Skip("no flock(1):", err)
	}
	defer func() { syscall.Kill(-holder.Process.Pid, syscall.SIGKILL); holder.Wait() }()
	// Wait for flock(1) to hold the lock, touching nothing.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		release, err := outdir.Lock(dir)
		if err != nil {
			break
		}
		release()
		if time.Now().After(deadline) {
			t.Fatal("flock(1) did not lock the directory")
		}
	}
	_, err := prepareDir(context.Background(), dir, marker, nil)
	var ie *InfraError
	want := fmt.Sprintf("is being written by process %d (flock %s sleep 30)", holder.Process.Pid, dir)
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "another chaoskit is writing the run directory") || !strings.Contains(err.Error(), want) || !strings.Contains(ie.Fix, "another --report-dir") {
		t.Fatalf("prepareDir = %v, want a refusal naming the holder (%s)", err, want)
	}
	if _, err := os.Stat(filepath.Join(dir, timeline.FileName)); err != nil {
		t.Errorf("the refused run touched the directory: %v", err)
	}
}
