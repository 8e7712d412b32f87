package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// requireServers skips a test whose scenario starts PostgreSQL or Redis
// when they are not installed, and fails it under CI, which installs them.
func requireServers(t *testing.T) {
	t.Helper()
	var missing []string
	if pg, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(pg) == 0 {
		missing = append(missing, "postgresql")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		missing = append(missing, "redis-server")
	}
	if len(missing) == 0 {
		return
	}
	msg := "needs " + strings.Join(missing, " and ") + " (apt-get install " + strings.Join(missing, " ") + ")"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "; CI must have them")
	}
	t.Skip(msg)
}

// depsScenario is one row of the table of docs/scenarios.md listing the
// scenarios on real dependencies, with the contracts its broken variant
// must fail.
type depsScenario struct {
	name, flag string
	// fails are the contracts --var broken=true must fail.
	fails []string
}

var depsBroken = map[string][]string{
	"postgres-latency-serves-cache":   {"reads are served from the cache while the database is slow"},
	"postgres-reset-orders-fail-fast": {"orders fail fast with Retry-After while connections are reset", "no acknowledged order is lost"},
	"redis-down-limits-in-memory":     {"searches are limited to the configured rate, within 15%, while Redis is away"},
	"demo-killed-no-order-lost":       {"no acknowledged order is lost across the crash and restart"},
}

// readDepsScenarios parses the deps table of docs/scenarios.md and checks
// that it names every file of scenarios/deps.
func readDepsScenarios(t *testing.T) []depsScenario {
	t.Helper()
	root := repoRoot(t)
	f, err := os.Open(filepath.Join(root, "docs", "scenarios.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []depsScenario
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "<!-- deps-scenarios:start -->":
			in = true
		case line == "<!-- deps-scenarios:end -->":
			in = false
		case in && strings.HasPrefix(line, "| `"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			trim := func(s string) string { return strings.Trim(strings.TrimSpace(s), "`") }
			name := trim(cells[0])
			if depsBroken[name] == nil {
				t.Fatalf("docs/scenarios.md lists %s, which this test does not know the broken contracts of", name)
			}
			rows = append(rows, depsScenario{name: name, flag: trim(cells[2]), fails: depsBroken[name]})
		}
	}
	files, _ := filepath.Glob(filepath.Join(root, "scenarios", "deps", "*.yaml"))
	if len(files) != len(rows) || len(rows) != len(depsBroken) {
		t.Fatalf("scenarios/deps holds %d scenarios, docs/scenarios.md lists %d, this test knows %d", len(files), len(rows), len(depsBroken))
	}
	return rows
}

// TestDepsScenariosAndTheirBrokenVariants runs every scenario of
// scenarios/deps against the correct demo, where every contract must pass,
// and against its broken variant, where the contracts it breaks must
// fail. Each run starts its own Postgres or Redis on free ports, so the
// runs go side by side as far as -parallel allows, but only with each
// other: the test itself is not parallel, so the package's parallel tests
// (the bundled suite's latency and CPU contracts) wait until these are
// done. The other tests here that start Postgres are not parallel either.
func TestDepsScenariosAndTheirBrokenVariants(t *testing.T) {
	bin := chaoskitBin(t)
	requireServers(t)
	for _, row := range readDepsScenarios(t) {
		file := filepath.Join(repoRoot(t), "scenarios", "deps", row.name+".yaml")
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), `"`+row.flag+`=${broken}"`) {
			t.Fatalf("%s does not pass %s=${broken} to the demo, as docs/scenarios.md says", row.name, row.flag)
		}
		for _, broken := range []bool{false, true} {
			variant := "correct"
			if broken {
				variant = "broken"
			}
			t.Run(row.name+"/"+variant, func(t *testing.T) {
				t.Parallel()
				out := t.TempDir()
				args := []string{"run", file, "--report-dir", out}
				if broken {
					args = append(args, "--var", "broken=true")
				}
				res := runBin(t, bin, args...)
				tl := readTimeline(t, filepath.Join(out, row.name))
				assertNoOrphans(t, tl)
				rep := readReport(t, out)
				failed := map[string]bool{}
				for _, c := range rep.Scenarios[0].Contracts {
					if c.Verdict != "pass" {
						failed[c.Name] = true
						t.Logf("%s: %s (measured %s, expected %s)", c.Verdict, c.Name, c.Measured, c.Expected)
					}
				}
				if !broken {
					if res.code != 0 || len(failed) > 0 {
						t.Fatalf("exit %d, want 0: every contract passes\n%s\n%s", res.code, res.stdout, res.stderr)
					}
					return
				}
				if res.code != 1 {
					t.Fatalf("exit %d, want 1\n%s\n%s", res.code, res.stdout, res.stderr)
				}
				for _, c := range row.fails {
					if !failed[c] {
						t.Errorf("contract %q passed against %s", c, row.flag)
					}
				}
			})
		}
	}
}

