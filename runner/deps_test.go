package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// serveEnv makes the test binary, started by a test's run, an HTTP service
// on the address it holds (see TestMain); exitAfterEnv makes it exit 3
// after that long; slowRestartEnv names a directory where it notes each
// address it served, and a start on an address noted there (a restart)
// takes a second before it listens.
const (
	serveEnv       = "RUNNER_TEST_SERVE"
	exitAfterEnv   = "RUNNER_TEST_EXIT_AFTER"
	slowRestartEnv = "RUNNER_TEST_SLOW_RESTART"
)

func serveForTest(addr string) int {
	if dir := os.Getenv(slowRestartEnv); dir != "" {
		note := filepath.Join(dir, strings.ReplaceAll(addr, ":", "_"))
		if _, err := os.Stat(note); err == nil {
			time.Sleep(time.Second)
		} else if err := os.WriteFile(note, nil, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if from := os.Getenv(copyFromEnv); from != "" {
		data, err := os.ReadFile(from)
		if err == nil {
			err = os.WriteFile(os.Getenv(copyToEnv), data, 0o600)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if note := os.Getenv(tempNoteEnv); note != "" {
		// A temporary file the service never removes, as a killed one
		// leaves it; where it went is written to note.
		f, err := os.CreateTemp("", "left-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		f.Close()
		if err := os.WriteFile(note, []byte(f.Name()), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if d, err := time.ParseDuration(os.Getenv(exitAfterEnv)); err == nil {
		time.AfterFunc(d, func() {
			fmt.Println("giving up on purpose")
			os.Exit(3)
		})
	}
	fmt.Println("serving on", addr)
	_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }))
	return 0
}

// depsRunScenario runs the test binary as target and dependency, with a
// proxy between them; %s are the phase's faults and the dependency's
// extra env. A quiet phase follows: a phase ends only once the restarts it
// began are done, so whatever a slow machine makes of a restart, the
// restarted process serves there.
const depsRunScenario = `name: deps-run
target:
  command:
    argv: [%[1]s]
    env: {RUNNER_TEST_SERVE: "127.0.0.1:{port}", UPSTREAM: "127.0.0.1:{port:px}"}
  url: http://127.0.0.1:{port}
  ready: {path: /}
dependencies:
  - name: dep
    command:
      argv: [%[1]s]
      env: {RUNNER_TEST_SERVE: "127.0.0.1:{port:dep}"%[3]s}
proxies:
  - name: px
    upstream: "127.0.0.1:{port:dep}"
load:
  rate: 40/s
  timeout: 500ms
  requests: [{path: /}]
phases:
  - name: p
    duration: 1500ms
    faults:
%[2]s
  - name: after
    duration: 500ms
`

func depsRun(t *testing.T, faults, depEnv string) (*Result, error) {
	t.Helper()
	return depsRunCtx(t, context.Background(), faults, depEnv)
}

func depsRunCtx(t *testing.T, ctx context.Context, faults, depEnv string) (*Result, error) {
	t.Helper()
	return depsRunOpts(t, ctx, faults, depEnv, Options{})
}

// depsRunOpts is depsRunCtx with options; Dir and Self are set here.
func depsRunOpts(t *testing.T, ctx context.Context, faults, depEnv string, opts Options) (*Result, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := plan.Parse("deps-run.yaml", []byte(fmt.Sprintf(depsRunScenario, self, faults, depEnv)), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A relative run directory: dependencies are told absolute paths.
	t.Chdir(t.TempDir())
	// The supervisors are this race-enabled test binary, whose runtime
	// waits 1s at exit for late race reports: a kill would take that long.
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	opts.Dir, opts.Self = filepath.Join("out", "run"), "unused"
	return Run(ctx, sc, opts)
}

// events returns the run's events of kind k, as "message point" lines.
func events(tl *timeline.Timeline, kinds ...timeline.EventKind) []string {
	var out []string
	for _, e := range tl.Events {
		for _, k := range kinds {
			if e.Kind != k {
				continue
			}
			s := string(e.Kind) + " " + e.Message
			if e.Point != "" {
				s = string(e.Kind) + " " + e.Point
			}
			if p, ok := e.Data["process"]; ok {
				s += " " + p.(string)
			}
			out = append(out, strings.TrimSpace(s))
		}
	}
	return out
}

func TestProcessAndProxyFaultsInARun(t *testing.T) {
	res, err := depsRun(t, `      - {process: target, action: kill, after: 300ms, for: 300ms}
      - {process: dep, action: pause, after: 200ms, for: 200ms}
      - {proxy: px, action: latency, latency: 20ms, after: 900ms, for: 300ms}`, "")
	if err != nil {
		t.Fatalf("a planned kill is not a crash: %v", err)
	}
	tl, err := timeline.Load(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(events(tl, timeline.FaultOn, timeline.FaultOff, timeline.Process), "\n")
	for _, want := range []string{
		"process started dep", "process proxy started",
		"fault_on process/dep", "process paused dep", "process continued dep", "fault_off process/dep",
		"process killed target", "fault_on process/target", "process restarted target", "fault_off process/target",
		"fault_on proxy/px", "fault_off proxy/px", "process stopped dep",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q among the events:\n%s", want, got)
		}
	}
	// Down between the kill and the restart, served before and after (in
	// the phase after, at the latest), on the same address.
	var killed, back time.Time
	for _, e := range tl.Events {
		switch {
		case e.Kind == timeline.FaultOn && e.Point == "process/target":
			killed = e.Time
		case e.Kind == timeline.FaultOff && e.Point == "process/target":
			back = e.Time
		}
	}
	servedAfter := 0
	for _, q := range tl.Requests {
		if q.Time.After(back) && q.Status == 200 {
			servedAfter++
		}
		if q.Time.After(killed.Add(10*time.Millisecond)) && q.Time.Before(killed.Add(250*time.Millisecond)) && q.Status == 200 {
			t.Errorf("request %d at +%v was served while the target was killed", q.Seq, q.Time.Sub(killed))
		}
	}
	if back.Sub(killed) < 300*time.Millisecond || servedAfter < 10 {
		t.Errorf("the target was down %v and served %d requests after its restart", back.Sub(killed), servedAfter)
	}
	for _, e := range tl.Events {
		if e.Kind == timeline.Process && e.Message == "started" {
			if pid, _ := timeline.Number(e.Data["pid"]); pid <= 0 || syscall.Kill(int(pid), 0) == nil {
				t.Errorf("process %v outlived the run", e.Data["pid"])
			}
		}
	}
	if _, err := os.Stat(filepath.Join("out", "run", DepsDir, "dep.stdout")); err != nil {
		t.Errorf("the dependency's output is not in the run directory: %v", err)
	}
}

// A restart that takes long holds up no fault due meanwhile on something
// else: the proxy's fault, due while the killed target is being started
// again, comes on before the target is back (and the restart, ready only
// after the phase's load ended, takes the fault with it no more).
func TestAFaultDueDuringASlowRestartComesOnAtItsTime(t *testing.T) {
	t.Setenv(slowRestartEnv, t.TempDir())
	res, err := depsRun(t, `      - {process: target, action: kill, after: 300ms, for: 300ms}
      - {proxy: px, action: latency, latency: 20ms, after: 900ms, for: 300ms}`, "")
	if err != nil {
		t.Fatal(err)
	}
	tl, err := timeline.Load(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var pxOn, pxOff, restarted time.Time
	for _, e := range tl.Events {
		switch {
		case e.Kind == timeline.FaultOn && e.Point == "proxy/px":
			pxOn = e.Time
		case e.Kind == timeline.FaultOff && e.Point == "proxy/px":
			pxOff = e.Time
		case e.Kind == timeline.Process && e.Message == "restarted":
			restarted = e.Time
		}
	}
	got := strings.Join(events(tl, timeline.FaultOn, timeline.FaultOff, timeline.Process), "\n")
	if pxOn.IsZero() || pxOff.IsZero() || restarted.IsZero() {
		t.Fatalf("the proxy's fault on %v, off %v; the target restarted %v; events:\n%s", pxOn, pxOff, restarted, got)
	}
	if !pxOn.Before(restarted) || !pxOff.Before(restarted) {
		t.Errorf("the proxy's fault came on %v and went off %v after the target's restart:\n%s", pxOn.Sub(restarted), pxOff.Sub(restarted), got)
	}
}

func TestADependencyThatDiesStopsTheRun(t *testing.T) {
	_, err := depsRun(t, `      - {proxy: px, action: down, after: 1s}`, `, RUNNER_TEST_EXIT_AFTER: 400ms`)
	var ie *InfraError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "dependency dep exited during phase p (exit status 3); its last output: serving on") ||
		!strings.Contains(err.Error(), "giving up on purpose") {
		t.Fatalf("err = %v, want an InfraError naming the dependency and its last output", err)
	}
}

func TestWatchExit(t *testing.T) {
	fake := func() *process {
		return &process{done: make(chan struct{}), stderr: &tailBuffer{max: 64}, err: errors.New("exit status 2")}
	}
	tests := []struct {
		name string
		// act changes m and ends its process, then closes done if the
		// watcher should see no exit.
		act  func(m *managed, done chan struct{})
		want string
	}{
		{"an exit of its own", func(m *managed, _ chan struct{}) { close(m.proc.done) }, "exit status 2"},
		{"a planned kill, ready at the same moment", func(m *managed, done chan struct{}) {
			p := m.proc
			m.mu.Lock()
			m.planned = true
			m.changed()
			m.mu.Unlock()
			close(p.done)
			time.Sleep(10 * time.Millisecond) // the watcher sees both ready
			close(done)
		}, ""},
		{"a restart, then a crash of the new process", func(m *managed, _ chan struct{}) {
			old := m.proc
			m.mu.Lock()
			m.planned = true
			m.changed()
			m.mu.Unlock()
			close(old.done)
			m.mu.Lock()
			m.proc, m.planned = fake(), false
			m.changed()
			next := m.proc
			m.mu.Unlock()
			close(next.done)
		}, "exit status 2"},
		{"the phase ends first", func(_ *managed, done chan struct{}) { close(done) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 20 { // the race between the two channels, many times
				m := newManaged("target", fake(), time.Second, nil)
				done := make(chan struct{})
				got := make(chan error, 1)
				go func() { got <- watchExit(m, done) }()
				tt.act(m, done)
				err := <-got
				if (err == nil) != (tt.want == "") || (err != nil && err.Error() != tt.want) {
					t.Fatalf("watchExit = %v, want %q", err, tt.want)
				}
			}
		})
	}
}

// A watcher that looked before a planned kill and selects after it finds
// both the change and the exit ready; it must not take the exit for a
// crash, whichever the select picks.
func TestWatchOnceAfterAPlannedKill(t *testing.T) {
	for range 50 {
		m := newManaged("target", &process{done: make(chan struct{}), stderr: &tailBuffer{max: 64}}, time.Second, nil)
		p, planned, swapped := m.current()
		m.mu.Lock()
		m.planned = true
		m.changed()
		m.mu.Unlock()
		close(p.done)
		if again, err := watchOnce(m, p, planned, swapped, nil); err != nil || !again {
			t.Fatalf("watchOnce = %v, %v; want no exit, and a look again", err, again)
		}
	}
}

func TestTerminateAndRestart(t *testing.T) {
	res, err := depsRun(t, `      - {process: dep, action: restart, after: 200ms}
      - {process: target, action: terminate, after: 600ms, for: 200ms}`, "")
	if err != nil {
		t.Fatal(err)
	}
	all := events(res.Timeline, timeline.FaultOn, timeline.FaultOff, timeline.Process)
	got := strings.Join(all, "\n")
	// The two faults run side by side (a slow restart of dep may still be
	// going when target is terminated): each process's own events are in
	// order, whatever the other's do between them.
	of := func(name string) string {
		var own []string
		for _, e := range all {
			if (strings.HasSuffix(e, " "+name) || strings.HasSuffix(e, "/"+name)) && e != "process terminated dep" {
				own = append(own, e)
			}
		}
		return strings.Join(own, "\n")
	}
	for _, want := range []struct{ process, events string }{
		{"dep", "fault_on process/dep\nprocess started dep\nprocess restarted dep\nfault_off process/dep"},
		{"target", "process terminated target\nfault_on process/target"},
		{"target", "process restarted target\nfault_off process/target"},
	} {
		if !strings.Contains(of(want.process), want.events) {
			t.Errorf("no %q among %s's events:\n%s", want.events, want.process, got)
		}
	}
	// Every SIGTERM is timed: the restart and the terminate fault, and the
	// stops at the run's end.
	var stops []string
	for _, st := range res.Timeline.Stops() {
		if st.Signalled.IsZero() || st.Took <= 0 || st.Took > st.Grace || st.Killed {
			t.Errorf("stop %+v: want signalled, gone within its grace", st)
		}
		stops = append(stops, fmt.Sprintf("%s end=%v", st.Process, st.AtEnd))
	}
	if want := "dep end=false, target end=false, target end=true, dep end=true"; strings.Join(stops, ", ") != want {
		t.Errorf("stops %q, want %q", strings.Join(stops, ", "), want)
	}
}

// An interrupted run switches its proxy fault off, continues its paused
// target, and stops everything it started. The interrupt comes once the
// pause is on, whenever that is: on a busy machine the target may take
// long to start.
func TestInterruptRollsBackProxyAndProcessFaults(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupt := func(e timeline.Event) {
		if e.Kind == timeline.FaultOn && e.Point == "process/target" {
			cancel()
		}
	}
	res, err := depsRunOpts(t, ctx, `      - {proxy: px, action: timeout, after: 100ms}
      - {process: target, action: pause, after: 300ms}`, "", Options{onEvent: interrupt})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	got := strings.Join(events(res.Timeline, timeline.FaultOff, timeline.Process), "\n")
	for _, want := range []string{"fault_off proxy/px", "fault_off process/target", "process continued target", "process stopped dep"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q among the events:\n%s", want, got)
		}
	}
	for _, e := range res.Timeline.Events {
		if e.Kind == timeline.Process && e.Message == "started" {
			if pid, _ := timeline.Number(e.Data["pid"]); pid <= 0 || syscall.Kill(int(pid), 0) == nil {
				t.Errorf("process %v outlived the run", e.Data["pid"])
			}
		}
	}
	// run.json says the run was interrupted, where, and what was undone.
	data, err := os.ReadFile(filepath.Join(res.Dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum Summary
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	slices.Sort(sum.RolledBack)
	if sum.Outcome != "interrupted" || sum.StoppedIn != "p" || !slices.Equal(sum.RolledBack, []string{"process/target", "proxy/px"}) {
		t.Errorf("run.json: outcome %q, stopped in %q, rolled back %q; want interrupted in p, process/target and proxy/px rolled back", sum.Outcome, sum.StoppedIn, sum.RolledBack)
	}
	if line := sum.Interruption(); !strings.HasPrefix(line, `stopped in phase "p", `) || !strings.Contains(line, "; rolled back: process/target, proxy/px") {
		t.Errorf("Interruption() = %q", line)
	}
}
