package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// These tests hold chaoskit to two promises: a verdict is only given for
// the load the scenario describes, and what a run writes is on disk, whole,
// before a verdict is printed. Each runs against the fixture service and
// the demo.

// loadScenario is a one-phase scenario at rate against target (the YAML
// of a target: block), judged on status.
func loadScenario(target, rate string, d time.Duration) string {
	return fmt.Sprintf(`name: honest
target:
%s
load:
  rate: %s
  timeout: 1s
  requests:
    - path: %s
phases:
  - name: only
    duration: %v
contracts:
  - name: answers
    phase: only
    expect: [status == 200 for >= 90%%]
`, target, rate, "PATH", d)
}

// targets are the two services these tests run against: the YAML of the
// target and the path the load requests.
func targets(t *testing.T) map[string][2]string {
	return map[string][2]string{
		"fixture": {fmt.Sprintf("  command:\n    argv: [%s, --listen, \"127.0.0.1:{port}\"]\n  url: http://127.0.0.1:{port}\n  points: [%s/itemQuery]", fixtureBin(t), fixturePkg), "/items/{1..20}"},
		"demo":    {"  demo:\n    args: []", "/products/{1..20}"},
	}
}

func scenarioFor(t *testing.T, target, rate string, d time.Duration) string {
	tg := targets(t)[target]
	return strings.Replace(loadScenario(tg[0], rate, d), "PATH", tg[1], 1)
}

func TestShortLoadIsInconclusive(t *testing.T) {
	bin := chaoskitBin(t)
	fixtureBin(t)
	t.Parallel()
	for _, target := range []string{"fixture", "demo"} {
		// A rate under the loader's ceiling (1,000,000/s) that no machine
		// of this size sends: the figure names it.
		t.Run(target+"/absurd rate", func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			res := runBin(t, bin, "run", writeFile(t, dir, "s.yaml", scenarioFor(t, target, "900000/s", time.Second)), "--report-dir", out)
			if res.code != 1 {
				t.Fatalf("exit %d, want 1 (inconclusive)\n%s\n%s", res.code, res.stdout, res.stderr)
			}
			c := readReport(t, out).Scenarios[0].Contracts[0]
			if c.Verdict != "inconclusive" || !strings.Contains(res.stdout, `requests planned for phase "only"`) || !strings.Contains(res.stdout, `of the 900,0`) || !strings.Contains(res.stdout, "INCONCLUSIVE") {
				t.Errorf("contract %+v\n%s", c, res.stdout)
			}
		})
		// chaoskit paused (SIGSTOP) in the middle of the phase: it catches
		// up in a burst, and the verdict says the load came late.
		t.Run(target+"/paused", func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			cmd, buf := startChaoskit(t, bin, writeFile(t, dir, "s.yaml", scenarioFor(t, target, "100/s", 3*time.Second)), out, "honest", phaseStarted("only"))
			time.Sleep(500 * time.Millisecond)
			cmd.Process.Signal(syscall.SIGSTOP)
			time.Sleep(1200 * time.Millisecond)
			cmd.Process.Signal(syscall.SIGCONT)
			if code := waitExit(t, cmd, buf); code != 1 {
				t.Fatalf("exit %d, want 1 (inconclusive)\n%s", code, buf)
			}
			if c := readReport(t, out).Scenarios[0].Contracts[0]; c.Verdict != "inconclusive" || !strings.Contains(buf.String(), `into phase "only" it had sent`) {
				t.Errorf("contract %+v\n%s", c, buf)
			}
		})
	}
}

// mount mounts a tmpfs of size at dir (ro: read-only), or skips (fails
// under CI=1) when the test cannot.
func mount(t *testing.T, dir, opts string) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "not root"
	} else if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		why = fmt.Sprintf("mount: %v: %s", err, out)
	}
	if why != "" {
		if os.Getenv("CI") == "1" {
			t.Fatalf("cannot mount a tmpfs: %s", why)
		}
		t.Skipf("needs a tmpfs of its own: %s (CI=1 makes this a failure)", why)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
}

