package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/timeline"
)

// These tests run the real chaoskit binary against a service outside the
// chaoskit module: testdata/fixture, its own module with its own failpoint
// markers, built by `chaoskit build` itself.

func TestMain(m *testing.M) {
	code := m.Run()
	if testStateDir != "" {
		os.RemoveAll(testStateDir)
	}
	os.Exit(code)
}

var (
	fixtureOnce sync.Once
	fixturePath string
	fixtureErr  error
)

const fixturePkg = "example.com/fixture/store"

// fixtureBin builds the fixture service with `chaoskit build`, once.
func fixtureBin(t *testing.T) string {
	t.Helper()
	bin := chaoskitBin(t)
	fixtureOnce.Do(func() {
		root := repoRoot(t)
		fixturePath = filepath.Join(root, ".cache", "e2e", "fixture")
		args := []string{"build", "-C", filepath.Join(root, "testdata", "fixture"), "-o", fixturePath,
			"--cache", filepath.Join(root, ".cache", "faultbuild"), "./cmd/fixture"}
		// make test passes the failpoint-toolexec it built from go.mod's
		// tool line; otherwise chaoskit installs the pinned one itself.
		if te := os.Getenv("CHAOSKIT_TOOLEXEC"); te != "" {
			args = append(args, "--toolexec", te)
		}
		cmd := exec.Command(bin, args...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			fixtureErr = fmt.Errorf("chaoskit build of the fixture: %v\n%s", err, out)
		} else if !strings.Contains(string(out), "markers rewritten") {
			fixtureErr = fmt.Errorf("chaoskit build said: %s", out)
		}
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return fixturePath
}

// fixtureScenario is a scenario against the fixture started by chaoskit.
// %[1]s is the fixture binary, %[2]s the fixture's source directory.
const fixtureScenario = `name: fixture-falls-back
vars:
  rate: 100/s
  broken: "false"
target:
  command:
    argv: [%[1]s, --listen, "127.0.0.1:{port}", "--no-fallback=${broken}"]
  url: http://127.0.0.1:{port}
  source: %[2]s
  state:
    path: /debug/chaoskit/state
    interval: 50ms
load:
  rate: ${rate}
  timeout: 1s
  requests:
    - path: /items/{1..20}
      tags: [read]
phases:
  - name: warmup
    duration: 1s
  - name: store-down
    duration: 2s
    faults:
      - point: itemQuery
        action: error
        after: 300ms
  - name: recovery
    duration: 1s
    load:
      pacer:
        steps:
          - {rate: 20/s, for: 500ms}
          - {rate: 100/s}
contracts:
  - name: store errors are served from the fallback
    phase: store-down
    settle: 500ms
    expect:
      - status == 200 for >= 99%%
      - header("X-Chaoskit-Source") == "fallback" for >= 99%%
`

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func fixtureScenarioFile(t *testing.T, dir string) string {
	t.Helper()
	return writeFile(t, dir, "fixture.yaml", fmt.Sprintf(fixtureScenario, fixtureBin(t), filepath.Join(repoRoot(t), "testdata", "fixture")))
}

func readTimeline(t *testing.T, runDir string) *timeline.Timeline {
	t.Helper()
	tl, err := timeline.ReadFile(filepath.Join(runDir, timeline.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// startedPIDs returns the target processes a run started.
func startedPIDs(tl *timeline.Timeline) []int {
	var pids []int
	for _, e := range tl.Events {
		if e.Kind == timeline.Process && e.Message == "started" {
			pids = append(pids, int(e.Data["pid"].(float64)))
		}
	}
	return pids
}

// alive says whether pid is a live process (a zombie waiting for a reaper
// other than chaoskit counts as gone).
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndex(s, ")")
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// assertNoOrphans fails if a target the run started outlived chaoskit.
func assertNoOrphans(t *testing.T, tl *timeline.Timeline) {
	t.Helper()
	for _, pid := range startedPIDs(tl) {
		deadline := time.Now().Add(2 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("target process %d outlived chaoskit", pid)
		}
	}
}

// oneLineCause checks that chaoskit's complaint is one line starting
// "chaoskit:" holding every want.
func oneLineCause(t *testing.T, stderr string, want ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "chaoskit: ") {
		t.Errorf("stderr does not end with a chaoskit: line:\n%s", stderr)
	}
	for _, w := range want {
		if !strings.Contains(last, w) {
			t.Errorf("cause %q lacks %q", last, w)
		}
	}
}

func TestExternalServiceRunsAndIsJudged(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	dir := t.TempDir()
	file := fixtureScenarioFile(t, dir)
	out := filepath.Join(dir, "out")
	res := runBin(t, bin, "run", file, "--report-dir", out)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	rep := readReport(t, out)
	if rep.Verdict != "pass" || rep.Scenarios[0].Contracts[0].Verdict != "pass" {
		t.Fatalf("report %+v", rep)
	}
	// One line per phase when not on a terminal, with its load.
	for _, want := range []string{"warmup ", "store-down ", "itemQuery=error (on +", "recovery ", "(steps 20/s→100/s)", "fault switches: 2"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, res.stdout)
		}
	}
	runDir := filepath.Join(out, "fixture-falls-back")
	for _, f := range []string{"scenario.yaml", "timeline.jsonl", "results.bin", "faults.json", "run.json", "target.stdout", "target.stderr"} {
		if _, err := os.Stat(filepath.Join(runDir, f)); err != nil {
			t.Errorf("run directory lacks %s", f)
		}
	}
	tl := readTimeline(t, runDir)
	var states, openStates, hits int
	var on, off *timeline.Event
	for i, e := range tl.Events {
		switch e.Kind {
		case timeline.State:
			states++
			if breakerStates(e.Data) == "open" {
				openStates++
			}
		case timeline.FaultHits:
			hits = int(*e.Hits)
		case timeline.FaultOn:
			on = &tl.Events[i]
		case timeline.FaultOff:
			off = &tl.Events[i]
		}
	}
	if states < 40 || openStates == 0 {
		t.Errorf("%d state samples, %d with the breaker open; want ~80 samples at 50ms, some open", states, openStates)
	}
	if hits < 100 || on == nil || off == nil || on.Point != fixturePkg+"/itemQuery" {
		t.Fatalf("hits %d, on %+v, off %+v", hits, on, off)
	}
	ph, _ := tl.Phase("store-down")
	if d := on.Time.Sub(ph.Start); d < 300*time.Millisecond || d > 400*time.Millisecond {
		t.Errorf("fault on %v into the phase, want just after 300ms", d)
	}
	if on.Ack <= 0 || on.Ack > time.Second || off.Ack <= 0 {
		t.Errorf("ack times on %v off %v", on.Ack, off.Ack)
	}
	for _, r := range tl.Requests {
		if len(r.Tags) != 1 || r.Tags[0] != "read" || r.Header(tagHeaderForTest) != "" {
			t.Fatalf("request %+v: want tag read and no tag header", r)
		}
	}
	assertNoOrphans(t, tl)

	// The real vegeta CLI, pinned in go.mod, reads the results file and
	// counts what the timeline and run.json count.
	cmd := exec.Command("go", "tool", "vegeta", "report", "-type=json", filepath.Join(runDir, "results.bin"))
	cmd.Dir = repoRoot(t)
	vout, err := cmd.Output()
	if err != nil {
		t.Fatalf("go tool vegeta report: %v", err)
	}
	var vrep struct {
		Requests    int            `json:"requests"`
		StatusCodes map[string]int `json:"status_codes"`
	}
	if err := json.Unmarshal(vout, &vrep); err != nil {
		t.Fatalf("vegeta report: %v\n%s", err, vout)
	}
	var sum struct {
		Requests int `json:"requests"`
	}
	data, _ := os.ReadFile(filepath.Join(runDir, "run.json"))
	json.Unmarshal(data, &sum)
	if vrep.Requests == 0 || vrep.Requests != len(tl.Requests) || vrep.Requests != sum.Requests || vrep.StatusCodes["200"] != vrep.Requests {
		t.Errorf("vegeta counts %d requests (%v), the timeline %d, run.json %d", vrep.Requests, vrep.StatusCodes, len(tl.Requests), sum.Requests)
	}

	// The broken variant is one --var away and fails its contract.
	res = runBin(t, bin, "run", file, "--report-dir", filepath.Join(dir, "broken"), "--var", "broken=true")
	if res.code != 1 {
		t.Fatalf("broken variant: exit %d, want 1\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	if rep := readReport(t, filepath.Join(dir, "broken")); rep.Scenarios[0].Contracts[0].Verdict != "fail" {
		t.Errorf("broken variant report %+v", rep)
	}
}

// tagHeaderForTest is the header the runner carries tags in; it must never
// reach the timeline.
const tagHeaderForTest = "X-Chaoskit-Tags"

func breakerStates(doc map[string]any) string {
	b, _ := doc["breakers"].(map[string]any)
	s, _ := b["store"].(map[string]any)
	v, _ := s["state"].(string)
	return v
}

func TestPointsAndMisspelledPoint(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	cmd := exec.Command(bin, "points", "./demo/...")
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("points: %v", err)
	}
	if !strings.Contains(string(out), "github.com/chaoskit/chaoskit/demo/store/productQuery") || !strings.Contains(string(out), "demo/store/store.go:") {
		t.Errorf("points output:\n%s", out)
	}
	// A misspelled point of the demo, and of an external service whose
	// source chaoskit scans.
	src, _ := os.ReadFile(scenarioFile)
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.yaml", strings.Replace(string(src), "point: store/productQuery", "point: store/productQuerry", 1))
	for _, args := range [][]string{{"validate", bad}, {"run", bad, "--report-dir", filepath.Join(dir, "out")}} {
		res := runBin(t, bin, args...)
		line := lineOf(t, string(src), "point: store/productQuery")
		want := bad + fmt.Sprintf(`:%d:16: unknown failpoint "store/productQuerry" (did you mean "store/productQuery"?)`, line)
		if res.code != 2 || !strings.Contains(res.stderr, want) || !strings.Contains(res.stderr, fmt.Sprintf("%d |       - point: store/productQuerry", line)) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant 2 and %s with the line", args[0], res.code, res.stderr, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("run made a report directory for an invalid scenario")
	}
	ext := strings.Replace(fmt.Sprintf(fixtureScenario, "/bin/true", filepath.Join(repoRoot(t), "testdata", "fixture")), "point: itemQuery", "point: itemQeury", 1)
	res := runBin(t, bin, "validate", writeFile(t, dir, "ext.yaml", ext))
	if res.code != 2 || !strings.Contains(res.stderr, `unknown failpoint "itemQeury" (did you mean "itemQuery"?)`) {
		t.Errorf("external: exit %d, stderr %s", res.code, res.stderr)
	}
}

// lineOf is the line of text on which s first appears, counted from 1,
// so that a test of positions follows the scenario it edits.
func lineOf(t *testing.T, text, s string) int {
	t.Helper()
	i := strings.Index(text, s)
	if i < 0 {
		t.Fatalf("%q is not in the scenario", s)
	}
	return strings.Count(text[:i], "\n") + 1
}

func TestBadInputExits2WithPositionAndHint(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	src, _ := os.ReadFile(scenarioFile)
	timeout := lineOf(t, string(src), "  timeout: 1s")
	point := lineOf(t, string(src), "point: store/productQuery")
	rate := lineOf(t, string(src), "  rate: 200/s")
	tests := []struct {
		name, from, to string
		want           []string
	}{
		{"malformed yaml", "  rate: 200/s", "  rate: [200/s", []string{fmt.Sprintf(":%d:3: ',' or ']' must be specified", timeout), fmt.Sprintf("%d |   timeout: 1s", timeout)}},
		{"unknown field", "  timeout: 1s", "  timout: 1s", []string{fmt.Sprintf(`:%d:3: unknown field "timout" (did you mean "timeout"?)`, timeout), fmt.Sprintf("%d |   timout: 1s", timeout), "  |   ^"}},
		{"unknown failpoint", "point: store/productQuery", "point: store/nosuch", []string{fmt.Sprintf(`:%d:16: unknown failpoint "store/nosuch" (the target's failpoints are `, point), "productQuery", fmt.Sprintf("%d |       - point: store/nosuch", point)}},
		{"bad var", "  rate: 200/s", "  rate: ${rate}", []string{fmt.Sprintf(`:%d:9: variable ${rate} has no value (declare it under vars: or pass --var rate=VALUE)`, rate)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Replace(string(src), tt.from, tt.to, 1)
			if text == string(src) {
				t.Fatal("edit not applied")
			}
			file := writeFile(t, t.TempDir(), "s.yaml", text)
			for _, args := range [][]string{{"validate", file}, {"run", file, "--report-dir", t.TempDir()}} {
				cmd := args[0]
				res := runBin(t, bin, args...)
				if res.code != 2 {
					t.Errorf("%s: exit %d, want 2\n%s", cmd, res.code, res.stderr)
				}
				for _, w := range tt.want {
					if !strings.Contains(res.stderr, w) {
						t.Errorf("%s: stderr lacks %q:\n%s", cmd, w, res.stderr)
					}
				}
				if !strings.HasPrefix(res.stderr, file+":") {
					t.Errorf("%s: stderr does not start with the file: %s", cmd, res.stderr)
				}
			}
		})
	}
	// Flags are input too.
	for _, args := range [][]string{{"run", scenarioFile, "--rate-scale", "0"}, {"run", scenarioFile, "--var", "novalue"}, {"run", scenarioFile, "--var", "nosuch=1"}, {"run", scenarioFile, "--only", "db-timeout-serves-cahce"}} {
		if res := runBin(t, bin, args...); res.code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, res.code, res.stderr)
		}
	}
	if res := runBin(t, bin, "run", scenarioFile, "--only", "db-timeout-serves-cahce"); !strings.Contains(res.stderr, `did you mean "db-timeout-serves-cache"?`) {
		t.Errorf("--only typo: %s", res.stderr)
	}
}

