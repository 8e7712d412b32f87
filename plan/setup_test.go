package plan

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// setupScenario is a scenario on a Postgres and a Redis dependency whose
// setup, load requests and writes are given by the test.
const setupScenario = `name: setup
target:
  command:
    argv: [./svc, --listen, "127.0.0.1:{port}"]
  url: http://127.0.0.1:{port}
dependencies:
  - name: db
    postgres: {}
  - name: cache
    command:
      argv: [redis-server, --port, "{port:cache}", --requirepass, "{password:cache}"]
setup:
SETUP
load:
  rate: 10/s
  requests:
    - path: /items
      headers: {Authorization: "Bearer {capture.token}"}
phases:
  - name: p
    duration: 1s
writes:
  - requests: {method: POST, path: /items}
    read: GET /items/{json.id}
    read_headers: {Authorization: "Bearer {capture.token}"}
`

func parseSetup(t *testing.T, dir, setup string) (*Scenario, error) {
	t.Helper()
	return Parse(filepath.Join(dir, "setup.yaml"), []byte(strings.Replace(setupScenario, "SETUP", setup, 1)), Options{})
}

func TestSetupSteps(t *testing.T) {
	dir := t.TempDir()
	mig := filepath.Join(dir, "migrations")
	if err := os.Mkdir(mig, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"002_rows.sql": "INSERT INTO t VALUES (1);\n", "001_schema.sql": "CREATE TABLE t (id int);\n", "notes.txt": "not SQL"} {
		if err := os.WriteFile(filepath.Join(mig, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := parseSetup(t, dir, `  - {postgres: db, sql_file: migrations}
  - name: token
    postgres: db
    sql: INSERT INTO tokens VALUES ('t') RETURNING token
    capture: {token: "{row.token}"}
  - {redis: cache, command: [SET, "k", "{capture.token}"]}
  - {http: "post /login", capture: {session: "{json.session}"}}`)
	if err != nil {
		t.Fatal(err)
	}
	s := sc.Setup
	if len(s[0].Scripts) != 2 || !strings.HasSuffix(s[0].Scripts[0].File, "001_schema.sql") || !strings.HasSuffix(s[0].Scripts[1].File, "002_rows.sql") {
		t.Errorf("sql_file of a directory: %+v, want its two .sql files in name order", s[0].Scripts)
	}
	if sc := s[1].Scripts; len(sc) != 1 || !sc[0].Inline || sc[0].Line != 16 || sc[0].Column != 10 {
		t.Errorf("inline sql: %+v, want it at line 16, column 10", sc)
	}
	if s[0].Name != "setup 1" || s[1].Kind() != StepSQL || s[2].Kind() != StepRedis || s[3].Kind() != StepHTTP {
		t.Errorf("names and kinds: %q %s %s %s", s[0].Name, s[1].Kind(), s[2].Kind(), s[3].Kind())
	}
	if n := sc.BeforeTarget(); n != 3 {
		t.Errorf("BeforeTarget = %d, want the 3 steps before the first http step", n)
	}
	if !sc.RedisPassword("cache") || sc.RedisPassword("db") {
		t.Error("RedisPassword: cache is given {password:cache}")
	}
	if m, p := s[3].Request(nil); m != "POST" || p != "/login" {
		t.Errorf("Request = %s %s", m, p)
	}
	caps := Captures{"token": "tk-1"}
	gen, err := NewGenerator(sc.Load, new(atomic.Uint64))
	if err != nil {
		t.Fatal(err)
	}
	gen.SetCaptures(caps)
	if q := gen.Next(); q.Headers["Authorization"] != "Bearer tk-1" {
		t.Errorf("a request's capture: %q", q.Headers["Authorization"])
	}
	w := &sc.Writes[0]
	if m, p, err := w.ReadTargetWith(nil, `{"id": 7}`, caps); err != nil || m != "GET" || p != "/items/7" {
		t.Errorf("ReadTargetWith = %s %s %v", m, p, err)
	}
	if h, err := w.ReadHeaderValuesWith(nil, `{"id": 7}`, nil, caps); err != nil || h.Get("Authorization") != "Bearer tk-1" {
		t.Errorf("ReadHeaderValuesWith = %v %v", h, err)
	}
}

func TestSetupMistakesAreRefusedWithTheirPlace(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, setup string
		want        []string
	}{
		{"a capture used before it exists", `  - {redis: cache, command: [SET, k, v]}`, []string{
			"setup.yaml:18:32: {capture.token} is used before any setup step captures it",
			"setup.yaml:25:35: {capture.token} is used before any setup step captures it",
		}},
		{"a capture used by a step before the one that makes it", `  - {redis: cache, command: [SET, k, "{capture.token}"]}
  - {http: POST /login, capture: {token: "{json.token}"}}`, []string{
			"setup.yaml:13:29: {capture.token} is used before any setup step captures it",
		}},
		{"a misspelt capture", `  - {http: POST /login, capture: {tokn: "{json.token}"}}`, []string{
			`{capture.token} is used before any setup step captures it (did you mean "tokn"?)`,
		}},
		{"an undeclared dependency", `  - {postgres: pg, sql: "SELECT 1", capture: {token: "{row.x}"}}`, []string{
			`setup.yaml:13:16: no dependency named "pg"`,
		}},
		{"SQL against a dependency that is not postgres", `  - {postgres: cache, sql: "SELECT 1", capture: {token: "{row.x}"}}`, []string{
			`setup.yaml:13:16: dependency "cache" is not a postgres one`,
		}},
		{"an undeclared Redis", `  - {redis: cach, command: [PING], capture: {token: "{reply}"}}`, []string{
			`setup.yaml:13:13: no dependency named "cach" (did you mean "cache"?)`,
		}},
		{"an SQL file that is not there", `  - {postgres: db, sql_file: nothing.sql, capture: {token: "{row.x}"}}`, []string{
			"setup.yaml:13:30: cannot read sql_file",
		}},
		{"two kinds in one step", `  - {postgres: db, http: GET /, capture: {token: "{row.x}"}}`, []string{
			"setup.yaml:13:5: setup step \"setup 1\" needs exactly one of postgres, redis, http or run",
		}},
		{"a capture the step cannot give", `  - {http: POST /login, capture: {token: "{row.token}"}}`, []string{
			`capture "token" reads {row.token}, which a http step does not give`,
		}},
		{"a capture of nothing", `  - {http: POST /login, capture: {token: "abc"}}`, []string{
			`capture "token" takes nothing from the step's result`,
		}},
		{"a pattern of two groups", `  - {http: POST /login, capture: {token: "{regexp.(a)(b)}"}}`, []string{
			`capture "token": pattern "(a)(b)" has 2 groups: a capture takes one`,
		}},
		{"a pattern that does not compile", `  - {http: POST /login, capture: {token: "{regexp.t=([a-z)}"}}`, []string{
			`capture "token": pattern "t=([a-z)" does not compile`,
		}},
		{"a pattern in a Redis step", `  - {redis: cache, command: [GET, k], capture: {token: "{regexp.(.*)}"}}`, []string{
			`capture "token" reads {regexp.(.*)}, which a redis step does not give`,
		}},
		{"a bad http step", `  - {http: /login, capture: {token: "{json.t}"}}`, []string{
			`setup.yaml:13:12: bad http "/login"`,
		}},
		{"SQL and a file", `  - {postgres: db, sql: "SELECT 1", sql_file: x.sql, capture: {token: "{row.x}"}}`, []string{
			"needs exactly one of sql or sql_file",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseSetup(t, dir, tt.setup)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("no %q in\n%v", w, err)
				}
			}
		})
	}
}

