package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/timeline"
)

// These tests run the real chaoskit binary, a plain go build (what go
// install makes: the demo's fault points are switches, live in any build),
// against the real demo service: real processes, real SQLite, real HTTP
// over loopback. `make test` passes the binary in CHAOSKIT_BIN (make build,
// a plain build too); otherwise it is built once here.

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func chaoskitBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test; runs without -short")
	}
	binOnce.Do(func() {
		if p := os.Getenv("CHAOSKIT_BIN"); p != "" {
			binPath = p
			return
		}
		root := repoRoot(t)
		binPath = filepath.Join(root, ".cache", "e2e", "chaoskit")
		build := exec.Command("go", "build", "-o", binPath, "./cmd/chaoskit")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/chaoskit: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

var (
	stateOnce    sync.Once
	testStateDir string
)

// testEnv is the environment chaoskit runs in under test: no colours, the
// index of unfinished runs kept out of the user's cache directory, and not
// a GitHub Actions step even on one (the broken variants' failures are no
// annotations of this job's; the tests that want one say so).
func testEnv(t *testing.T) []string {
	t.Helper()
	stateOnce.Do(func() {
		var err error
		testStateDir, err = os.MkdirTemp("", "chaoskit-state-")
		if err != nil {
			t.Fatal(err)
		}
	})
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GITHUB_") && !strings.HasPrefix(kv, "GITLAB_") {
			env = append(env, kv)
		}
	}
	// COLUMNS=0: tables and lines whole, so that the tests find what they
	// look for on one line; the tests of fitting set COLUMNS themselves.
	return append(env, "NO_COLOR=1", "CHAOSKIT_STATE_DIR="+testStateDir, "COLUMNS=0")
}

type result struct {
	code   int
	stdout string
	stderr string
}

func runBin(t *testing.T, bin string, args ...string) result {
	t.Helper()
	return runBinEnv(t, nil, bin, args...)
}

