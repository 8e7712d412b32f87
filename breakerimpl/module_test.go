package breakerimpl_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestServiceGainsAHandfulOfModules onboards a service the way
// docs/modules.md says: a go 1.22 module that imports circuitbreaker
// through a replace keeps a go line of at most 1.24 after `go mod tidy`,
// and its module graph (go list -m all) holds at most 10 modules, none of
// them chaoskit's CLI or an adapter's heavy dependency.
func TestServiceGainsAHandfulOfModules(t *testing.T) {
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
		"go.mod": "module example.com/svc\n\ngo 1.22\n\nreplace github.com/chaoskit/chaoskit/breakerimpl => " + here + "\n",
		"main.go": `package main

import (
	"fmt"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
)

func main() { fmt.Println(circuitbreaker.New(circuitbreaker.Settings{Name: "db"}).Name()) }
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(svc, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goBin, args...)
		cmd.Dir = svc
		// GOTOOLCHAIN=local: a go line above this toolchain's fails here
		// rather than downloading another.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
		}
		return string(out)
	}
	run("mod", "edit", "-require=github.com/chaoskit/chaoskit/breakerimpl@v0.0.0")
	run("mod", "tidy")
	run("build", "./...")
	goLine := strings.TrimSpace(run("list", "-m", "-f", "{{.GoVersion}}"))
	if minor(t, goLine) > 24 {
		t.Errorf("the service's go line became %s, want at most 1.24", goLine)
	}
	mods := strings.Fields(run("list", "-m", "-f", "{{.Path}}", "all"))
	if len(mods) > 10 {
		t.Errorf("the service's module graph has %d modules, want at most 10:\n%s", len(mods), strings.Join(mods, "\n"))
	}
	for _, m := range mods {
		for _, heavy := range []string{"github.com/chaoskit/chaoskit/breakerimpl/", "google.golang.org/grpc", "go.opentelemetry.io/", "github.com/prometheus/", "github.com/redis/", "modernc.org/", "github.com/jackc/pgx"} {
			if strings.HasPrefix(m, heavy) {
				t.Errorf("the service's module graph holds %s", m)
			}
		}
		if m == "github.com/chaoskit/chaoskit" {
			t.Errorf("the service's module graph holds chaoskit's CLI module")
		}
	}
	t.Logf("go %s, %d modules: %s", goLine, len(mods), strings.Join(mods, " "))
}

// minor returns the minor version of a go line ("1.24" → 24, "1.26.0" → 26).
func minor(t *testing.T, goLine string) int {
	f := strings.Split(goLine, ".")
	if len(f) < 2 || f[0] != "1" {
		t.Fatalf("go line %q", goLine)
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatalf("go line %q: %v", goLine, err)
	}
	return n
}