// leftovers lists the temporary files below dir.
func leftovers(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && (strings.Contains(d.Name(), ".tmp-") || strings.HasSuffix(d.Name(), ".tmp")) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func TestFullDiskFailsTheRun(t *testing.T) {
	bin := chaoskitBin(t)
	fixtureBin(t)
	t.Parallel()
	for _, target := range []string{"fixture", "demo"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			disk := filepath.Join(dir, "disk")
			os.Mkdir(disk, 0o755)
			mount(t, disk, "size=96k")
			out := filepath.Join(disk, "out")
			// 3,000 requests: their results.bin alone (about 90 bytes a
			// request) outgrows the disk mid-run.
			res := runBin(t, bin, "run", writeFile(t, dir, "s.yaml", scenarioFor(t, target, "1000/s", 3*time.Second)), "--report-dir", out)
			if res.code != 3 {
				t.Fatalf("exit %d, want 3\n%s\n%s", res.code, res.stdout, res.stderr)
			}
			runDir := filepath.Join(out, "honest")
			oneLineCause(t, res.stderr, "cannot write "+runDir+"/", "no space left on device", "free space")
			if strings.Contains(res.stdout, "PASS") {
				t.Errorf("a PASS line on a full disk:\n%s", res.stdout)
			}
			if l := leftovers(disk); len(l) > 0 {
				t.Errorf("temporary files left: %v", l)
			}
			// The fault record is whole and names the endpoint.
			var rec struct {
				Control string   `json:"control"`
				Points  []string `json:"points"`
			}
			if data, err := os.ReadFile(filepath.Join(runDir, "faults.json")); err == nil {
				if err := json.Unmarshal(data, &rec); err != nil || rec.Control == "" {
					t.Errorf("faults.json %s: %v", data, err)
				}
			}
			// Judged again later, the run names the real cause, not a
			// killed process.
			res = runBin(t, bin, "report", runDir, "--report-dir", filepath.Join(dir, "review"))
			if !strings.Contains(res.stdout, "no space left on device") || strings.Contains(res.stdout, "was killed") {
				t.Errorf("chaoskit report: exit %d\n%s%s", res.code, res.stdout, res.stderr)
			}
		})
	}
	t.Run("read-only report directory", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o755)
		mount(t, ro, "ro,size=64k")
		res := runBin(t, bin, "run", writeFile(t, dir, "s.yaml", scenarioFor(t, "fixture", "20/s", time.Second)), "--report-dir", ro)
		if res.code != 3 || strings.Contains(res.stdout, "PASS") {
			t.Fatalf("exit %d, want 3 and no PASS\n%s\n%s", res.code, res.stdout, res.stderr)
		}
		oneLineCause(t, res.stderr, "read-only file system")
	})
}

func TestSomeoneElsesDirectoryIsLeftAlone(t *testing.T) {
	bin := chaoskitBin(t)
	fixtureBin(t)
	t.Parallel()
	for _, tt := range []struct {
		name  string
		files map[string]string
		says  string
	}{
		{"a report.json of their own", map[string]string{"report.json": "{}", "notes.txt": "mine"}, "report.json, which chaoskit did not write"},
		{"a directory named like the scenario", map[string]string{"honest/" + timeline.FileName: "mine", "honest/thesis.tex": "mine"}, "will not write the run into"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			theirs := filepath.Join(dir, "theirs")
			for name, text := range tt.files {
				os.MkdirAll(filepath.Dir(filepath.Join(theirs, name)), 0o755)
				writeFile(t, theirs, name, text)
			}
			res := runBin(t, bin, "run", writeFile(t, dir, "s.yaml", scenarioFor(t, "fixture", "20/s", 500*time.Millisecond)), "--report-dir", theirs)
			if res.code != 3 {
				t.Fatalf("exit %d, want 3\n%s\n%s", res.code, res.stdout, res.stderr)
			}
			oneLineCause(t, res.stderr, tt.says, theirs)
			for name, text := range tt.files {
				if got, err := os.ReadFile(filepath.Join(theirs, name)); err != nil || string(got) != text {
					t.Errorf("%s: %q, %v; want it untouched", name, got, err)
				}
			}
		})
	}
}
