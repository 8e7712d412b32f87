package trials

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chaoskit/chaoskit/fuzz"
	"github.com/chaoskit/chaoskit/plan"
)

const space = `name: space
target:
  url: http://127.0.0.1:8080
  failpoints: http://127.0.0.1:7070
load:
  rate: 100/s
  requests:
    - path: /items/1
fuzz:
  warmup: 500ms
  recovery: 1s
  phases: 1..2
  duration: 200ms..1s
  max_faults: 1
  faults:
    - point: store/query
      actions: [error]
contracts:
  - name: no errors
    expect: [status < 500 for == 100%]
`

// TestAPlantedTrialLinkIsNotWrittenThrough replaces a kept trial file
// with a link to a victim: writing the trial again replaces the link and
// leaves the victim as it was.
func TestAPlantedTrialLinkIsNotWrittenThrough(t *testing.T) {
	base, err := plan.Parse("space.yaml", []byte(space), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir, victim := filepath.Join(root, "trials"), filepath.Join(root, "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(dir, 0o755)
	if err := os.Symlink(victim, filepath.Join(dir, "trial-001.yaml")); err != nil {
		t.Fatal(err)
	}
	s := fuzz.Decode(base.Fuzz, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	if _, err := Write(base, s, "trial-001", dir, plan.Options{}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "precious" {
		t.Errorf("the victim of the planted link was overwritten: %.80q", data)
	}
	if st, err := os.Lstat(filepath.Join(dir, "trial-001.yaml")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("trial-001.yaml is not a regular file: %v, %v", st, err)
	}
}