// runBinEnv is runBin with env added to the environment.
func runBinEnv(t *testing.T, env []string, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(testEnv(t), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return result{code, out.String(), errb.String()}
}

type reportJSON struct {
	Verdict   string `json:"verdict"`
	Scenarios []struct {
		Name      string `json:"name"`
		File      string `json:"file"`
		Verdict   string `json:"verdict"`
		Contracts []struct {
			Name     string `json:"name"`
			Verdict  string `json:"verdict"`
			Phase    string `json:"phase"`
			Measured string `json:"measured"`
			Expected string `json:"expected"`
		} `json:"contracts"`
	} `json:"scenarios"`
}

func readReport(t *testing.T, dir string) reportJSON {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r reportJSON
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

const scenarioFile = "../../scenarios/db-timeout-serves-cache.yaml"

func TestWalkingSkeletonScenarioPasses(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	out := t.TempDir()
	res := runBin(t, bin, "run", scenarioFile, "--report-dir", out)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	rep := readReport(t, out)
	if rep.Verdict != "pass" || len(rep.Scenarios) != 1 || rep.Scenarios[0].Contracts[0].Verdict != "pass" {
		t.Fatalf("report = %+v", rep)
	}
	c := rep.Scenarios[0].Contracts[0]
	if c.Name != "on DB timeout return cached data" || c.Phase != "db-timeout" || c.Measured == "" || c.Expected == "" {
		t.Errorf("contract = %+v", c)
	}
	if !strings.Contains(res.stdout, "on DB timeout return cached data") || !strings.Contains(res.stdout, "PASS") {
		t.Errorf("table does not show the passing contract:\n%s", res.stdout)
	}
	// The fault really fired, and the cache really served.
	tl, err := timeline.ReadFile(filepath.Join(out, "db-timeout-serves-cache", timeline.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var hits int64 = -1
	for _, e := range tl.Events {
		if e.Kind == timeline.FaultHits {
			hits = *e.Hits
		}
	}
	if hits <= 0 {
		t.Errorf("fault hits = %d, want > 0", hits)
	}
}

func TestNoFallbackVariantFails(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	src, err := os.ReadFile(scenarioFile)
	if err != nil {
		t.Fatal(err)
	}
	const args = `args: ["--db-timeout=${db_timeout}"]`
	broken := strings.Replace(string(src), args, `args: ["--db-timeout=${db_timeout}", "--no-fallback"]`, 1)
	if broken == string(src) {
		t.Fatalf("scenario has no `%s` to edit", args)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(file, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	res := runBin(t, bin, "run", file, "--report-dir", out)
	if res.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	rep := readReport(t, out)
	c := rep.Scenarios[0].Contracts[0]
	if rep.Verdict != "fail" || c.Verdict != "fail" || c.Name != "on DB timeout return cached data" || !strings.Contains(c.Measured, "%") {
		t.Fatalf("report = %+v", rep)
	}
	if !strings.Contains(res.stdout, "on DB timeout return cached data") || !strings.Contains(res.stdout, c.Measured) || !strings.Contains(res.stdout, "FAIL") {
		t.Errorf("table does not name the failing contract with %q:\n%s", c.Measured, res.stdout)
	}
}

func TestValidateTypoExits2WithPosition(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	src, _ := os.ReadFile(scenarioFile)
	file := filepath.Join(t.TempDir(), "typo.yaml")
	os.WriteFile(file, []byte(strings.Replace(string(src), "    duration: 4s", "    durattion: 4s", 1)), 0o644)
	res := runBin(t, bin, "validate", file)
	want := file + fmt.Sprintf(`:%d:5: unknown field "durattion" (did you mean "duration"?)`, lineOf(t, string(src), "    duration: 4s"))
	if res.code != 2 || !strings.Contains(res.stderr, want) {
		t.Fatalf("exit %d, stderr %q; want 2 and %q", res.code, res.stderr, want)
	}
	if res := runBin(t, bin, "validate", scenarioFile); res.code != 0 {
		t.Errorf("valid scenario: exit %d %s", res.code, res.stderr)
	}
	if res := runBin(t, bin, "run", "--no-such-flag"); res.code != 2 {
		t.Errorf("bad flag: exit %d", res.code)
	}
}

// A service whose failpoint markers a plain go build left inert is refused
// (exit 3, with the way to build it), never passed: the fixture, built with
// go build instead of chaoskit build.
func TestPlainBuildIsRefused(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	src := filepath.Join(repoRoot(t), "testdata", "fixture")
	plain := filepath.Join(t.TempDir(), "fixture-plain")
	cmd := exec.Command("go", "build", "-o", plain, "./cmd/fixture")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("plain build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	file := writeFile(t, dir, "fixture.yaml", fmt.Sprintf(fixtureScenario, plain, src))
	res := runBin(t, bin, "run", file, "--report-dir", t.TempDir())
	if res.code != 3 || !strings.Contains(res.stderr, "built without failpoint rewriting") || !strings.Contains(res.stderr, "chaoskit build") {
		t.Fatalf("exit %d, stderr %q; want 3 and a build hint", res.code, res.stderr)
	}
}

// startRun starts `chaoskit run` and returns once the db-timeout fault is
// on, as the run directory's timeline records it.
func startRun(t *testing.T, bin, scenario, out string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd, buf := startChaoskit(t, bin, scenario, out, "db-timeout-serves-cache", func(e timeline.Event) bool { return e.Kind == timeline.FaultOn })
	time.Sleep(300 * time.Millisecond) // well inside the 4 s phase
	return cmd, buf
}

func interrupt(t *testing.T, cmd *exec.Cmd, buf *bytes.Buffer) {
	t.Helper()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("chaoskit did not exit after SIGINT\n%s", buf.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d after SIGINT, want 130\n%s", code, buf.String())
	}
}

func TestInterruptLeavesNoFaultEnabled(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	// The test runs the target itself, so it can read the control endpoint
	// after chaoskit has gone.
	ctrl := freeAddr(t)
	demo := exec.Command(bin, "demo", "serve", "--listen", "127.0.0.1:0")
	demo.Env = append(os.Environ(), "GO_FAILPOINTS_HTTP="+ctrl)
	stdout, _ := demo.StdoutPipe()
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { demo.Process.Kill(); demo.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, stdout)
	addr := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))

	src, _ := os.ReadFile(scenarioFile)
	sc := strings.Replace(string(src), "  demo:\n    args: [\"--db-timeout=${db_timeout}\"]", fmt.Sprintf("  url: http://%s\n  failpoints: http://%s\n  points: [github.com/chaoskit/chaoskit/demo/store/productQuery]", addr, ctrl), 1)
	if sc == string(src) {
		t.Fatal("the scenario's demo target was not replaced by the test's own")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	os.WriteFile(file, []byte(sc), 0o644)

	cmd, buf := startRun(t, bin, file, filepath.Join(dir, "out"))
	c := inject.NewHTTPController(ctrl)
	if act, err := c.Active(context.Background()); err != nil || len(act) != 1 {
		t.Fatalf("during the fault phase, active faults = %v, %v; want the timeout fault", act, err)
	}
	interrupt(t, cmd, buf)
	act, err := c.Active(context.Background())
	if err != nil || len(act) != 0 {
		t.Fatalf("after SIGINT, active faults = %v, %v; want none", act, err)
	}
	// The service is healthy again: reads come from the database.
	resp, err := http.Get("http://" + addr + "/products/1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("after rollback: %s", resp.Status)
	}
}

func TestInterruptStopsTheChild(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	out := t.TempDir()
	cmd, buf := startRun(t, bin, scenarioFile, out)
	tl, err := timeline.ReadFile(filepath.Join(out, "db-timeout-serves-cache", timeline.FileName))
	if err != nil {
		t.Fatal(err)
	}
	pid := 0
	for _, e := range tl.Events {
		if e.Kind == timeline.Process && e.Message == "started" {
			pid = int(e.Data["pid"].(float64))
		}
	}
	if pid == 0 || syscall.Kill(pid, 0) != nil {
		t.Fatalf("child pid %d not running during the run", pid)
	}
	interrupt(t, cmd, buf)
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("child %d still exists after SIGINT (kill 0: %v)", pid, err)
	}
	tl, err = timeline.ReadFile(filepath.Join(out, "db-timeout-serves-cache", timeline.FileName))
	if err != nil || !tl.Complete {
		t.Fatalf("timeline after SIGINT: complete=%v err=%v", tl != nil && tl.Complete, err)
	}
	var on, off int
	for _, e := range tl.Events {
		switch e.Kind {
		case timeline.FaultOn:
			on++
		case timeline.FaultOff:
			off++
		}
	}
	if on != 1 || off != 1 {
		t.Errorf("fault on/off events = %d/%d, want 1/1", on, off)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
