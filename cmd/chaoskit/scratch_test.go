package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAKilledDemoLeavesNothingBehind: the demo, on its default SQLite
// database in a temporary directory, is killed with SIGKILL mid-run and
// started again, reading a policy file a setup program wrote into the
// run's temporary directory ({tmpdir}). The limit that file sets holds,
// and once the run is over chaoskit's own temporary directory holds
// nothing: the killed demo's database went with the run's directory.
func TestAKilledDemoLeavesNothingBehind(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, dir, "killed.yaml", `name: killed
setup:
  - name: policy file
    run: [sh, -c, "printf 'limiters:\\n  search:\\n    rate: 20\\n    burst: 2\\n' > \"$TMPDIR/policies.yaml\""]
target:
  demo:
    args: [--policies, "{tmpdir}/policies.yaml"]
load:
  rate: 60/s
  timeout: 1s
  requests: [{path: "/search?q=item"}]
phases:
  - name: crash
    duration: 1500ms
    faults:
      - process: target
        action: kill
        after: 300ms
        for: 200ms
  - name: after
    duration: 1500ms
contracts:
  - name: the file's limit holds once the demo is back
    phase: after
    settle: 300ms
    expect: [status 200 <= 50%]
`)
	res := runBinEnv(t, []string{"TMPDIR=" + tmp}, bin, "run", file, "--report-dir", filepath.Join(dir, "out"))
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	tl, err := os.ReadFile(filepath.Join(dir, "out", "killed", "timeline.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tl), `"message":"killed"`) {
		t.Fatalf("the timeline records no kill of the demo:\n%s", tl)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left in chaoskit's temporary directory: %s", e.Name())
	}
}