func TestCaptureFrom(t *testing.T) {
	look := func(kind, name string) (string, bool) {
		v, ok := map[string]string{"json.id": "7", "json.empty": "", "reply": "PONG"}[kind+"."+name]
		if kind == "reply" {
			v, ok = "PONG", true
		}
		return v, ok
	}
	for _, tt := range []struct{ tmpl, want, err string }{
		{"{json.id}", "7", ""},
		{"id-{json.id}-{reply}", "id-7-PONG", ""},
		{"{json.gone}", "", "the result has no json.gone"},
		{"{json.empty}", "", "the result has no json.empty"},
	} {
		got, err := CaptureFrom(tt.tmpl, look)
		if (err == nil) != (tt.err == "") || (err != nil && err.Error() != tt.err) || (err == nil && got != tt.want) {
			t.Errorf("CaptureFrom(%q) = %q, %v; want %q, %q", tt.tmpl, got, err, tt.want, tt.err)
		}
	}
}

// TestAnswerValue reads the three forms of an HTTP answer's capture.
func TestAnswerValue(t *testing.T) {
	h := http.Header{}
	h.Set("Location", "/links/abc")
	body := `{"code":"abc","n":7,"html":"<a href=/links/x9>"}`
	for _, tt := range []struct {
		kind, name, want string
		ok               bool
	}{
		{"json", "code", "abc", true},
		{"json", "n", "7", true},
		{"json", "gone", "", false},
		{"header", "location", "/links/abc", true},
		{"header", "X-Gone", "", false},
		{"regexp", `href=/links/([a-z0-9]+)`, "x9", true},
		{"regexp", `"n":[0-9]+`, `"n":7`, true},
		{"regexp", `nothing-(here)`, "", false},
	} {
		got, ok := AnswerValue(tt.kind, tt.name, h, body)
		if got != tt.want || ok != tt.ok {
			t.Errorf("AnswerValue(%s, %s) = %q, %v; want %q, %v", tt.kind, tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// probeScenario has the probes PROBES and a contract reading probe
// clicks.
const probeScenario = `name: probes
target:
  url: http://127.0.0.1:8080
dependencies:
  - name: db
    postgres: {}
  - name: cache
    command:
      argv: [redis-server, --port, "{port:cache}"]
probes:
PROBES
load:
  rate: 10/s
  requests: [{path: /}]
phases:
  - name: p
    duration: 1s
contracts:
  - name: clicks are written
    expect: [probe("clicks") >= acked within 5s]
  - name: at once too
    expect: [probe("clicks") >= 1]
`

// TestProbeOfDependency sends an http probe to a command dependency, and
// reads a probe that increase(probe(...)) judges during the phases: at
// its own interval, or every DefaultProbeEvery when it gives none.
func TestProbeOfDependency(t *testing.T) {
	yaml := strings.Replace(probeScenario, `expect: [probe("clicks") >= 1]`, `expect: ['increase(probe("calls")) <= 1.2 * count', 'increase(probe("lag")) <= 10']`, 1)
	yaml = strings.Replace(yaml, "PROBES", `  - {name: clicks, postgres: db, sql: "SELECT count(*) FROM clicks"}
  - {name: calls, http: GET /calls, value: "{json.calls}", dependency: cache}
  - {name: lag, redis: cache, command: [XLEN, s], interval: 50ms}`, 1)
	sc, err := Parse("probes.yaml", []byte(yaml), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := sc.Probes[1]; p.Dependency != "cache" || p.Interval.D() != DefaultProbeEvery || p.Step().Kind() != StepHTTP {
		t.Errorf("calls: dependency %q, interval %v, kind %v; want cache, %v, http", p.Dependency, p.Interval.D(), p.Step().Kind(), DefaultProbeEvery)
	}
	if p := sc.Probes[2]; p.Interval.D() != 50*time.Millisecond {
		t.Errorf("lag: interval %v; want its own 50ms", p.Interval.D())
	}
	if p := sc.Probes[0]; p.Interval != 0 {
		t.Errorf("clicks, read after the window only: interval %v; want none", p.Interval.D())
	}
}

func TestProbes(t *testing.T) {
	parse := func(probes string) (*Scenario, error) {
		return Parse("probes.yaml", []byte(strings.Replace(probeScenario, "PROBES", probes, 1)), Options{})
	}
	sc, err := parse(`  - {name: clicks, postgres: db, sql: "SELECT count(*) FROM clicks", interval: 100ms}
  - {name: lag, redis: cache, command: [XLEN, s]}
  - {name: stats, http: GET /stats, value: "{json.count}"}
  - {name: burn, prometheus: "http://127.0.0.1:9090", query: 'sum(rate(errors_total[1m]))', interval: 1s}`)
	if err != nil {
		t.Fatal(err)
	}
	if p := sc.Probes[3]; p.Prometheus != "http://127.0.0.1:9090" || p.Query != "sum(rate(errors_total[1m]))" || p.Every() != time.Second {
		t.Errorf("burn: prometheus %q, query %q, every %v", p.Prometheus, p.Query, p.Every())
	}
	if p := sc.Probes[0]; p.After != 5*time.Second || p.Every() != 100*time.Millisecond || p.Step().Kind() != StepSQL || len(p.Step().Scripts) != 1 {
		t.Errorf("clicks: After %v, Every %v, step %+v; want 5s (the longest within), 100ms, one SQL script", p.After, p.Every(), p.Step())
	}
	if p := sc.Probes[1]; p.After != 0 || p.Every() != DefaultProbeEvery || p.Step().StepTimeout() != DefaultProbeTimeout {
		t.Errorf("lag: After %v, Every %v, timeout %v", p.After, p.Every(), p.Step().StepTimeout())
	}
	for _, tt := range []struct{ probes, want string }{
		{`  - {name: click, postgres: db, sql: "SELECT 1"}`, `probes.yaml:20:14: probe("clicks") reads a probe the scenario does not declare (did you mean "click"?)`},
		{`  - {name: clicks, http: POST /stats, value: "{json.n}"}`, `probes.yaml:11:26: probe "clicks" sends POST; a probe must not change what it reads`},
		{`  - {name: clicks, http: GET /stats}`, `probes.yaml:11:5: probe "clicks" needs value: where in the answer its number is`},
		{`  - {name: clicks, postgres: dbx, sql: "SELECT 1"}`, `probes.yaml:11:30: no dependency named "dbx" (did you mean "db"?)`},
		{`  - {name: clicks, postgres: cache, sql: "SELECT 1"}`, `probes.yaml:11:30: dependency "cache" is not a postgres one`},
		{`  - {name: clicks, redis: db, command: [PING]}`, `probes.yaml:11:27: dependency "db" is not a command dependency`},
		{`  - {name: clicks, postgres: db, sql: "SELECT 1", value: "{row.n}"}`, `probe "clicks": value is for http probes`},
		{`  - {name: clicks, postgres: db, sql: "SELECT 1"}
  - {name: clicks, redis: cache, command: [PING]}`, `probes.yaml:12:12: probe "clicks" is declared twice`},
		{`  - {name: clicks, sql: "SELECT 1"}`, `probes.yaml:11:5: probe "clicks" needs exactly one of postgres, redis, http or prometheus`},
		{`  - {name: clicks, query: up}`, `probes.yaml:11:5: probe "clicks" needs exactly one of postgres, redis, http or prometheus`},
		{`  - {name: clicks, postgres: db, sql: "SELECT 1", query: up}`, `probes.yaml:11:58: probe "clicks": query is for prometheus probes (add prometheus: http://127.0.0.1:9090`},
		{`  - {name: clicks, prometheus: "127.0.0.1:9090", query: up}`, `probes.yaml:11:32: probe "clicks": prometheus "127.0.0.1:9090" is not an http(s) URL (write the server's base URL`},
		{`  - {name: clicks, prometheus: "http://10.0.0.5:9090", query: up}`, `probes.yaml:11:32: probe "clicks": prometheus "10.0.0.5" is not a loopback address`},
		{`  - {name: clicks, prometheus: "http://127.0.0.1:9090"}`, `probes.yaml:11:5: probe "clicks" needs a query (write the PromQL to evaluate`},
		{`  - {name: clicks, prometheus: "http://127.0.0.1:9090", query: up, sql: "SELECT 1"}`, `probes.yaml:11:5: probe "clicks" mixes prometheus with another source's fields`},
		{`  - {name: clicks, prometheus: "http://127.0.0.1:9090", query: up, interval: 1ms}`, `probes.yaml:11:78: probe "clicks": interval 1ms is too short`},
		{`  - {name: clicks, postgres: db, sql: "SELECT {capture.n}"}`, `{capture.n} is used before any setup step captures it`},
		{`  - {name: clicks, http: GET /calls, value: "{json.calls}", dependency: cach}`, `probes.yaml:11:73: probe "clicks": no dependency named "cach" (did you mean "cache"?)`},
		{`  - {name: clicks, http: GET /calls, value: "{json.calls}", dependency: kv}`, `probes.yaml:11:73: probe "clicks": no dependency named "kv" (choose one of cache)`},
		{`  - {name: clicks, http: GET /calls, value: "{json.calls}", dependency: db}`, `probes.yaml:11:73: probe "clicks": dependency "db" is a Postgres server, not an HTTP one (read a Postgres dependency with postgres: db and sql:)`},
		{`  - {name: clicks, redis: cache, command: [GET, n], dependency: cache}`, `probes.yaml:11:65: probe "clicks": dependency is for http probes`},
		{`  - {name: clicks, prometheus: "http://127.0.0.1:9090", query: up, dependency: cache}`, `probe "clicks" mixes prometheus with another source's fields`},
	} {
		_, err := parse(tt.probes)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s:\n got %v\nwant %s", tt.probes, err, tt.want)
		}
	}
}

func TestTeardownAndRunSteps(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "seed.sh"), []byte("#!/bin/sh\necho 42\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sc, err := parseSetup(t, dir, `  - {http: POST /login, capture: {token: "{json.token}"}}
  - name: seed
    run: [./seed.sh, "{capture.token}"]
    env: {TOKEN: "{capture.token}"}
    capture: {rows: "{stdout}"}
teardown:
  - {postgres: db, sql: "TRUNCATE t WHERE n = {capture.rows}"}
  - {run: [sh, -c, "exit 0"], capture: {done: "{stdout}"}}
  - {redis: cache, command: [DEL, "{capture.done}"]}`)
	if err != nil {
		t.Fatal(err)
	}
	if s := sc.Setup[1]; s.Kind() != StepRun || s.Dir != dir {
		t.Errorf("run step: kind %s, dir %q; want run in %q", s.Kind(), s.Dir, dir)
	}
	if n := sc.BeforeTarget(); n != 0 {
		t.Errorf("BeforeTarget = %d, want 0", n)
	}
	td := sc.Teardown
	if len(td) != 3 || td[0].Name != "teardown 1" || td[0].Kind() != StepSQL || td[1].Kind() != StepRun || td[2].Kind() != StepRedis {
		t.Fatalf("teardown steps: %+v", td)
	}
	if p := td[0].Position; p.Line != 19 || p.Column != 5 {
		t.Errorf("teardown 1 is at %d:%d, want 19:5", p.Line, p.Column)
	}
	got, err := CaptureFrom("{stdout}", func(kind, _ string) (string, bool) { return "out", kind == "stdout" })
	if err != nil || got != "out" {
		t.Errorf("CaptureFrom({stdout}) = %q, %v", got, err)
	}
}

func TestTeardownAndRunMistakesAreRefusedWithTheirPlace(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	login := `  - {http: POST /login, capture: {token: "{json.token}"}}
`
	tests := []struct {
		name, setup string
		want        []string
	}{
		{"an empty argv", login + `  - {run: []}`, []string{`setup.yaml:14:11: setup step "setup 2" names no program to run`}},
		{"an empty program", login + `  - {run: [""]}`, []string{`setup step "setup 2" names no program to run`}},
		{"a NUL byte", login + `  - {run: [echo, "a\0b"]}`, []string{`setup.yaml:14:18: "a\x00b" holds a NUL character`}},
		{"a NUL byte in env", login + `  - {run: [echo], env: {A: "a\0b"}}`, []string{`"a\x00b" holds a NUL character`}},
		{"a bad env name", login + `  - {run: [echo], env: {"A=B": x}}`, []string{`environment variable name "A=B" is not valid`}},
		{"a program not in PATH", login + `  - {run: [no-such-program-chaoskit]}`, []string{`setup step "setup 2" runs no-such-program-chaoskit, which is not in PATH`}},
		{"a path that is not there", login + `  - {run: [./missing.sh]}`, []string{`runs ` + filepath.Join(dir, "missing.sh") + `, which does not exist`}},
		{"a file that is not executable", login + `  - {run: [./notes.txt]}`, []string{`which is not an executable file`}},
		{"run with sql", login + `  - {run: [echo], sql: "SELECT 1"}`, []string{`setup.yaml:14:5: setup step "setup 2" mixes run with fields of another kind of step`}},
		{"run with http", login + `  - {run: [echo], http: GET /}`, []string{`setup.yaml:14:5: setup step "setup 2" needs exactly one of postgres, redis, http or run`}},
		{"run with a body", login + `  - {run: [echo], body: x}`, []string{`setup step "setup 2" mixes run with fields of another kind of step`}},
		{"a run capture of json", login + `  - {run: [echo], capture: {x: "{json.x}"}}`, []string{`capture "x" reads {json.x}, which a run step does not give`}},
		{"stdout of an http step", login + `  - {http: GET /, capture: {x: "{stdout}"}}`, []string{`capture "x" reads {stdout}, which a http step does not give`}},
		{"a teardown capture used before it is made", login + `teardown:
  - {run: [echo, "{capture.later}"]}
  - {run: [echo], capture: {later: "{stdout}"}}`, []string{`setup.yaml:15:11: {capture.later} is used before any setup step captures it`}},
		{"a teardown capture the load uses", `  []
teardown:
  - {run: [echo], capture: {token: "{stdout}"}}`, []string{`setup.yaml:20:32: {capture.token} is used before any setup step captures it`}},
		{"a teardown step of two kinds", login + `teardown:
  - {run: [echo], http: GET /}`, []string{`setup.yaml:15:5: teardown step "teardown 1" needs exactly one of postgres, redis, http or run`}},
		{"a teardown step on an unknown dependency", login + `teardown:
  - {postgres: dbb, sql: "TRUNCATE t"}`, []string{`setup.yaml:15:16: no dependency named "dbb" (did you mean "db"?)`}},
		{"a teardown capture that setup made", login + `teardown:
  - {run: [echo], capture: {token: "{stdout}"}}`, []string{`capture "token" is made by an earlier step already`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseSetup(t, dir, tt.setup)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("no %q in\n%v", w, err)
				}
			}
		})
	}
}
