package plan

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/netfault"
	"github.com/chaoskit/chaoskit/scenarios"
)

// depsScenario is a scenario with a dependency, a proxy in front of it and
// a phase whose faults come from %s.
const depsScenario = `name: deps
target:
  command:
    argv: [./svc, --listen, "127.0.0.1:{port}", --db, "127.0.0.1:{port:pg}"]
  url: http://127.0.0.1:{port}
dependencies:
  - name: db
    postgres: {}
  - name: cache
    command:
      argv: [redis-server, --port, "{port:cache}", --save, ""]
proxies:
  - name: pg
    upstream: "127.0.0.1:{port:db}"
load:
  rate: 10/s
  requests: [{path: /}]
phases:
  - name: p
    duration: 3s
    faults:
%s
`

func parseDeps(t *testing.T, faults string) (*Scenario, error) {
	t.Helper()
	return Parse("deps.yaml", []byte(strings.Replace(depsScenario, "%s", faults, 1)), Options{})
}

func TestProxyAndProcessFaults(t *testing.T) {
	sc, err := parseDeps(t, `      - {proxy: pg, action: latency, latency: 300ms, jitter: 50ms}
      - {process: db, action: kill, after: 1s, for: 500ms}
      - {process: target, action: pause, after: 2s}
      - {process: cache, action: restart, after: 2s}`)
	if err != nil {
		t.Fatal(err)
	}
	fs := sc.Phases[0].Faults
	want := []struct{ path, term string }{
		{"proxy/pg", "proxy pg latency 300ms ±50ms"},
		{"process/db", "process db kill for 500ms"},
		{"process/target", "process target pause"},
		{"process/cache", "process cache restart"},
	}
	for i, w := range want {
		if fs[i].Path != w.path || fs[i].Term != w.term {
			t.Errorf("fault %d: %q %q, want %q %q", i, fs[i].Path, fs[i].Term, w.path, w.term)
		}
	}
	if n := fs[0].Net; n == nil || *n != (netfault.Fault{Proxy: "pg", Kind: netfault.Latency, Latency: 300 * time.Millisecond, Jitter: 50 * time.Millisecond}) {
		t.Errorf("netfault fault %+v", n)
	}
	if sc.Phases[0].HasPointFaults() {
		t.Error("a phase of proxy and process faults has no failpoint fault")
	}
	if got := sc.PortNames(); !slices.Equal(got, []string{"", "cache", "db", "pg"}) {
		t.Errorf("port names %q", got)
	}
	db := sc.Dependencies[0]
	if db.RunAs != PostgresUser || db.Ready.Timeout.D() != defaultDependencyReady {
		t.Errorf("postgres dependency defaults: %+v", db)
	}
	if p := sc.Proxies[0]; p.Listen != "127.0.0.1:{port:pg}" {
		t.Errorf("proxy listen default %q", p.Listen)
	}
	filled := sc.Dependencies[1].WithPorts(map[string]int{"cache": 7001}, "/run/deps/cache")
	if got := strings.Join(filled.Command.Argv, " "); got != "redis-server --port 7001 --save " {
		t.Errorf("filled argv %q", got)
	}
}

