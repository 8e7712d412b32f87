package plan

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/internal/reach"
)

var demoCatalog = Options{Catalog: func(Target, *reach.Policy) (*inject.Catalog, error) {
	return inject.NewCatalog("github.com/chaoskit/chaoskit/demo/store/productQuery", "github.com/chaoskit/chaoskit/demo/store/orderWrite", "github.com/chaoskit/chaoskit/demo/recommend/recommendationsCall", "github.com/chaoskit/chaoskit/demo/recommend/recommendationsGRPC"), nil
}}

func TestLoadBundledWalkingSkeletonScenario(t *testing.T) {
	sc, err := LoadFile("../scenarios/db-timeout-serves-cache.yaml", demoCatalog)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "db-timeout-serves-cache" || sc.Load.Rate != (Rate{200, time.Second}) || sc.Load.Timeout.D() != time.Second {
		t.Errorf("decoded %+v", sc)
	}
	if sc.Target.Demo == nil || len(sc.Target.Demo.Args) != 1 || sc.Target.Demo.Args[0] != "--db-timeout=100ms" {
		t.Errorf("demo args = %#v, want [--db-timeout=100ms], the var db_timeout filled in", sc.Target.Demo)
	}
	f := sc.Phases[1].Faults[0]
	if f.Path != "github.com/chaoskit/chaoskit/demo/store/productQuery" || f.Term != `return("github.com/chaoskit/chaoskit/demo/store/productQuery|timeout")` {
		t.Errorf("fault resolved to %q term %q", f.Path, f.Term)
	}
	if c := sc.Contracts[0]; c.Settle.D() != 500*time.Millisecond || len(c.Expect) != 3 {
		t.Errorf("contract %+v", c)
	}
	gen, err := NewGenerator(sc.Phases[0].Effective, nil)
	if err != nil {
		t.Fatal(err)
	}
	var last Request
	for range 50 {
		last = gen.Next()
	}
	if last.Target() != "GET /products/50" || gen.Next().Target() != "GET /products/1" {
		t.Errorf("50th request %v; the walk must go 1..50 and start again", last)
	}
}

func TestBundledScenariosLoad(t *testing.T) {
	scs, err := Bundled(demoCatalog)
	if err != nil {
		t.Fatal(err)
	}
	if len(scs) == 0 {
		t.Fatal("no bundled scenarios")
	}
}

const good = `name: s
target:
  demo:
    args: []
load:
  rate: 10/s
  requests:
    - path: /products/{1..3}
phases:
  - name: warmup
    duration: 1s
  - name: fault
    duration: 2s
    faults:
      - point: productQuery
        action: error
contracts:
  - name: c
    phase: fault
    expect:
      - status == 200 for >= 99%
`

