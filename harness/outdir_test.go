package harness

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/internal/outdir"
	"github.com/chaoskit/chaoskit/runner"
	"github.com/chaoskit/chaoskit/timeline"
)

// tree lists the files below dir with their contents.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			out[rel] = string(data)
		}
		return nil
	})
	return out
}

func put(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReportsNeverReplaceSomeoneElsesFile(t *testing.T) {
	// A report directory with the user's own report.json: chaoskit report
	// refuses before it writes anything, and the directory is unchanged.
	root := t.TempDir()
	saveRun(t, filepath.Join(root, "runs", "a"), "85", true)
	review := filepath.Join(root, "review")
	put(t, review, map[string]string{"report.json": "my own notes", "keep/x": "x"})
	before := tree(t, review)
	var out bytes.Buffer
	err := rejudge(&out, filepath.Join(root, "runs"), "table,json", review, "")
	if exitcode.Of(err) != exitcode.Infra || !strings.Contains(err.Error(), "will not write reports into "+review) || !strings.Contains(err.Error(), "report.json") {
		t.Fatalf("err = %v, want exit 3 naming %s and report.json", err, review)
	}
	if after := tree(t, review); len(after) != len(before) || after["report.json"] != "my own notes" {
		t.Errorf("the refused directory changed: %v", after)
	}
	if strings.Contains(out.String(), "PASS") || strings.Contains(out.String(), "FAIL") {
		t.Errorf("a verdict was printed:\n%s", out.String())
	}

	// Without a report.json of its own the same directory takes one, and
	// the next run may replace the file chaoskit wrote, but nothing else.
	os.Remove(filepath.Join(review, "report.json"))
	for range 2 {
		if err := rejudge(&out, filepath.Join(root, "runs"), "json", review, ""); err != nil {
			t.Fatalf("into a directory with other files: %v", err)
		}
	}
	if got := tree(t, review); got["keep/x"] != "x" || got["report.json"] == "" {
		t.Errorf("after two runs: %v", got)
	}
	os.WriteFile(filepath.Join(review, "report.md"), []byte("mine"), 0o644)
	if err := rejudge(&out, filepath.Join(root, "runs"), "json,markdown", review, ""); exitcode.Of(err) != exitcode.Infra {
		t.Errorf("replaced someone's report.md: %v", err)
	}

	// The report directory an older chaoskit shared with other tools
	// (make test's out/test-artifacts): its report.json, recognised as a
	// chaoskit report, may be replaced.
	shared := filepath.Join(root, "shared")
	put(t, shared, map[string]string{"test-artifacts/x.json": "{}"})
	if err := rejudge(&out, filepath.Join(root, "runs"), "json", shared, ""); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(shared, outdir.MarkerFile)) // as an older chaoskit left it
	if err := rejudge(&out, filepath.Join(root, "runs"), "json", shared, ""); err != nil {
		t.Errorf("over an older chaoskit's report.json: %v", err)
	}
}

func TestPruneRemovesOnlyTrials(t *testing.T) {
	dir := filepath.Join(t.TempDir(), TrialsDir)
	if err := claimTrialsDir(dir, "test"); err != nil {
		t.Fatal(err)
	}
	put(t, dir, map[string]string{
		"trial-001.yaml": "x", "trial-001/" + timeline.FileName: "x", "trial-001/run.json": "x",
		"trial-002.yaml": "x", "trial-002/" + timeline.FileName: "x",
		"candidate.yaml": "x",
		// Not a trial: a directory chaoskit did not write and a file that
		// is not a scenario.
		"mine/notes.txt": "mine", "README": "mine",
	})
	for _, run := range []string{"trial-001", "trial-002"} {
		if err := outdir.Mark(filepath.Join(dir, run), outdir.Marker{Kind: outdir.Run}); err != nil {
			t.Fatal(err)
		}
		if !runner.IsRunDir(filepath.Join(dir, run)) {
			t.Fatalf("%s is not a run directory", run)
		}
	}
	if err := pruneTrials(dir, []string{"trial-002"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for name := range tree(t, dir) {
		got = append(got, name)
	}
	slices.Sort(got)
	want := []string{outdir.MarkerFile, "README", "mine/notes.txt", "trial-002.yaml", "trial-002/" + outdir.MarkerFile, "trial-002/" + timeline.FileName}
	if !slices.Equal(got, want) {
		t.Errorf("after pruning: %v\nwant %v", got, want)
	}
	// An unmarked directory is never pruned.
	other := t.TempDir()
	put(t, other, map[string]string{"trial-001.yaml": "x"})
	pruneTrials(other, nil)
	if len(tree(t, other)) != 1 {
		t.Error("an unmarked trials directory was pruned")
	}
}

// TestTwoWritersOfOneReportDirectory: while another process writes a
// report directory (flock(1) holds its lock), a second command is refused
// with exit 3, a message naming the holder, and nothing written; once the
// holder is gone the directory is claimed as usual.
func TestTwoWritersOfOneReportDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "reports")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	holder := exec.Command("flock", dir, "sleep", "30")
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // sleep inherits the lock
	if err := holder.Start(); err != nil {
		t.Skip("no flock(1):", err)
	}
	stop := func() { syscall.Kill(-holder.Process.Pid, syscall.SIGKILL); holder.Wait() }
	defer stop()
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var release func()
		if release, err = claimReportDir(dir, "", []string{"report.json"}); err != nil {
			break
		}
		release() // flock(1) has not locked it yet
		os.Remove(filepath.Join(dir, outdir.MarkerFile))
	}
	want := fmt.Sprintf("another chaoskit is writing %s: %s is being written by process %d (flock %s sleep 30)", dir, dir, holder.Process.Pid, dir)
	if err == nil || !strings.Contains(err.Error(), want) || exitcode.Of(err) != exitcode.Infra {
		t.Fatalf("claimReportDir = %v (exit %d), want %q, exit 3", err, exitcode.Of(err), want)
	}
	if got := tree(t, dir); len(got) != 0 {
		t.Errorf("the refused command wrote %v", got)
	}
	stop()
	// The lock ends with the last process holding it: sleep, killed too,
	// may take a moment more than flock(1) to go.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		release, err := claimReportDir(dir, "", []string{"report.json"})
		if err == nil {
			release()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the holder ended: %v", err)
		}
	}
}

// TestAReportFileThatIsNoFileIsNeverReadOrReplaced: in a --report-dir
// chaoskit did not make, a report.json that is a FIFO (whose open would
// wait for a writer forever) or a link is someone else's: refused at once,
// left in place.
func TestAReportFileThatIsNoFileIsNeverReadOrReplaced(t *testing.T) {
	for _, kind := range []string{"fifo", "link"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
			p := filepath.Join(dir, "report.json")
			if kind == "fifo" {
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				other := filepath.Join(t.TempDir(), "report.json")
				os.WriteFile(other, []byte(`{"schema_version":2,"verdict":"pass","scenarios":[]}`), 0o644)
				if err := os.Symlink(other, p); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 1)
			go func() {
				release, err := claimReportDir(dir, "", []string{"report.json"})
				if err == nil {
					release()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "report.json, which chaoskit did not write") {
					t.Fatalf("claimReportDir = %v, want report.json refused", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("claimReportDir waited on report.json")
			}
			if st, err := os.Lstat(p); err != nil || st.Mode().IsRegular() {
				t.Errorf("report.json was replaced: %v", err)
			}
		})
	}
}
