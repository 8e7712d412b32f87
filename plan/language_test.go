package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func parseGood(t *testing.T, from, to string, opts Options) (*Scenario, error) {
	t.Helper()
	src := strings.Replace(good, from, to, 1)
	if src == good {
		t.Fatalf("replacement %q not applied", from)
	}
	if opts.Catalog == nil {
		opts.Catalog = demoCatalog.Catalog
	}
	return Parse("s.yaml", []byte(src), opts)
}

func TestLanguageErrors(t *testing.T) {
	tests := []struct {
		name, from, to string
		want           string
	}{
		{"undefined var", "  rate: 10/s", "  rate: ${speed}", `s.yaml:6:9: variable ${speed} has no value (declare it under vars: or pass --var speed=VALUE)`},
		{"var typo", "  rate: 10/s", "  rate: ${rr}", `s.yaml:6:9: variable ${rr} has no value (did you mean "r"?)`},
		{"var in flow style", "  rate: 10/s", "  rate: {r: ${r}}", `s.yaml:6:9: a rate must be a plain value`},
		{"var column maps back", "  rate: 10/s", "  rate: ${r}", `s.yaml:6:9: bad rate "0/s"`},
		{"column after a substitution", "    - path: /products/{1..3}", "    - {method: ${m}, path: nope}", `s.yaml:8:28: path "nope" is not absolute`},
		{"rate and pacer", "  rate: 10/s", "  rate: 10/s\n  pacer: {linear: {from: 1/s, to: 5/s}}", `s.yaml:7:10: load has both rate and pacer`},
		{"pacer without kind", "  rate: 10/s", "  pacer: {}", `a pacer needs exactly one of linear, sine or steps`},
		{"sine amplitude", "  rate: 10/s", "  pacer: {sine: {mean: 10/s, amplitude: 10/s, period: 1s}}", `sine amplitude 10/s would drive the rate to zero`},
		{"sine start", "  rate: 10/s", "  pacer: {sine: {mean: 10/s, amplitude: 5/s, period: 1s, start: peek}}", `unknown sine start "peek" (did you mean "peak"?)`},
		{"step without for", "  rate: 10/s", "  pacer: {steps: [{rate: 1/s}, {rate: 2/s}]}", `step 1 has no duration`},
		{"fault after past the phase", "action: error", "action: error\n        after: 2s", `s.yaml:17:16: fault starts 2s into phase "fault", which lasts 2s`},
		{"fault for past the phase", "action: error", "action: error\n        after: 1s\n        for: 2s", `s.yaml:18:14: fault lasts until 3s into phase "fault", which lasts 2s`},
		{"overlapping faults", "        action: error", "        action: error\n      - point: productQuery\n        action: timeout\n        after: 1s", `failpoint github.com/chaoskit/chaoskit/demo/store/productQuery has two faults at once in phase "fault"`},
		{"bad raw term", "action: error", "action: term\n        value: bogus(", `failpoint term "bogus(" does not parse`},
		{"body and body_file", "    - path: /products/{1..3}", "    - path: /products/{1..3}\n      body: x\n      body_file: b.json", `request has both body and body_file`},
		{"missing body_file", "    - path: /products/{1..3}", "    - path: /products/{1..3}\n      body_file: nope.json", `cannot read body_file`},
		{"body_file not a regular file", "    - path: /products/{1..3}", "    - path: /products/{1..3}\n      body_file: /dev/zero", `body_file /dev/zero is not a regular file (give a regular file)`},
		{"bad random template", "/products/{1..3}", "/products/{random:}", `random: takes a range`},
		{"port without command", "  demo:\n    args: []", "  url: http://127.0.0.1:{port}", `target uses a {port} placeholder but chaoskit does not start it`},
		{"command without url", "  demo:\n    args: []", "  command: {argv: [./svc]}", `target.command needs a url`},
		{"command not loopback", "  demo:\n    args: []", "  command: {argv: [./svc]}\n  url: http://10.0.0.1:{port}", `"10.0.0.1" is not a loopback address`},
		{"demo with failpoints", "    args: []", "    args: []\n  failpoints: 127.0.0.1:9", `the demo target takes no failpoints address`},
		{"faults without an endpoint", "  demo:\n    args: []", "  url: http://127.0.0.1:8080\n  points: [github.com/chaoskit/chaoskit/demo/store/productQuery]", `s.yaml:15:7: phase "fault" switches faults but the target has no failpoint control endpoint (add target.failpoints`},
		{"ready status", "    args: []", "    args: []\n  ready: {status: 42}", `readiness status 42 is not an HTTP status`},
		{"state path", "    args: []", "    args: []\n  state: {path: state}", `state path "state" is not a path`},
		{"override workers", "    duration: 1s\n", "    duration: 1s\n    load: {workers: 900}\n", `s.yaml:12:11: workers 900 and max_workers 500`},
		{"unknown field in override", "    duration: 1s\n", "    duration: 1s\n    load: {rat: 5/s}\n", `s.yaml:12:12: unknown field "rat" (did you mean "rate"?)`},
		{"template selector", "    - path: /products/{1..3}\n", "    - path: /products/{1..3}\n      name: product\n", ""},
		{"unknown template", "    phase: fault\n", "    phase: fault\n    requests: {template: prodcut}\n", `no request template is named "prodcut" (name the request template: load: {requests: [{name: prodcut, path: ...}]})`},
		{"template name", "    - path: /products/{1..3}\n", "    - path: /products/{1..3}\n      name: a b\n", `request name "a b" cannot be used`},
		{"tag with a comma", "    - path: /products/{1..3}\n", "    - path: /products/{1..3}\n      tags: [\"a,b\"]\n", `tag "a,b" cannot be used`},
		// A field of another mapping: where it belongs, never the name typed.
		{"field of another mapping", "    duration: 1s\n", "    duration: 1s\n    settle: 1s\n", `s.yaml:12:5: unknown field "settle" ("settle" is a field of contracts[], not of this mapping)`},
		{"field of several mappings", "    duration: 2s\n", "    duration: 2s\n    requests: {tag: x}\n", `unknown field "requests" ("requests" is a field of load, phases[].load, contracts[], writes[] (and 1 more places), not of this mapping)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(good, tt.from, tt.to, 1)
			if src == good {
				t.Fatalf("replacement %q not applied", tt.from)
			}
			src += "vars: {r: 0/s, m: GET}\n"
			_, err := Parse("s.yaml", []byte(src), demoCatalog)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
			if !IsInvalid(err) {
				t.Errorf("IsInvalid(%v) = false", err)
			}
		})
	}
}

func TestEmptyFile(t *testing.T) {
	if _, err := Parse("s.yaml", []byte("  \n# nothing\n"), demoCatalog); err == nil || !strings.Contains(err.Error(), "s.yaml: scenario file holds no document") {
		t.Errorf("err = %v", err)
	}
	if _, err := Parse("s.yaml", []byte(" \n"), demoCatalog); err == nil || err.Error() != "s.yaml: scenario file is empty (see docs/scenarios.md for an example)" {
		t.Errorf("err = %v", err)
	}
}

func TestVarsAndOverrides(t *testing.T) {
	src := strings.Replace(good, "  rate: 10/s", "  rate: ${rate}\n  workers: ${w}", 1) + "vars:\n  rate: 10/s\n  w: 3\n"
	sc, err := Parse("s.yaml", []byte(src), demoCatalog)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Load.Rate != (Rate{10, time.Second}) || sc.Load.Workers != 3 || sc.Values["rate"] != "10/s" {
		t.Errorf("vars not applied: %+v %v", sc.Load, sc.Values)
	}
	sc, err = Parse("s.yaml", []byte(src), Options{Catalog: demoCatalog.Catalog, Vars: map[string]string{"rate": "40/s"}})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Load.Rate != (Rate{40, time.Second}) || sc.Values["rate"] != "40/s" || !strings.Contains(string(sc.Source), "${rate}") {
		t.Errorf("--var not applied: %+v %v", sc.Load.Rate, sc.Values)
	}
	// $$ escapes a dollar.
	sc, err = Parse("s.yaml", []byte(strings.Replace(src, "name: s", "name: s\ndescription: costs $${x}", 1)), demoCatalog)
	if err != nil || sc.Description != "costs ${x}" {
		t.Errorf("escape: %q %v", sc.Description, err)
	}
	// ...in a declared value too; a --var value is taken as it is.
	withPrice := strings.Replace(src, "name: s", "name: s\ndescription: ${price}", 1) + "  price: 5$$\n"
	sc, err = Parse("s.yaml", []byte(withPrice), demoCatalog)
	if err != nil || sc.Description != "5$" {
		t.Errorf("escape in a declared value: %q %v", sc.Description, err)
	}
	sc, err = Parse("s.yaml", []byte(withPrice), Options{Catalog: demoCatalog.Catalog, Vars: map[string]string{"price": "7$$"}})
	if err != nil || sc.Description != "7$$" {
		t.Errorf("--var value: %q %v", sc.Description, err)
	}
	// A var does not refer to another.
	if _, err := Parse("s.yaml", []byte(src+"  other: a${rate}\n"), demoCatalog); err == nil || !strings.Contains(err.Error(), "var other uses another variable") {
		t.Errorf("nested var: %v", err)
	}
}

func TestUnknownVarFlag(t *testing.T) {
	dir := t.TempDir()
	src := strings.Replace(good, "  rate: 10/s", "  rate: ${rate}", 1) + "vars: {rate: 10/s}\n"
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadAll([]string{dir}, Options{Catalog: demoCatalog.Catalog, Vars: map[string]string{"rat": "5/s"}})
	if err == nil || !strings.Contains(err.Error(), `--var: no scenario declares or uses variable "rat" (did you mean "rate"?)`) {
		t.Fatalf("err = %v", err)
	}
}

func TestColMap(t *testing.T) {
	// "a: ${x} ${yy}" with x=1234567 and yy="" becomes "a: 1234567 ".
	_, m, _, errs := substitute("f", []byte("a: ${x} ${yy} z"), map[string]string{"x": "1234567", "yy": ""})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for newCol, want := range map[int]int{1: 1, 4: 4, 6: 4, 11: 8, 12: 14, 13: 15} {
		if got := m.orig(1, newCol); got != want {
			t.Errorf("orig(1, %d) = %d, want %d", newCol, got, want)
		}
	}
}

func TestErrorDetailShowsTheLine(t *testing.T) {
	_, err := Parse("s.yaml", []byte(strings.Replace(good, "    duration: 2s", "    durration: 2s", 1)), demoCatalog)
	var l ErrorList
	if !errors.As(err, &l) {
		t.Fatal(err)
	}
	want := "s.yaml:13:5: unknown field \"durration\" (did you mean \"duration\"?)\n  13 |     durration: 2s\n     |     ^"
	if got := l.Detail(); got != want {
		t.Errorf("detail:\n%s\nwant:\n%s", got, want)
	}
}

func TestFullLanguage(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "order.json"), []byte(`{"item": {seq}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	src := `name: full
vars: {base: 100/s}
target:
  command:
    argv: [./svc, --listen, "127.0.0.1:{port}", --admin, "127.0.0.1:{port:admin}"]
    env: {MODE: "chaos"}
    dir: bin
  url: http://127.0.0.1:{port}
  ready: {path: /ready, status: 204, timeout: 3s}
  state: {path: /debug/chaoskit/state, interval: 50ms}
  points: [example.com/svc/store/query]
load:
  rate: ${base}
  timeout: 500ms
  connections: 4
  http2: true
  seed: 7
  requests:
    - path: /items/{1..3}
      weight: 3
      tags: [read]
    - method: post
      path: /orders
      body_file: order.json
      headers: {X-Req: "r-{seq}"}
      tags: [write]
phases:
  - name: ramp
    duration: 2s
    load:
      pacer: {linear: {from: 10/s, to: 50/s}}
  - name: spike
    duration: 2s
    load:
      pacer: {steps: [{rate: 10/s, for: 1s}, {rate: 80/s}]}
      requests: [{path: "/search?q={random:apple|pear}"}]
    faults:
      - point: query
        action: latency
        value: 50ms
        after: 500ms
        for: 1s
      - point: query
        action: error
        after: 1500ms
`
	sc, err := Parse(filepath.Join(dir, "full.yaml"), []byte(src), Options{RateScale: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	tg := sc.Target
	if tg.Command.Dir != filepath.Join(dir, "bin") || tg.Ready.Status != 204 || tg.State.Interval.D() != 50*time.Millisecond {
		t.Errorf("target %+v", tg)
	}
	if names := tg.PortNames(); strings.Join(names, ",") != ",admin" {
		t.Errorf("ports %q", names)
	}
	filled := tg.WithPorts(map[string]int{"": 8080, "admin": 9090})
	if filled.URL != "http://127.0.0.1:8080" || filled.Command.Argv[4] != "127.0.0.1:9090" || tg.Command.Argv[2] != "127.0.0.1:{port}" {
		t.Errorf("filled %+v, original %v", filled, tg.Command.Argv)
	}
	ramp, spike := sc.Phases[0].Effective, sc.Phases[1].Effective
	if ramp.Pacer.Linear.From != (Rate{5, time.Second}) || ramp.Pacer.Linear.To != (Rate{25, time.Second}) || ramp.Timeout.D() != 500*time.Millisecond || !*ramp.HTTP2 {
		t.Errorf("ramp load %+v", ramp)
	}
	if len(spike.Requests) != 1 || spike.Pacer.Steps[1].Rate != (Rate{40, time.Second}) || sc.Load.Rate != (Rate{100, time.Second}) {
		t.Errorf("spike load %+v, base %v", spike, sc.Load.Rate)
	}
	f := sc.Phases[1].Faults
	if on, off := f[0].Window(2 * time.Second); on != 500*time.Millisecond || off != 1500*time.Millisecond {
		t.Errorf("window %v..%v", on, off)
	}
	if on, off := f[1].Window(2 * time.Second); on != 1500*time.Millisecond || off != 2*time.Second {
		t.Errorf("window %v..%v", on, off)
	}
	var seq atomic.Uint64
	gen, err := NewGenerator(ramp, &seq)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 8 {
		q := gen.Next()
		s := q.Target()
		if q.Method == "POST" {
			s += " " + string(q.Body) + " " + q.Headers["X-Req"] + " " + strings.Join(q.Tags, ",")
		}
		got = append(got, s)
	}
	want := []string{"GET /items/1", "GET /items/2", `POST /orders {"item": 3} r-3 write`, "GET /items/3", "GET /items/1", "GET /items/2", `POST /orders {"item": 7} r-7 write`, "GET /items/3"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The spike's generator shares the run's sequence.
	gen2, _ := NewGenerator(spike, &seq)
	seen := map[string]bool{}
	for range 50 {
		seen[gen2.Next().Path] = true
	}
	if len(seen) != 2 || !seen["/search?q=apple"] || !seen["/search?q=pear"] || seq.Load() != 58 {
		t.Errorf("random choice saw %v, seq %d", seen, seq.Load())
	}
}

func TestTemplates(t *testing.T) {
	rnd := func() *Generator {
		g, _ := NewGenerator(Load{Seed: 1, Requests: []RequestSpec{{Method: "GET", Path: "/"}}}, nil)
		return g
	}()
	tests := []struct {
		in   string
		want []string
	}{
		{"/a/{1..2}/b/{x|y}", []string{"/a/1/b/x", "/a/1/b/y", "/a/2/b/x", "/a/2/b/y", "/a/1/b/x"}},
		{"/o/{seq}", []string{"/o/1", "/o/2", "/o/3"}},
		{`{"json": {"kept": true}}`, []string{`{"json": {"kept": true}}`}},
		{"/{-1..1}", []string{"/-1", "/0", "/1"}},
	}
	for _, tt := range tests {
		tpl, err := compileTemplate(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range tt.want {
			if got := tpl.render(uint64(i), uint64(i+1), rnd.rnd, nil); got != w {
				t.Errorf("%s #%d = %q, want %q", tt.in, i, got, w)
			}
		}
	}
	tpl, _ := compileTemplate("/p/{random:5..7}")
	for range 100 {
		got := tpl.render(0, 0, rnd.rnd, nil)
		if got != "/p/5" && got != "/p/6" && got != "/p/7" {
			t.Fatalf("random range gave %q", got)
		}
	}
	if _, err := compileTemplate("/{1..1000}/{1..1001}"); err == nil {
		t.Error("oversized template accepted")
	}
}

func TestWeightsAreExact(t *testing.T) {
	g, err := NewGenerator(Load{Requests: []RequestSpec{{Method: "GET", Path: "/a", Weight: 3}, {Method: "GET", Path: "/b"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for range 400 {
		n[g.Next().Path]++
	}
	if n["/a"] != 300 || n["/b"] != 100 {
		t.Errorf("counts %v, want 300/100", n)
	}
}

func TestRateScale(t *testing.T) {
	for _, tt := range []struct {
		r    Rate
		f    float64
		want Rate
	}{
		{Rate{200, time.Second}, 0.5, Rate{100, time.Second}},
		{Rate{12, 100 * time.Millisecond}, 2, Rate{24, 100 * time.Millisecond}},
		{Rate{1, time.Second}, 0.5, Rate{1, 2 * time.Second}},
		{Rate{3, time.Second}, 1, Rate{3, time.Second}},
	} {
		if got := tt.r.Scale(tt.f); got != tt.want {
			t.Errorf("%v * %v = %v, want %v", tt.r, tt.f, got, tt.want)
		}
	}
}

// TestLongLinesAreShownAroundTheColumn checks an error on a very long line
// shows the part of it around the column, with the caret under it.
func TestLongLinesAreShownAroundTheColumn(t *testing.T) {
	line := strings.Repeat("a", 500) + "X" + strings.Repeat("b", 500)
	e := &Error{File: "s.yaml", Line: 3, Col: 501, Msg: "here", Excerpt: line}
	got := strings.Split(e.Detail(), "\n")
	want := "  3 | …" + strings.Repeat("a", 50) + "X" + strings.Repeat("b", 49) + "…"
	if len(got) != 3 || got[1] != want || got[2] != "    | "+strings.Repeat(" ", 51)+"^" {
		t.Errorf("detail:\n%s\nwant the line as\n%s", strings.Join(got, "\n"), want)
	}
	// Short lines are shown whole.
	e = &Error{File: "s.yaml", Line: 3, Col: 2, Msg: "here", Excerpt: "abc"}
	if d := e.Detail(); !strings.HasSuffix(d, "3 | abc\n    |  ^") {
		t.Errorf("detail:\n%s", d)
	}
}

// TestFieldHintNeverTheNameTyped: a field that is known elsewhere in the
// schema is told where it belongs, never "did you mean" itself.
func TestFieldHintNeverTheNameTyped(t *testing.T) {
	for _, tt := range []struct {
		name string
		here []string
		want string
	}{
		{"settle", []string{"name", "duration", "faults", "load"}, `"settle" is a field of contracts[], not of this mapping`},
		{"durration", []string{"name", "duration"}, `did you mean "duration"?`},
		{"Duration", []string{"name", "duration"}, `did you mean "duration"?`},
		{"zzzzzzzz", []string{"name"}, "see docs/scenarios.md"},
	} {
		got := fieldHint(tt.name, tt.here)
		if got != tt.want && !strings.Contains(got, tt.want) || strings.Contains(got, `"`+tt.name+`"?`) {
			t.Errorf("fieldHint(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestTemplateSelector: requests: {template: NAME} names a template of the
// scenario's load or of a phase's, and a near miss is told the name.
func TestTemplateSelector(t *testing.T) {
	named := strings.Replace(good, "    - path: /products/{1..3}\n", "    - path: /products/{1..3}\n      name: product\n", 1)
	for _, tt := range []struct{ selector, want string }{
		{"product", ""},
		{"prodcut", `s.yaml:21:26: no request template is named "prodcut" (did you mean "product"?)`},
	} {
		src := strings.Replace(named, "    phase: fault\n", "    phase: fault\n    requests: {template: "+tt.selector+"}\n", 1)
		sc, err := Parse("s.yaml", []byte(src), demoCatalog)
		if tt.want == "" {
			if err != nil || sc.Contracts[0].Requests.Template != "product" {
				t.Errorf("%s: %v", tt.selector, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %s", tt.selector, err, tt.want)
		}
	}
}
