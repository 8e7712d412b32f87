package inject

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestServiceGainsOnlyFailpointAndInject onboards a service the way
// docs/scenarios.md says: its go.mod, after `go mod tidy`, requires
// pingcap/failpoint and inject (and failpoint's one dependency) and keeps
// its own go directive, however new the main chaoskit module's is.
func TestServiceGainsOnlyFailpointAndInject(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	svc := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/svc\n\ngo 1.22\n\nreplace github.com/chaoskit/chaoskit/inject => " + here + "\n",
		"store/store.go": `package store

import (
	"context"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/pingcap/failpoint"
)

// Get reads nothing; its marker is what the test is about.
func Get() error {
	failpoint.Inject("get", func(v failpoint.Value) {
		if err := inject.Fire(context.Background(), v); err != nil {
			failpoint.Return(err)
		}
	})
	return nil
}
`,
	}
	for name, text := range files {
		p := filepath.Join(svc, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"mod", "edit", "-require=github.com/chaoskit/chaoskit/inject@v0.0.0", "-require=github.com/pingcap/failpoint@v0.0.0-20240528011301-b51a646c7c86"},
		{"mod", "tidy"},
		{"build", "./..."},
	} {
		cmd := exec.Command(goBin, args...)
		cmd.Dir = svc
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	data, err := os.ReadFile(filepath.Join(svc, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var required []string
	goLine := ""
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		switch {
		case strings.HasPrefix(line, "go "):
			goLine = line
		case len(f) >= 2 && strings.Contains(f[0], "/") && !strings.HasPrefix(line, "replace") && !strings.HasPrefix(line, "module"):
			required = append(required, f[0])
		}
	}
	sort.Strings(required)
	want := "github.com/chaoskit/chaoskit/inject github.com/pingcap/errors github.com/pingcap/failpoint"
	if got := strings.Join(required, " "); got != want {
		t.Errorf("the service requires %s\nwant only %s\ngo.mod:\n%s", got, want, data)
	}
	if goLine != "go 1.22" {
		t.Errorf("go directive %q, want the service's own go 1.22", goLine)
	}
}