// TestErrors checks each kind of bad input gives file:line:col and a hint.
func TestErrors(t *testing.T) {
	tests := []struct {
		name, from, to string
		want           string
	}{
		{"unknown field with hint", "    duration: 2s", "    durration: 2s", `s.yaml:13:5: unknown field "durration" (did you mean "duration"?)`},
		{"type error", "  rate: 10/s", "  rate: [10]", `s.yaml:6:9: a rate must be a plain value (write it like 200/s or 12/100ms)`},
		{"bad rate", "  rate: 10/s", "  rate: ten/s", `s.yaml:6:9: bad rate "ten/s": the count must be a positive integer`},
		{"bad duration", "    duration: 1s", "    duration: 1", `s.yaml:11:15: bad duration "1" (add a unit: 1s or 1ms)`},
		{"wrong scalar type", "    - path: /products/{1..3}", "    - path: /products/{1..3}\n      method: GET\n      headers: 3", `s.yaml:10:16: int was used where mapping is expected`},
		{"yaml syntax", "name: s", "name: [s", `s.yaml:2:1:`},
		{"duplicate phase", "  - name: fault", "  - name: warmup", `s.yaml:12:11: phase name "warmup" is used twice`},
		{"unknown action", "action: error", "action: timout", `s.yaml:16:17: unknown fault action "timout" (did you mean "timeout"?)`},
		{"unknown point", "point: productQuery", "point: productQuerry", `s.yaml:15:16: unknown failpoint "productQuerry" (did you mean "productQuery"?)`},
		{"missing phase", "phase: fault", "phase: faults", `s.yaml:19:12: contract "c" names phase "faults", which the scenario does not have (did you mean "fault"?)`},
		{"bad predicate column", "status == 200 for", `statsu == 200 for`, `s.yaml:21:9: unknown name statsu`},
		{"type mismatch column", "status == 200 for", `status == "x" for`, `s.yaml:21:16: invalid operation`},
		{"no quantifier", "status == 200 for >= 99%", "status == 200", `s.yaml:21:9: expectation "status == 200" has no quantifier`},
		{"not loopback", "  demo:\n    args: []", "  url: http://10.1.2.3:8080", `s.yaml:3:8: "10.1.2.3" is not a loopback address`},
		{"bad path template", "/products/{1..3}", "/products/{3..1}", `s.yaml:8:13: template {3..1} in "/products/{3..1}": a range must go from low to high`},
		{"bad probability", "action: error", "action: error\n        probability: 2", `s.yaml:17:22: probability 2 is outside 0..1`},
		{"probability not a number", "action: error", "action: error\n        probability: .nan", `s.yaml:17:22: probability NaN is outside 0..1`},
		{"bad fault value", "action: error", "action: latency\n        value: soon", `s.yaml:17:16: latency value "soon" is not a positive duration`},
		{"fault value", "action: error", "action: latency", `s.yaml:16:17: action latency needs a value`},
		{"bad grpc code", "action: error", "action: grpc\n        value: UNAVAILIBLE", `s.yaml:17:16: grpc value "UNAVAILIBLE" is not a gRPC status code; the codes are CANCELLED, UNKNOWN`},
		{"grpc without code", "action: error", "action: grpc", `s.yaml:16:17: action grpc needs a value, a gRPC status code such as UNAVAILABLE`},
		{"p99 below the median", "action: error", "action: latency\n        distribution: {type: lognormal, median: 20ms, p99: 10ms}", `s.yaml:17:60: p99 10ms is not above the median 20ms (a p99 above the median 20ms; for one delay, write type: fixed)`},
		{"negative duration", "action: error", "action: latency\n        distribution: {type: normal, mean: 20ms, stddev: -5ms}", `s.yaml:17:58: duration "-5ms" is negative (a duration is 0 or more, such as 20ms)`},
		{"unknown distribution", "action: error", "action: latency\n        distribution: {type: lognormel, median: 20ms, p99: 200ms}", `s.yaml:17:30: unknown distribution "lognormel" (did you mean "lognormal"?)`},
		{"setting of another distribution", "action: error", "action: latency\n        distribution: {type: uniform, min: 20ms, p99: 200ms}", `s.yaml:17:55: p99 is not a setting of a uniform distribution (a uniform distribution takes min and max)`},
		{"histogram file missing", "action: error", "action: latency\n        distribution: {type: histogram, file: nosuch.txt}", `s.yaml:17:47: cannot read histogram file nosuch.txt: no such file or directory (the path is relative to the scenario file)`},
		{"distribution on an error fault", "action: error", "action: error\n        distribution: {type: fixed, value: 1s}", `s.yaml:17:23: action error takes no distribution; only latency faults do (remove it, or write action: latency)`},
		{"value and distribution", "action: error", "action: latency\n        value: 1s\n        distribution: {type: fixed, value: 1s}", `s.yaml:17:16: a latency fault takes a value or a distribution, not both (remove value; the distribution gives the delay)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(good, tt.from, tt.to, 1)
			if src == good {
				t.Fatalf("replacement %q not applied", tt.from)
			}
			_, err := Parse("s.yaml", []byte(src), demoCatalog)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
			if !IsInvalid(err) {
				t.Errorf("IsInvalid(%v) = false", err)
			}
		})
	}
}

func TestGoodParses(t *testing.T) {
	sc, err := Parse("s.yaml", []byte(good), demoCatalog)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Load.Timeout.D() != defaultTimeout || sc.Load.Requests[0].Method != "GET" || sc.Target.Hits != inject.HitsPath {
		t.Errorf("defaults not applied: %+v", sc.Load)
	}
}

func TestAllErrorsReportedTogether(t *testing.T) {
	src := strings.NewReplacer("action: error", "action: timout", "phase: fault", "phase: nope").Replace(good)
	_, err := Parse("s.yaml", []byte(src), demoCatalog)
	var l ErrorList
	if !errors.As(err, &l) || len(l) != 2 || l[0].Line > l[1].Line {
		t.Fatalf("err = %v, want two errors in line order", err)
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]Rate{"200/s": {200, time.Second}, "12/100ms": {12, 100 * time.Millisecond}, "50": {50, time.Second}, "3/m": {3, time.Minute}, "5/2s": {5, 2 * time.Second}} {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0/s", "-1/s", "1/", "1/x", "1/-2s"} {
		if _, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) accepted", in)
		}
	}
}

func TestLoadAllCollectsAndRejectsDuplicates(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.yaml", "b.yml"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(good), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := LoadAll([]string{dir}, demoCatalog)
	if err == nil || !strings.Contains(err.Error(), `scenario name "s" is already used`) {
		t.Errorf("err = %v", err)
	}
	if _, err := LoadAll([]string{filepath.Join(dir, "missing.yaml")}, demoCatalog); err == nil || !IsInvalid(err) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := LoadAll([]string{t.TempDir()}, demoCatalog); err == nil || !strings.Contains(err.Error(), "holds no scenario files") {
		t.Errorf("empty dir: %v", err)
	}
}

func TestCheckLoopback(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:8080", "127.0.0.2:9", "http://[::1]:80/x", "localhost:80"} {
		if err := CheckLoopback(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://10.0.0.1", "example.com:80", "http://0.0.0.0:80", "::::"} {
		if err := CheckLoopback(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestEveryErrorInOnePass checks that the problems of a file come in one
// list, sorted by position, and only once each: unknown fields, values that
// do not decode, variables without a value, unknown failpoints and
// expressions that do not compile, where the decoder alone stopped at the
// first.
func TestEveryErrorInOnePass(t *testing.T) {
	src := strings.NewReplacer(
		"  rate: 10/s", "  rate: 10/s\n  timout: 1s",
		"    - path: /products/{1..3}", "    - path: /products/{1..3}\n      weight: 1${w}",
		"    duration: 1s", "    duration: 1",
		"point: productQuery", "point: productQuerry",
		"status == 200 for", "statsu == 200 for",
	).Replace(good) + "---\nname: second\n"
	_, err := Parse("s.yaml", []byte(src), demoCatalog)
	want := []string{
		`s.yaml:7:3: unknown field "timout" (did you mean "timeout"?)`,
		`s.yaml:10:16: variable ${w} has no value`,
		`s.yaml:13:15: bad duration "1" (add a unit: 1s or 1ms)`,
		`s.yaml:17:16: unknown failpoint "productQuerry" (did you mean "productQuery"?)`,
		`s.yaml:23:9: unknown name statsu`,
		`s.yaml:24:1: a second YAML document starts here; a scenario file holds one`,
	}
	var l ErrorList
	if !errors.As(err, &l) {
		t.Fatalf("err = %v", err)
	}
	if len(l) != len(want) {
		t.Fatalf("%d errors, want %d:\n%v", len(l), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(l[i].Error(), w) {
			t.Errorf("error %d = %s\nwant %s...", i+1, l[i], w)
		}
	}
}

// TestMultipleDocumentsAreRefused checks a file holding a second document
// is refused at the line that starts it, and that a lone --- at the end
// is not a document.
func TestMultipleDocumentsAreRefused(t *testing.T) {
	for _, tt := range []struct{ tail, want string }{
		{"---\nname: other\n", "s.yaml:22:1: a second YAML document starts here"},
		{"...\n---\nname: other\n", "s.yaml:23:1: a second YAML document starts here"},
		{"---\n", ""},
	} {
		_, err := Parse("s.yaml", []byte(good+tt.tail), demoCatalog)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tt.tail, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v\nwant %s", tt.tail, err, tt.want)
		}
	}
}

// TestNamesAreOnePathElement checks every name that would not make a new
// directory inside the report directory is refused, with a name that would.
func TestNamesAreOnePathElement(t *testing.T) {
	tests := []struct {
		name, want string
	}{
		{`..`, `scenario name ".." names a directory that already exists (the name becomes the run directory's name: use one path element such as "my-scenario")`},
		{`.`, `scenario name "." names a directory that already exists`},
		{`../etc`, `scenario name "../etc" holds a path separator (the name becomes the run directory's name: use one path element such as "etc")`},
		{`a/b`, `scenario name "a/b" holds a path separator (the name becomes the run directory's name: use one path element such as "a-b")`},
		{`a\\b`, `scenario name "a\\b" holds a path separator`},
		{`a\0b`, `scenario name "a\x00b" holds a control character (the name becomes the run directory's name: use one path element such as "a-b")`},
		{`a\tb`, `holds a control character`},
		{`a\u0085b`, `holds a control character`},
		{strings.Repeat("n", 101), `scenario name is 101 bytes long, more than 100`},
		{` padded`, `scenario name " padded" starts or ends with a space (the name becomes the run directory's name: use one path element such as "padded")`},
		{``, `scenario has no name (add name: my-scenario)`},
		{strings.Repeat("n", 100), ``},
		{`db timeout, cached (v2)`, ``},
		{`a..b`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseGood(t, "name: s", `name: "`+tt.name+`"`, Options{})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "s.yaml:1:") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestRatesWithinReach checks rates no machine can attempt, and
// --rate-scale factors that are not numbers above 0, are refused at load.
func TestRatesWithinReach(t *testing.T) {
	tests := []struct {
		name, from, to string
		scale          float64
		want           string
	}{
		{"a billion a second", "  rate: 10/s", "  rate: 1000000000/s", 0, `s.yaml:6:9: rate 1000000000/s is 1000000000 requests a second, more than the 1000000/s chaoskit can attempt`},
		{"per nanosecond", "  rate: 10/s", "  rate: 1/1ns", 0, `rate 1/1ns is 1000000000 requests a second`},
		{"the ceiling itself", "  rate: 10/s", "  rate: 1000000/s", 0, ``},
		{"after --rate-scale", "  rate: 10/s", "  rate: 1000/s", 2000, `s.yaml:6:9: rate 1000/s × --rate-scale 2000 is 2000000 requests a second`},
		{"a phase's own rate", "    duration: 1s\n", "    duration: 1s\n    load: {rate: 2000000/s}\n", 0, `s.yaml:12:18: rate 2000000/s is 2000000 requests a second`},
		{"a pacer's peak", "  rate: 10/s", "  pacer: {linear: {from: 1/s, to: 5000000/s}}", 0, `s.yaml:6:10: the pacer's peak rate is 5000000 requests a second`},
		{"a sine's peak", "  rate: 10/s", "  pacer: {sine: {mean: 900000/s, amplitude: 200000/s, period: 1s}}", 0, `the pacer's peak rate is 1100000 requests a second`},
		{"NaN", "name: s", "name: s", math.NaN(), `--rate-scale: factor NaN is not a number from 0.0001 to 1e+06 (give a factor such as 0.5 or 2)`},
		{"Inf", "name: s", "name: s", math.Inf(1), `--rate-scale: factor +Inf is not a number from 0.0001 to 1e+06`},
		{"negative", "name: s", "name: s", -1, `--rate-scale: factor -1 is not a number from 0.0001 to 1e+06`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(good, tt.from, tt.to, 1)
			_, err := Parse("s.yaml", []byte(src), Options{Catalog: demoCatalog.Catalog, RateScale: tt.scale})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !IsInvalid(err) {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
	for _, f := range []float64{1e-300, 1e300} {
		if _, err := LoadAll([]string{"../scenarios/db-timeout-serves-cache.yaml"}, Options{RateScale: f}); err == nil || !strings.HasPrefix(err.Error(), "--rate-scale: ") {
			t.Errorf("LoadAll with --rate-scale %v: %v", f, err)
		}
	}
	// LoadAll checks the factor once, before any file.
	if _, err := LoadAll([]string{"../scenarios/db-timeout-serves-cache.yaml"}, Options{RateScale: math.NaN()}); err == nil || !strings.HasPrefix(err.Error(), "--rate-scale: ") {
		t.Errorf("LoadAll with NaN: %v", err)
	}
}

// TestWhatRunWouldRefuse checks the loader refuses what would only fail
// when the run starts the target: a demo flag the demo does not know, and a
// NUL in an argument, an environment value or a directory.
func TestWhatRunWouldRefuse(t *testing.T) {
	demoArgs := func(args []string) error {
		for _, a := range args {
			if a != "--no-fallback" {
				return errors.New("unknown flag: " + a)
			}
		}
		return nil
	}
	if old, ok := profiles.Load("demo"); ok {
		t.Cleanup(func() { profiles.Store("demo", old) })
	} else {
		t.Cleanup(func() { profiles.Delete("demo") })
	}
	RegisterProfile(Profile{Name: "demo", CheckArgs: demoArgs})
	cmd := "  command: {argv: [./svc, --listen, \"127.0.0.1:{port}\"], env: {A: b}, dir: .}\n  url: http://127.0.0.1:{port}\n  points: [github.com/chaoskit/chaoskit/demo/store/productQuery]"
	tests := []struct {
		name, from, to, want string
	}{
		{"known demo flag", "args: []", "args: [--no-fallback]", ""},
		{"unknown demo flag", "args: []", "args: [--no-such-flag]", `s.yaml:4:11: demo args ["--no-such-flag"]: unknown flag: --no-such-flag (chaoskit demo serve --help says what each flag does)`},
		{"NUL in a demo arg", "args: []", `args: ["--no-fallback\0"]`, `s.yaml:4:12: "--no-fallback\x00" holds a NUL character`},
		{"NUL in argv", "  demo:\n    args: []", strings.Replace(cmd, "./svc", `"./s\0vc"`, 1), `s.yaml:3:20: "./s\x00vc" holds a NUL character, which no program can be given`},
		{"NUL in env", "  demo:\n    args: []", strings.Replace(cmd, "A: b", `A: "b\0"`, 1), `holds a NUL character`},
		{"NUL in a name of env", "  demo:\n    args: []", strings.Replace(cmd, "A: b", `"A\0": b`, 1), `environment variable name "A\x00" is not valid`},
		{"NUL in dir", "  demo:\n    args: []", strings.Replace(cmd, "dir: .", `dir: "a\0"`, 1), `holds a NUL character`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseGood(t, tt.from, tt.to, Options{})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestLoadAllKeepsTheOrderGiven: run b.yaml a.yaml runs b first; a
// directory's files come in name order where the directory is named.
func TestLoadAllKeepsTheOrderGiven(t *testing.T) {
	dir := t.TempDir()
	write := func(path, name string) string {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(good, "name: s\n", "name: "+name+"\n", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	b := write(filepath.Join(dir, "b.yaml"), "b")
	a := write(filepath.Join(dir, "a.yaml"), "a")
	write(filepath.Join(dir, "sub", "d.yaml"), "d")
	write(filepath.Join(dir, "sub", "c.yaml"), "c")
	scs, err := LoadAll([]string{b, filepath.Join(dir, "sub"), a, b}, demoCatalog)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sc := range scs {
		names = append(names, sc.Name)
	}
	if got := strings.Join(names, " "); got != "b c d a" {
		t.Errorf("loaded %s, want b c d a", got)
	}
}