// serveFixture starts the fixture service as the test's own child, with a
// control endpoint, so the test can read its faults after chaoskit exits.
func serveFixture(t *testing.T, args ...string) (base, control string) {
	t.Helper()
	ctrl := freeAddr(t)
	cmd := exec.Command(fixtureBin(t), append([]string{"--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "GO_FAILPOINTS_HTTP="+ctrl)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, stdout)
	return "http://" + strings.TrimSpace(strings.TrimPrefix(line, "listening on ")), "http://" + ctrl
}

// urlScenario attacks an already running fixture at base, switching faults
// through control.
func urlScenario(base, control string, phase time.Duration, extraFaults ...string) string {
	sc := fmt.Sprintf(`name: running-fixture
target:
  url: %s
  failpoints: %s
load:
  rate: 50/s
  timeout: 1s
  requests:
    - path: /items/{1..5}
phases:
  - name: warmup
    duration: %[3]v
  - name: fault
    duration: %[3]v
    faults:
      - point: itemQuery
        action: error
  - name: recovery
    duration: %[3]v
contracts:
  - name: fallback
    phase: fault
    expect:
      - status == 200 for >= 99%%
`, base, control, phase)
	for _, f := range extraFaults {
		sc = strings.Replace(sc, "        action: error\n", "        action: error\n"+f, 1)
	}
	return sc
}

func activeFaults(t *testing.T, control string) map[string]string {
	t.Helper()
	act, err := inject.NewHTTPController(control).Active(context.Background())
	if err != nil {
		t.Fatalf("control endpoint: %v", err)
	}
	return act
}

// startChaoskit starts `chaoskit run` and returns once the run's timeline
// holds an event matching until.
func startChaoskit(t *testing.T, bin, scenario, out, runName string, until func(timeline.Event) bool) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	return startChaoskitEnv(t, nil, bin, scenario, out, runName, until)
}

// startChaoskitEnv is startChaoskit with env added to the environment.
func startChaoskitEnv(t *testing.T, env []string, bin, scenario, out, runName string, until func(timeline.Event) bool) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, "run", scenario, "--report-dir", out)
	cmd.Env = append(testEnv(t), env...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(out, runName, timeline.FileName)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if tl, err := timeline.ReadFile(path); err == nil {
			for _, e := range tl.Events {
				if until(e) {
					return cmd, &buf
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatalf("the run never got there\n%s", buf.String())
	return nil, nil
}

func waitExit(t *testing.T, cmd *exec.Cmd, buf *bytes.Buffer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("chaoskit did not exit\n%s", buf.String())
	}
	return cmd.ProcessState.ExitCode()
}

func phaseStarted(name string) func(timeline.Event) bool {
	return func(e timeline.Event) bool { return e.Kind == timeline.PhaseStart && e.Phase == name }
}

func TestSIGINTInEveryPhase(t *testing.T) {
	bin := chaoskitBin(t)
	fixtureBin(t)
	t.Parallel()
	// While the target starts: chaoskit started it and must stop it.
	t.Run("starting", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		sc := strings.Replace(fmt.Sprintf(fixtureScenario, fixtureBin(t), filepath.Join(repoRoot(t), "testdata", "fixture")),
			`"--no-fallback=${broken}"]`, `"--no-fallback=${broken}", --ready-delay, 10s]`, 1)
		file := writeFile(t, dir, "s.yaml", sc)
		out := filepath.Join(dir, "out")
		cmd, buf := startChaoskit(t, bin, file, out, "fixture-falls-back", func(e timeline.Event) bool { return e.Kind == timeline.Process && e.Message == "started" })
		cmd.Process.Signal(os.Interrupt)
		if code := waitExit(t, cmd, buf); code != 130 {
			t.Fatalf("exit %d, want 130\n%s", code, buf)
		}
		tl := readTimeline(t, filepath.Join(out, "fixture-falls-back"))
		if !tl.Complete {
			t.Error("timeline not closed")
		}
		assertNoOrphans(t, tl)
	})
	for _, phase := range []string{"warmup", "fault", "recovery"} {
		t.Run(phase, func(t *testing.T) {
			t.Parallel()
			base, control := serveFixture(t)
			dir := t.TempDir()
			file := writeFile(t, dir, "s.yaml", urlScenario(base, control, 3*time.Second))
			out := filepath.Join(dir, "out")
			cmd, buf := startChaoskit(t, bin, file, out, "running-fixture", phaseStarted(phase))
			if phase == "fault" {
				time.Sleep(200 * time.Millisecond)
				if act := activeFaults(t, control); len(act) != 1 {
					t.Fatalf("during the fault phase, active faults = %v", act)
				}
			}
			cmd.Process.Signal(os.Interrupt)
			start := time.Now()
			if code := waitExit(t, cmd, buf); code != 130 {
				t.Fatalf("exit %d, want 130\n%s", code, buf)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("chaoskit took %v to stop after SIGINT", took)
			}
			if act := activeFaults(t, control); len(act) != 0 {
				t.Errorf("after SIGINT, active faults = %v", act)
			}
			tl := readTimeline(t, filepath.Join(out, "running-fixture"))
			var on, off int
			for _, e := range tl.Events {
				switch e.Kind {
				case timeline.FaultOn:
					on++
				case timeline.FaultOff:
					off++
				}
			}
			if !tl.Complete || on != off || (phase == "fault" && on != 1) {
				t.Errorf("timeline complete=%v, fault on/off %d/%d", tl.Complete, on, off)
			}
		})
	}
}

func TestKill9LeavesNoOrphan(t *testing.T) {
	bin := chaoskitBin(t)
	fix := fixtureBin(t)
	t.Parallel()
	plain := fmt.Sprintf(fixtureScenario, fix, filepath.Join(repoRoot(t), "testdata", "fixture"))
	for _, tt := range []struct {
		name     string
		scenario string
		// processes is how many processes at least chaoskit has below it
		// at the kill: the target, and sh's child.
		processes int
	}{
		{"the target", plain, 1},
		// sh is the target; the service is its child, chaoskit's
		// grandchild, with a fault on when chaoskit dies.
		{"a target's child", strings.Replace(plain, `argv: [`+fix+`, --listen, "127.0.0.1:{port}", "--no-fallback=${broken}"]`,
			`argv: [sh, -c, "`+fix+` --listen 127.0.0.1:{port} --no-fallback=${broken}; echo done"]`, 1), 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.scenario == plain && tt.processes == 2 {
				t.Fatal("the sh -c edit was not applied")
			}
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			cmd, buf := startChaoskit(t, bin, writeFile(t, dir, "s.yaml", tt.scenario), out, "fixture-falls-back", func(e timeline.Event) bool { return e.Kind == timeline.FaultOn })
			below := descendantsOf(cmd.Process.Pid)
			cmd.Process.Kill()
			cmd.Wait()
			if len(below) < tt.processes {
				// Not fatal: the processes found are still checked, and
				// killed if they outlived chaoskit.
				t.Errorf("chaoskit had %d processes below it (%v), want %d\n%s", len(below), below, tt.processes, buf)
			}
			for _, pid := range below {
				deadline := time.Now().Add(3 * time.Second)
				for alive(pid) && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if alive(pid) {
					cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
					syscall.Kill(pid, syscall.SIGKILL)
					t.Errorf("process %d (%s) outlived chaoskit's kill -9", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
				}
			}
			assertNoOrphans(t, readTimeline(t, filepath.Join(out, "fixture-falls-back")))
		})
	}
}

// descendantsOf lists the processes below pid, from /proc.
func descendantsOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 {
			if ppid, err := strconv.Atoi(fields[1]); err == nil {
				children[ppid] = append(children[ppid], p)
			}
		}
	}
	var out []int
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

func TestKill9ThenRollback(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	base, control := serveFixture(t)
	dir := t.TempDir()
	file := writeFile(t, dir, "s.yaml", urlScenario(base, control, 2*time.Second))
	out := filepath.Join(dir, "out")
	faultOn := func(e timeline.Event) bool { return e.Kind == timeline.FaultOn }
	cmd, buf := startChaoskit(t, bin, file, out, "running-fixture", faultOn)
	cmd.Process.Kill()
	cmd.Wait()
	if act := activeFaults(t, control); len(act) != 1 {
		t.Fatalf("after kill -9, active faults = %v; want the fault left on\n%s", act, buf)
	}
	// chaoskit rollback accepts the report directory above the run's.
	res := runBin(t, bin, "rollback", out)
	if res.code != 0 || !strings.Contains(res.stdout, "1 fault(s) disabled") {
		t.Fatalf("rollback: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if act := activeFaults(t, control); len(act) != 0 {
		t.Fatalf("after rollback, active faults = %v", act)
	}

	// Killed again, the next run against the same endpoint rolls back by
	// itself before it starts, wherever it writes its report.
	cmd, buf = startChaoskit(t, bin, file, filepath.Join(dir, "out1"), "running-fixture", faultOn)
	cmd.Process.Kill()
	cmd.Wait()
	if act := activeFaults(t, control); len(act) != 1 {
		t.Fatalf("after the second kill -9, active faults = %v\n%s", act, buf)
	}
	out2 := filepath.Join(dir, "out2")
	cmd, buf = startChaoskit(t, bin, file, out2, "running-fixture", phaseStarted("warmup"))
	if act := activeFaults(t, control); len(act) != 0 {
		t.Errorf("the next run's warmup runs with faults on: %v\n%s", act, buf)
	}
	if code := waitExit(t, cmd, buf); code != 0 {
		t.Fatalf("next run: exit %d\n%s", code, buf)
	}
	if !strings.Contains(buf.String(), "rolled back 1 fault(s) a killed run") {
		t.Errorf("the next run did not say it rolled back:\n%s", buf)
	}
}

// controlProxy stands between chaoskit and the fixture's real control
// endpoint; it answers 400, as the endpoint does a term it cannot parse,
// to the PUTs refuse picks.
func controlProxy(t *testing.T, control string, refuse func(*http.Request) bool) (addr string, stop func()) {
	t.Helper()
	u, _ := url.Parse(control)
	rp := httputil.NewSingleHostReverseProxy(u)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse != nil && r.Method == http.MethodPut && refuse(r) {
			http.Error(w, "failed to set failpoint "+strings.TrimPrefix(r.URL.Path, "/"), http.StatusBadRequest)
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			srv.Close()
		})
	}
	t.Cleanup(stop)
	return "http://" + ln.Addr().String(), stop
}