// docsScenario returns the YAML block of docs/scenarios.md that holds
// "name: NAME".
func docsScenario(t *testing.T, name string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "scenarios.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		if strings.Contains(m[1], "\nname: "+name+"\n") || strings.HasPrefix(m[1], "name: "+name+"\n") {
			return m[1]
		}
	}
	t.Fatalf("docs/scenarios.md has no scenario named %s", name)
	return ""
}

// TestDocsScenarioPutsLatencyOnAMarkerFreeService is issue 18's acceptance:
// the scenario docs/scenarios.md gives, taken from the page as it is, puts
// 300ms of latency on the Postgres connection of testdata/pgservice (pgx,
// one endpoint, no failpoint markers, a plain go build), and its contract
// sees it. The same scenario without the fault fails that contract, so it
// is the fault the contract sees.
func TestDocsScenarioPutsLatencyOnAMarkerFreeService(t *testing.T) {
	bin := chaoskitBin(t)
	requireServers(t)
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "pgservice"), "./testdata/pgservice")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/pgservice: %v\n%s", err, out)
	}
	text := docsScenario(t, "visits-slow-database")
	withFault := writeFile(t, dir, "visits.yaml", text)
	fault := regexp.MustCompile(`(?m)^    faults:\n(      .*\n)+`)
	if !fault.MatchString(text) {
		t.Fatal("the docs scenario has no faults list to remove")
	}
	without := writeFile(t, dir, "visits-no-fault.yaml", fault.ReplaceAllString(text, ""))

	out := filepath.Join(dir, "out")
	res := runBin(t, bin, "run", withFault, "--report-dir", out)
	if res.code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	runDir := filepath.Join(out, "visits-slow-database")
	tl := readTimeline(t, runDir)
	assertNoOrphans(t, tl)
	var on *timeline.Event
	for i, e := range tl.Events {
		if e.Kind == timeline.FaultOn {
			on = &tl.Events[i]
		}
	}
	if on == nil || on.Point != "proxy/pg" || on.Term != "proxy pg latency 300ms" || on.Phase != "slow-database" {
		t.Errorf("fault_on event %+v, want proxy/pg latency 300ms in slow-database", on)
	}
	for _, c := range readReport(t, out).Scenarios[0].Contracts {
		t.Logf("%s: %s (measured %s)", c.Verdict, c.Name, c.Measured)
	}
	if !strings.Contains(res.stdout, "proxy pg latency 300ms") {
		t.Errorf("the run's log does not name the fault:\n%s", res.stdout)
	}

	out2 := filepath.Join(dir, "out-no-fault")
	res = runBin(t, bin, "run", without, "--report-dir", out2)
	if res.code != 1 {
		t.Fatalf("without the fault: exit %d, want 1\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	for _, c := range readReport(t, out2).Scenarios[0].Contracts {
		if c.Name == "every read waits for the slow database" && c.Verdict != "fail" {
			t.Errorf("without the fault, %q is %s (measured %s): the contract does not see the fault", c.Name, c.Verdict, c.Measured)
		}
	}
}

// badDependency is a scenario whose one dependency is %s, against a demo
// that would use it.
const badDependency = `name: bad-dep
target:
  demo:
    args: []
dependencies:
  - name: cache
%s
load:
  rate: 10/s
  requests: [{path: /healthz}]
phases:
  - name: p
    duration: 1s
`

// TestDependencyThatDoesNotComeUpExits3 checks that a dependency that
// cannot start, exits before it is ready, or is never ready stops the run
// with exit 3, one line naming it with the last lines of its output, and
// no process left behind.
func TestDependencyThatDoesNotComeUpExits3(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	tests := []struct {
		name, dep string
		want      []string
	}{
		{"exits", `    command:
      argv: [sh, -c, "echo reading config; echo 'FATAL: bad directive on line 3' >&2; exit 1"]
    ready: {tcp: "127.0.0.1:{port:cache}"}`,
			[]string{"dependency cache exited before it was ready (exit status 1)", "reading config", "FATAL: bad directive on line 3"}},
		{"never ready", `    command:
      argv: [sh, -c, "echo waiting for nothing; exec sleep 30"]
    ready: {command: [sh, -c, "echo not yet >&2; exit 1"], timeout: 700ms}`,
			[]string{"dependency cache was not ready within 700ms", "not yet", "waiting for nothing"}},
		{"missing program", `    command:
      argv: [no-such-server-anywhere, --port, "{port:cache}"]`,
			[]string{"cannot start dependency cache: no-such-server-anywhere is not in PATH"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			res := runBin(t, bin, "run", writeFile(t, dir, "s.yaml", fmt.Sprintf(badDependency, tt.dep)), "--report-dir", out)
			if res.code != 3 {
				t.Fatalf("exit %d, want 3\n%s\n%s", res.code, res.stdout, res.stderr)
			}
			oneLineCause(t, res.stderr, tt.want...)
			assertNoOrphans(t, readTimeline(t, filepath.Join(out, "bad-dep")))
		})
	}
}