func TestDependencyAndProxyErrors(t *testing.T) {
	tests := []struct {
		name, from, to string
		// want is "line:col: message" of one of the errors.
		want string
	}{
		{"non-loopback upstream", `upstream: "127.0.0.1:{port:db}"`, `upstream: "10.0.0.5:5432"`,
			`14:15: proxy "pg": "10.0.0.5:5432" is not a loopback address`},
		{"proxy without upstream", `    upstream: "127.0.0.1:{port:db}"`, ``,
			`13:5: proxy "pg" has no upstream`},
		{"name used twice", `  - name: pg`, `  - name: db`,
			`13:11: proxy name "db" is used by dependency db already`},
		{"target name", `  - name: cache`, `  - name: target`,
			`9:11: dependency name "target" is taken by the target`},
		{"neither command nor postgres", `    postgres: {}`, `    run_as: nobody`,
			`7:5: dependency "db" needs exactly one of command or postgres`},
		{"unknown user", `    postgres: {}`, "    postgres: {}\n    run_as: no-such-user-here",
			`9:13: run_as: no user "no-such-user-here"`},
		{"cannot tell ready", `"{port:cache}"`, `"6379"`,
			`9:5: chaoskit cannot tell when dependency "cache" is ready`},
		{"non-loopback ready", `      argv: [redis-server, --port, "{port:cache}", --save, ""]`, "      argv: [redis-server, --port, \"{port:cache}\", --save, \"\"]\n    ready: {tcp: \"192.168.1.4:6379\"}",
			`12:18: "192.168.1.4" is not a loopback address`},
		{"unknown field", `    postgres: {}`, `    postgres: {arg: []}`,
			`8:16: unknown field "arg" (did you mean "args"?)`},
		{"password on the target's command line", `--db, "127.0.0.1:{port:pg}"]`, `--db, "postgres://postgres:{password:db}@127.0.0.1:{port:pg}"]`,
			`4:11: {password:db} cannot be given on the target's command line`},
		{"password of no dependency", `--save, ""]`, `--requirepass, "{password:cach}"]`,
			`11:13: {password:cach} names no dependency (did you mean {password:cache}?)`},
		{"args not a list", `    postgres: {}`, `    postgres: {args: "-c x=1"}`,
			`8:22: string was used where sequence is expected (write a list, such as [a, b], even for one item)`},
		{"listen on every address", `    postgres: {}`, `    postgres: {args: [-c, "listen_addresses=*"]}`,
			`8:27: dependency "db": postgres setting listen_addresses cannot be changed by a scenario`},
		{"listen in one argument", `    postgres: {}`, `    postgres: {args: ["--listen-addresses=0.0.0.0"]}`,
			`8:23: dependency "db": postgres setting listen_addresses cannot be changed by a scenario`},
		{"port", `    postgres: {}`, `    postgres: {args: ["-cport=5432"]}`,
			`8:23: dependency "db": postgres setting port cannot be changed by a scenario`},
		{"host option", `    postgres: {}`, `    postgres: {args: [-h, "*"]}`,
			`8:23: dependency "db": postgres option "-h" is not allowed`},
		{"socket", `    postgres: {}`, `    postgres: {args: [-c, unix_socket_directories=/tmp]}`,
			`8:27: dependency "db": postgres setting unix_socket_directories cannot be changed`},
		{"authentication", `    postgres: {}`, `    postgres: {args: [-c, hba_file=/tmp/hba]}`,
			`8:27: dependency "db": postgres setting hba_file cannot be changed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Replace(depsScenario, "%s", "      - {proxy: pg, action: down}", 1)
			if !strings.Contains(text, tt.from) {
				t.Fatalf("scenario has no %q", tt.from)
			}
			_, err := Parse("deps.yaml", []byte(strings.Replace(text, tt.from, tt.to, 1)), Options{})
			var l ErrorList
			if !errors.As(err, &l) || len(l) == 0 {
				t.Fatalf("err = %v, want an ErrorList", err)
			}
			if !hasError(l, "deps.yaml:"+tt.want) {
				t.Errorf("got  %s\nwant deps.yaml:%s", l, tt.want)
			}
		})
	}
}

func TestProxyAndProcessFaultErrors(t *testing.T) {
	tests := []struct {
		name, faults, want string
	}{
		{"unknown proxy", `      - {proxy: pgg, action: down}`, `22:17: no proxy named "pgg" (did you mean "pg"?)`},
		{"misspelt kind", `      - {proxy: pg, action: latncy, latency: 1s}`, `22:29: unknown network fault kind "latncy" (did you mean "latency"?)`},
		{"setting of another kind", `      - {proxy: pg, action: latency, latency: 1s, rate: 5}`, `22:57: rate is not a setting of a latency fault`},
		{"jitter above latency", `      - {proxy: pg, action: latency, latency: 100ms, jitter: 200ms}`, `22:62: jitter 200ms is above the latency`},
		{"value on a proxy fault", `      - {proxy: pg, action: down, value: x}`, `22:42: a proxy fault takes no value or count`},
		{"proxy probability above 1", `      - {proxy: pg, action: reset_peer, probability: 1.5}`, `22:54: probability 1.5 is out of range (a share of connections between 0 and 1, such as 0.5)`},
		{"proxy probability not a number", `      - {proxy: pg, action: reset_peer, probability: .nan}`, `22:54: probability NaN is out of range (a share of connections between 0 and 1, such as 0.5)`},
		{"proxy settings on a failpoint", `      - {point: x, action: error, latency: 1s}`, `22:9: a failpoint fault takes no proxy settings`},
		{"two sources", `      - {point: x, proxy: pg, action: down}`, `22:9: a fault names one of point, proxy or process`},
		{"unknown process", `      - {process: redis, action: kill}`, `22:19: no process named "redis"`},
		{"unknown process action", `      - {process: db, action: sigkill}`, `22:31: unknown process action "sigkill" (choose one of kill, terminate, pause, restart)`},
		{"restart with for", `      - {process: db, action: restart, for: 1s}`, `22:45: a restart has no duration`},
		{"probability on a process", `      - {process: db, action: kill, probability: 0.5}`, `22:9: a process fault takes no value, count, probability, distribution or proxy settings`},
		{"overlapping proxy faults", "      - {proxy: pg, action: down}\n      - {proxy: pg, action: latency, latency: 1s, after: 1s}", `23:17: proxy pg has two faults at once`},
		{"overlapping process faults", "      - {process: db, action: pause, for: 2s}\n      - {process: db, action: kill, after: 1s}", `23:19: process db has two actions at once`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseDeps(t, tt.faults)
			var l ErrorList
			if !errors.As(err, &l) || len(l) == 0 {
				t.Fatalf("err = %v, want an ErrorList", err)
			}
			if !hasError(l, "deps.yaml:"+tt.want) {
				t.Errorf("got  %s\nwant deps.yaml:%s", l, tt.want)
			}
		})
	}
}

func TestProcessFaultOnATargetChaoskitDoesNotStart(t *testing.T) {
	text := strings.Replace(depsScenario, "%s", "      - {process: target, action: kill}", 1)
	text = strings.Replace(text, `  command:
    argv: [./svc, --listen, "127.0.0.1:{port}", --db, "127.0.0.1:{port:pg}"]
  url: http://127.0.0.1:{port}`, `  url: http://127.0.0.1:8080`, 1)
	_, err := Parse("deps.yaml", []byte(text), Options{})
	if err == nil || !strings.Contains(err.Error(), "the target is not started by chaoskit") {
		t.Fatalf("err = %v", err)
	}
}

func TestBundledDepsScenariosLoad(t *testing.T) {
	files, err := fs.Glob(scenarios.Deps, "deps/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	scs, err := loadFiles(files, func(f string) ([]byte, error) { return fs.ReadFile(scenarios.Deps, f) }, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(scs) != 4 {
		t.Fatalf("%d bundled deps scenarios, want 4", len(scs))
	}
	for _, sc := range scs {
		if len(sc.Dependencies) == 0 || sc.Values["broken"] != "false" {
			t.Errorf("%s: dependencies %v, broken=%q: every deps scenario has a dependency and a broken variant", sc.Name, sc.Dependencies, sc.Values["broken"])
		}
	}
}

// hasError says whether one of the errors starts with want.
func hasError(l ErrorList, want string) bool {
	for _, e := range l {
		if strings.HasPrefix(e.Error(), want) {
			return true
		}
	}
	return false
}

// TestOverlapsAreReportedOncePerFault: four restarts of one process at
// once are three errors (each later restart, naming the first it meets),
// not one per pair.
func TestOverlapsAreReportedOncePerFault(t *testing.T) {
	_, err := parseDeps(t, strings.Repeat("      - {process: db, action: restart}\n", 4))
	var l ErrorList
	if !errors.As(err, &l) {
		t.Fatalf("err = %v, want an ErrorList", err)
	}
	var lines []string
	for _, e := range l {
		if strings.Contains(e.Error(), "two actions at once") {
			lines = append(lines, e.Error())
		}
	}
	want := []string{
		`deps.yaml:23:19: process db has two actions at once in phase "p": this one and faults[0]`,
		`deps.yaml:24:19: process db has two actions at once in phase "p": this one and faults[0]`,
		`deps.yaml:25:19: process db has two actions at once in phase "p": this one and faults[0]`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d overlap errors, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("error %d:\n got %s\nwant %s…", i, lines[i], want[i])
		}
	}
}