func TestHarnessFaults(t *testing.T) {
	bin := chaoskitBin(t)
	fix := fixtureBin(t)
	t.Parallel()
	source := filepath.Join(repoRoot(t), "testdata", "fixture")
	commandScenario := func(argv, extra string) string {
		return fmt.Sprintf(`name: harness
target:
  command:
    argv: %s
  url: http://127.0.0.1:{port}
  source: %s
%s
load:
  rate: 20/s
  requests: [{path: /items/1}]
phases:
  - name: only
    duration: 1s
    faults:
      - point: itemQuery
        action: error
`, argv, source, extra)
	}
	type check struct {
		code  int
		cause []string
	}
	tests := []struct {
		name     string
		scenario func(t *testing.T) (text string, control string)
		during   func(t *testing.T, out string)
		want     check
		after    func(t *testing.T, runDir string)
	}{
		{"target binary missing", func(t *testing.T) (string, string) {
			return commandScenario(`[./no-such-server, --listen, "127.0.0.1:{port}"]`, ""), ""
		}, nil, check{3, []string{"no-such-server does not exist", "chaoskit build --output-file"}}, nil},
		{"target exits before ready", func(t *testing.T) (string, string) {
			return commandScenario(fmt.Sprintf(`[%s, --listen, "127.0.0.1:{port}", --exit-before-ready]`, fix), ""), ""
		}, nil, check{3, []string{"the target exited before it was ready", "exit status 1", "configuration error", "target.stderr"}}, nil},
		{"readiness timeout", func(t *testing.T) (string, string) {
			return commandScenario(fmt.Sprintf(`[%s, --listen, "127.0.0.1:{port}"]`, fix), "  ready: {path: /nope, timeout: 700ms}"), ""
		}, nil, check{3, []string{"not ready within 700ms", "404 Not Found, want 200", "check target.ready"}}, nil},
		{"port in use", func(t *testing.T) (string, string) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			addr := ln.Addr().String()
			return strings.Replace(commandScenario(fmt.Sprintf(`[%s, --listen, "%s"]`, fix, addr), ""), "http://127.0.0.1:{port}", "http://"+addr, 1), ""
		}, nil, check{3, []string{"is already in use by another process", "write {port}"}}, nil},
		{"control endpoint refuses a term", func(t *testing.T) (string, string) {
			// The endpoint takes the first fault and refuses the second:
			// the first must be rolled back.
			base, control := serveFixture(t)
			proxy, _ := controlProxy(t, control, func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/buildProbe") })
			return urlScenario(base, proxy, 500*time.Millisecond, "      - point: buildProbe\n        action: term\n        value: return(true)\n"), control
		}, nil, check{3, []string{"the control endpoint refused a fault", "400", "failed to set failpoint"}}, nil},
		{"control endpoint unreachable mid-run", func(t *testing.T) (string, string) {
			base, control := serveFixture(t)
			proxy, stop := controlProxy(t, control, nil)
			proxyStop = stop
			return urlScenario(base, proxy, 700*time.Millisecond), control
		}, func(t *testing.T, out string) {
			proxyStop()
		}, check{3, []string{"is unreachable", "target.failpoints"}}, nil},
		{"target crashes mid-run", func(t *testing.T) (string, string) {
			return strings.Replace(commandScenario(fmt.Sprintf(`[%s, --listen, "127.0.0.1:{port}"]`, fix), ""), "action: error", "action: panic", 1), ""
		}, nil, check{3, []string{"the target exited during phase only", "exit status 2", "allow_exit"}}, func(t *testing.T, runDir string) {
			// The crash stops the phase at once, not when its second is up.
			ph, ok := readTimeline(t, runDir).Phase("only")
			if !ok || ph.End.Sub(ph.Start) > 600*time.Millisecond {
				t.Errorf("phase ran %v after the target crashed", ph.End.Sub(ph.Start))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.during == nil {
				t.Parallel()
			}
			dir := t.TempDir()
			text, control := tt.scenario(t)
			file := writeFile(t, dir, "s.yaml", text)
			out := filepath.Join(dir, "out")
			start := time.Now()
			var res result
			if tt.during != nil {
				name := "running-fixture"
				cmd, buf := startChaoskit(t, bin, file, out, name, phaseStarted("warmup"))
				tt.during(t, out)
				code := waitExit(t, cmd, buf)
				res = result{code: code, stderr: buf.String()}
			} else {
				res = runBin(t, bin, "run", file, "--report-dir", out)
			}
			if res.code != tt.want.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", res.code, tt.want.code, res.stdout, res.stderr)
			}
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("took %v", took)
			}
			oneLineCause(t, res.stderr, tt.want.cause...)
			entries, _ := os.ReadDir(out)
			for _, e := range entries {
				if e.IsDir() {
					assertNoOrphans(t, readTimeline(t, filepath.Join(out, e.Name())))
				}
			}
			if control != "" {
				if act := activeFaults(t, control); len(act) != 0 {
					t.Errorf("faults left enabled: %v", act)
				}
			}
			if tt.after != nil {
				tt.after(t, filepath.Join(out, "harness"))
			}
		})
	}
}