func TestNonLoopbackUpstreamIsRefusedAtValidate(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	dir := t.TempDir()
	file := writeFile(t, dir, "s.yaml", `name: off-box
target:
  demo:
    args: [--postgres, "postgres://postgres@127.0.0.1:{port:pg}/postgres"]
proxies:
  - name: pg
    upstream: "db.internal.example:5432"
load:
  rate: 10/s
  requests: [{path: /healthz}]
phases:
  - name: p
    duration: 1s
    faults: [{proxy: pg, action: down}]
`)
	for _, args := range [][]string{{"validate", file}, {"run", file, "--report-dir", filepath.Join(dir, "out")}} {
		cmd := args[0]
		res := runBin(t, bin, args...)
		if res.code != 2 {
			t.Fatalf("%s: exit %d, want 2\n%s\n%s", cmd, res.code, res.stdout, res.stderr)
		}
		if want := "s.yaml:7:15: proxy \"pg\": \"db.internal.example:5432\" is not a loopback address"; !strings.Contains(res.stdout+res.stderr, want) {
			t.Errorf("%s: output lacks %q:\n%s\n%s", cmd, want, res.stdout, res.stderr)
		}
	}
}

// TestKill9WithDependenciesAndAPausedTargetLeavesNoOrphan kills chaoskit
// with SIGKILL while Postgres (a dependency, running as another user under
// root) serves the demo through a proxy and the demo is paused: nothing
// chaoskit started outlives it.
func TestKill9WithDependenciesAndAPausedTargetLeavesNoOrphan(t *testing.T) {
	bin := chaoskitBin(t)
	requireServers(t)
	dir := t.TempDir()
	file := writeFile(t, dir, "s.yaml", `name: kill9-deps
target:
  demo:
    args: [--postgres, "postgres://postgres:{password:db}@127.0.0.1:{port:pg}/postgres?sslmode=disable"]
dependencies:
  - name: db
    postgres: {}
proxies:
  - name: pg
    upstream: "127.0.0.1:{port:db}"
load:
  rate: 20/s
  requests:
    - path: /products/{1..50}
phases:
  - name: p
    duration: 20s
    faults:
      - {proxy: pg, action: latency, latency: 50ms}
      - {process: target, action: pause, after: 200ms}
`)
	out := filepath.Join(dir, "out")
	cmd, buf := startChaoskit(t, bin, file, out, "kill9-deps", func(e timeline.Event) bool {
		return e.Kind == timeline.Process && e.Message == "paused"
	})
	below := descendantsOf(cmd.Process.Pid)
	cmd.Process.Kill()
	cmd.Wait()
	// The supervisors, postgres and its backends, and the demo.
	if len(below) < 5 {
		t.Errorf("chaoskit had %d processes below it (%v), want at least 5\n%s", len(below), below, buf)
	}
	for _, pid := range below {
		deadline := time.Now().Add(5 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(pid) {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("process %d (%s) outlived chaoskit's kill -9", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
	assertNoOrphans(t, readTimeline(t, filepath.Join(out, "kill9-deps")))
	// The run directory is in this test's 0700 temporary directory, out of
	// the postgres user's reach, so the data was kept in the system's
	// temporary directory, which a killed chaoskit cannot remove: the next
	// run with a dependency does.
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("chaoskit-dep-%d-db-*", cmd.Process.Pid)))
	if len(left) != 1 {
		t.Errorf("the killed run's data outside the run directory: %v, want one directory", left)
	}
	res := runBin(t, bin, "run", writeFile(t, dir, "next.yaml", fmt.Sprintf(badDependency, `    command:
      argv: [sh, -c, "exit 1"]
    ready: {tcp: "127.0.0.1:{port:cache}"}`)), "--report-dir", filepath.Join(dir, "next"))
	if res.code != 3 {
		t.Fatalf("the next run: exit %d, want 3\n%s", res.code, res.stderr)
	}
	for _, d := range left {
		if _, err := os.Stat(d); err == nil {
			os.RemoveAll(d)
			t.Errorf("the next run did not remove %s, left by the killed one", d)
		}
	}
}