// proxyStop stops the proxy of the unreachable-endpoint case.
var proxyStop func()

func TestKillEscalationAndAllowExit(t *testing.T) {
	bin := chaoskitBin(t)
	fix := fixtureBin(t)
	t.Parallel()
	dir := t.TempDir()
	sc := fmt.Sprintf(`name: stubborn
target:
  command:
    argv: [%s, --listen, "127.0.0.1:{port}", --ignore-term]
  url: http://127.0.0.1:{port}
  points: [%s/itemQuery]
  stop_grace: 300ms
  allow_exit: true
load:
  rate: 20/s
  requests: [{path: /items/1}]
phases:
  - name: crash
    duration: 1s
    faults:
      - {point: itemQuery, action: panic, count: 1}
  - name: after
    duration: 500ms
`, fix, fixturePkg)
	out := filepath.Join(dir, "out")
	res := runBin(t, bin, "run", writeFile(t, dir, "s.yaml", sc), "--report-dir", out)
	// No contracts: the run itself is inconclusive, but the crash it
	// allows is no infrastructure error.
	if res.code == 3 {
		t.Fatalf("allowed exit was an infrastructure error:\n%s", res.stderr)
	}
	tl := readTimeline(t, filepath.Join(out, "stubborn"))
	var exited bool
	for _, e := range tl.Events {
		exited = exited || (e.Kind == timeline.Process && e.Message == "exited")
	}
	if !exited {
		t.Errorf("no exited event")
	}
	// Without the crash, a target that ignores SIGTERM is killed after
	// stop_grace.
	sc = strings.Replace(sc, "      - {point: itemQuery, action: panic, count: 1}\n", "      - {point: itemQuery, action: error}\n", 1)
	res = runBin(t, bin, "run", writeFile(t, dir, "s.yaml", sc), "--report-dir", out)
	tl = readTimeline(t, filepath.Join(out, "stubborn"))
	var killed *timeline.Event
	for i, e := range tl.Events {
		if e.Kind == timeline.Process && e.Message == "killed" {
			killed = &tl.Events[i]
		}
	}
	if killed == nil {
		t.Fatalf("no killed event; exit %d\n%s", res.code, res.stderr)
	}
	assertNoOrphans(t, tl)
}

func TestSeveralScenariosOnlyKeepGoingRateScale(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	dir := t.TempDir()
	scDir := filepath.Join(dir, "scenarios")
	os.Mkdir(scDir, 0o755)
	good := fmt.Sprintf(fixtureScenario, fixtureBin(t), filepath.Join(repoRoot(t), "testdata", "fixture"))
	writeFile(t, scDir, "b-good.yaml", good)
	writeFile(t, scDir, "a-missing.yaml", strings.Replace(strings.Replace(good, "name: fixture-falls-back", "name: missing", 1), fixtureBin(t), "./no-such-binary", 1))

	res := runBin(t, bin, "run", scDir, "--report-dir", filepath.Join(dir, "stop"))
	if rep := readReport(t, filepath.Join(dir, "stop")); res.code != 3 || len(rep.Scenarios) != 1 {
		t.Errorf("without --keep-going: exit %d, %d scenarios; want 3 and a stop after the first", res.code, len(rep.Scenarios))
	}
	res = runBin(t, bin, "run", scDir, "--report-dir", filepath.Join(dir, "all"), "--keep-going")
	rep := readReport(t, filepath.Join(dir, "all"))
	if res.code != 3 || len(rep.Scenarios) != 2 || rep.Scenarios[1].Verdict != "pass" {
		t.Errorf("--keep-going: exit %d, report %+v; want 3 with the second scenario passing", res.code, rep)
	}
	res = runBin(t, bin, "run", scDir, "--report-dir", filepath.Join(dir, "only"), "--only", "fixture-falls-back", "--rate-scale", "0.5")
	if res.code != 0 {
		t.Fatalf("--only: exit %d\n%s", res.code, res.stderr)
	}
	var sum struct {
		Phases []struct {
			Load string `json:"load"`
		} `json:"phases"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "only", "fixture-falls-back", "run.json"))
	json.Unmarshal(data, &sum)
	if len(sum.Phases) != 3 || sum.Phases[0].Load != "50/s" || sum.Phases[2].Load != "steps 10/s→50/s" {
		t.Errorf("--rate-scale 0.5 ran %+v", sum.Phases)
	}
	tl := readTimeline(t, filepath.Join(dir, "only", "fixture-falls-back"))
	if tl.Meta.RateScale != 0.5 || tl.Meta.Vars["rate"] != "100/s" {
		t.Errorf("meta %+v", tl.Meta)
	}
}

// hangingProxy stands between chaoskit and the fixture's control endpoint
// like controlProxy; once hang is called it takes every request and never
// answers, as an endpoint stuck in a deadlock does, until release.
func hangingProxy(t *testing.T, control string) (addr string, hang, release func()) {
	t.Helper()
	u, _ := url.Parse(control)
	rp := httputil.NewSingleHostReverseProxy(u)
	var hung atomic.Bool
	released := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hung.Load() {
			select {
			case <-released:
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	var once sync.Once
	release = func() {
		once.Do(func() {
			hung.Store(false)
			close(released)
		})
	}
	t.Cleanup(func() { release(); srv.Close() })
	return "http://" + ln.Addr().String(), func() { hung.Store(true) }, release
}

func TestInterruptWhileTheControlEndpointHangs(t *testing.T) {
	bin := chaoskitBin(t)
	fixtureBin(t)
	t.Parallel()
	for _, tt := range []struct {
		name string
		// twice sends a second SIGINT this long after the first.
		twice     time.Duration
		code      int
		within    time.Duration
		extraSays string
	}{
		// Rollback gets a few seconds, then chaoskit gives up on the
		// endpoint and says what may still be on: exit 3, since the
		// faults were not rolled back.
		{"one interrupt", 0, 3, 5 * time.Second, "once the endpoint answers"},
		{"a second interrupt", 300 * time.Millisecond, 130, 1500 * time.Millisecond, "received again: exiting now"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base, control := serveFixture(t)
			proxy, hang, release := hangingProxy(t, control)
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			runDir := filepath.Join(out, "running-fixture")
			cmd, buf := startChaoskit(t, bin, writeFile(t, dir, "s.yaml", urlScenario(base, proxy, 3*time.Second)), out, "running-fixture",
				func(e timeline.Event) bool { return e.Kind == timeline.FaultOn })
			hang()
			cmd.Process.Signal(os.Interrupt)
			start := time.Now()
			if tt.twice > 0 {
				time.Sleep(tt.twice)
				cmd.Process.Signal(os.Interrupt)
				start = time.Now()
			}
			code := waitExit(t, cmd, buf)
			took := time.Since(start)
			t.Logf("exit %d %v after the last interrupt", code, took)
			if code != tt.code || took > tt.within {
				t.Errorf("exit %d after %v, want %d within %v\n%s", code, took, tt.code, tt.within, buf)
			}
			// The fault really is still on: what chaoskit says is true.
			if act := activeFaults(t, control); len(act) != 1 {
				t.Errorf("active faults %v, want the one chaoskit could not switch off", act)
			}
			want := "chaoskit rollback " + runDir
			for _, s := range []string{"faults may still be on at " + proxy + ": " + fixturePkg + "/itemQuery", want, tt.extraSays} {
				if !strings.Contains(buf.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, buf)
				}
			}
			// The command it printed switches the fault off once the
			// endpoint answers again.
			release()
			res := runBin(t, bin, strings.Fields(strings.TrimPrefix(want, "chaoskit "))...)
			if res.code != 0 || !strings.Contains(res.stdout, "1 fault(s) disabled") {
				t.Errorf("%s: exit %d\n%s%s", want, res.code, res.stdout, res.stderr)
			}
			if act := activeFaults(t, control); len(act) != 0 {
				t.Errorf("after rollback, active faults = %v", act)
			}
		})
	}
}
