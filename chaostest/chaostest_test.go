package chaostest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a testing.TB that records what Run reports instead of
// failing: the real test lends it TempDir, Context and the rest.
type recorder struct {
	testing.TB
	mu                   sync.Mutex
	errors, fatals, logs []string
}

func (r *recorder) Helper() {}

func (r *recorder) add(to *[]string, s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*to = append(*to, s)
}

func (r *recorder) Errorf(format string, args ...any) { r.add(&r.errors, fmt.Sprintf(format, args...)) }

// Fatalf records; unlike testing.T's it returns, and Run must return
// right after it.
func (r *recorder) Fatalf(format string, args ...any) { r.add(&r.fatals, fmt.Sprintf(format, args...)) }
func (r *recorder) Logf(format string, args ...any)   { r.add(&r.logs, fmt.Sprintf(format, args...)) }
func (r *recorder) Log(args ...any)                   { r.add(&r.logs, fmt.Sprint(args...)) }

// items is a service of items: with broken set, every fourth item fails
// with 503.
func items(broken bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {})
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.PathValue("id"))
		if broken && id%4 == 0 {
			http.Error(w, "store unavailable", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, `{"id": %d}`, id)
	})
	return mux
}

// position is file:line:col of the first text in file.
func position(t *testing.T, file, text string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		if col := strings.Index(line, text); col >= 0 {
			return fmt.Sprintf("%s:%d:%d", file, i+1, col+1)
		}
	}
	t.Fatalf("%s holds no %q", file, text)
	return ""
}

// Against a handler served in the test: the correct one passes with
// nothing reported but the table in the log; the broken one fails the
// test once per failed check, each naming the contract's position, the
// check, its figures and the first violating request.
func TestRunAgainstAHandler(t *testing.T) {
	const file = "testdata/items.yaml"
	at := position(t, file, "name: reads succeed")
	for _, tt := range []struct {
		name   string
		broken bool
		errors []string
	}{
		{"correct", false, nil},
		{"broken", true, []string{
			at + ": items / reads succeed: status == 200 for >= 99%: measured 7",
			at + ": items / reads succeed: status < 500 for >= 99%: measured 7",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &recorder{TB: t}
			rep := Run(r, file, Target{Handler: items(tt.broken)}, RateScale(0.5))
			if len(r.fatals) > 0 || rep == nil {
				t.Fatalf("Run failed before judging: %q", r.fatals)
			}
			if len(r.errors) != len(tt.errors) {
				t.Fatalf("%d t.Errorf calls, want %d: %q", len(r.errors), len(tt.errors), r.errors)
			}
			for i, want := range tt.errors {
				got := r.errors[i]
				if !strings.HasPrefix(got, want) || !strings.Contains(got, ", expected >= 99% (") || !strings.Contains(got, "; first violation: +") || !strings.Contains(got, "-> 503") {
					t.Errorf("t.Errorf %d:\n got %s\nwant %s…, expected >= 99%% (N samples); first violation: +… GET /items/… -> 503", i, got, want)
				}
			}
			logs := strings.Join(r.logs, "\n")
			for _, want := range []string{"items (" + file + ") [1/1]", "│ SCENARIO", "reads succeed", "reads answer"} {
				if !strings.Contains(logs, want) {
					t.Errorf("log lacks %q:\n%s", want, logs)
				}
			}
			if verdict := map[bool]string{false: "pass", true: "fail"}[tt.broken]; string(rep.Verdict) != verdict {
				t.Errorf("verdict %s, want %s", rep.Verdict, verdict)
			}
		})
	}
}

// A target that cannot serve the scenario fails the test before any load,
// saying what is wrong and what would be right; so does a scenario that
// does not load.
func TestRunRefuses(t *testing.T) {
	faults := "testdata/items-faults.yaml"
	at := position(t, faults, "point: store/query")
	src, err := os.ReadFile("testdata/items.yaml")
	if err != nil {
		t.Fatal(err)
	}
	allowing := filepath.Join(t.TempDir(), "items-allow.yaml")
	if err := os.WriteFile(allowing, append([]byte("allow_hosts: [192.0.2.1]\n"), src...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		file   string
		target Target
		opts   []Option
		want   []string
	}{
		{"failpoint faults on a handler", faults, Target{Handler: items(false)}, nil,
			[]string{at + `: phase "store-down" switches the failpoint fault store/query (error), and a handler served in the test has no failpoint control endpoint (run the service as a Command`,
				"inject.ControlHandler on loopback", "\n  18 |       - point: store/query\n  "}},
		{"failpoint faults on a URL", faults, Target{URL: "http://127.0.0.1:1"}, nil,
			[]string{at + `: phase "store-down" switches the failpoint fault store/query (error), and the service at http://127.0.0.1:1 has no failpoint control endpoint (give Failpoints`}},
		{"the bundled demo as it is", "../scenarios/db-timeout-serves-cache.yaml", Target{}, nil,
			[]string{"chaostest.Target: ../scenarios/db-timeout-serves-cache.yaml: the scenario's target is chaoskit's bundled demo", `"demo", "serve"`}},
		{"handler and URL", "testdata/items.yaml", Target{Handler: items(false), URL: "http://127.0.0.1:1"}, nil, []string{"give Handler, or Command with URL, or URL alone"}},
		{"command without URL", "testdata/items.yaml", Target{Command: []string{"./server"}}, nil, []string{"Command needs URL"}},
		{"env without command", "testdata/items.yaml", Target{URL: "http://127.0.0.1:1", Env: map[string]string{"A": "b"}}, nil, []string{"Env and Dir are the Command's"}},
		{"failpoints alone", "testdata/items.yaml", Target{Failpoints: "127.0.0.1:1"}, nil, []string{"Failpoints without a service"}},
		{"not loopback", "testdata/items.yaml", Target{URL: "http://192.0.2.1:80"}, nil, []string{`URL: "192.0.2.1" is not a loopback address`}},
		{"AllowHosts without the scenario's allow_hosts", "testdata/items.yaml", Target{URL: "http://192.0.2.1:80"}, []Option{AllowHosts("192.0.2.1")},
			[]string{`URL: "192.0.2.1" is not a loopback address`, "allow_hosts"}},
		{"allow_hosts without AllowHosts", allowing, Target{URL: "http://192.0.2.1:80"}, nil,
			[]string{allowing + ":1:15: allow_hosts: 192.0.2.1 is not allowed by the command"}},
		{"a port chaoskit does not pick", "testdata/items.yaml", Target{URL: "http://127.0.0.1:{port}"}, nil, []string{"{port} in URL or Failpoints is filled only for a Command"}},
		{"no rate", "testdata/items.yaml", Target{Handler: items(false)}, []Option{RateScale(0)}, []string{"chaostest.RateScale(0): give a factor above 0"}},
		{"a scenario that does not load", "testdata/items.yaml", Target{Handler: items(false)}, []Option{RateScale(1e5)},
			[]string{position(t, "testdata/items.yaml", "100/s") + ": rate 100/s × --rate-scale 100000", " |   rate: 100/s\n"}},
		{"a variable no scenario has", "testdata/items.yaml", Target{Handler: items(false)}, []Option{Vars(map[string]string{"rate": "1/s"})},
			[]string{`no scenario declares or uses variable "rate"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			if rep := Run(r, tt.file, tt.target, tt.opts...); rep != nil || len(r.fatals) != 1 || len(r.errors) != 0 {
				t.Fatalf("report %v, t.Fatalf %q, t.Errorf %q; want one t.Fatalf", rep, r.fatals, r.errors)
			}
			for _, want := range tt.want {
				if !strings.Contains(r.fatals[0], want) {
					t.Errorf("t.Fatalf lacks %q:\n%s", want, r.fatals[0])
				}
			}
			if strings.Contains(strings.Join(r.logs, "\n"), "[1/1]") {
				t.Errorf("a run started: %q", r.logs)
			}
		})
	}
}

// chaoskit is a fault-injection build of chaoskit, CHAOSKIT_BIN (make
// test passes bin/chaoskit). Without one the test is skipped, and under
// CI=1 it fails.
func chaoskit(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the demo as a process; runs without -short")
	}
	bin := os.Getenv("CHAOSKIT_BIN")
	if bin == "" {
		msg := "no CHAOSKIT_BIN: make build, then CHAOSKIT_BIN=$PWD/bin/chaoskit go test ./chaostest"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// Against the demo as a process the test names, a fault-injection build
// with its failpoints switched by chaoskit: the bundled scenario passes on
// the correct demo and fails the test on the one without a fallback.
func TestRunAgainstTheDemo(t *testing.T) {
	bin := chaoskit(t)
	const file = "../scenarios/db-timeout-serves-cache.yaml"
	at := position(t, file, "name: on DB timeout return cached data")
	for _, tt := range []struct {
		name   string
		args   []string
		failed []string
	}{
		{"correct", nil, nil},
		{"no fallback", []string{"--no-fallback"}, []string{`status == 200 for >= 99%`, `header("X-Chaoskit-Source") == "cache" for >= 99%`, `body == baseline("warmup") for >= 99%`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &recorder{TB: t}
			dir := t.TempDir()
			argv := append([]string{bin, "demo", "serve", "--listen", "127.0.0.1:{port}"}, tt.args...)
			rep := Run(r, file, Target{Command: argv, URL: "http://127.0.0.1:{port}"}, RateScale(0.5), ReportDir(dir))
			if len(r.fatals) > 0 || rep == nil {
				t.Fatalf("Run failed before judging: %q", r.fatals)
			}
			if len(r.errors) != len(tt.failed) {
				t.Fatalf("%d t.Errorf calls, want %d:\n%s\nlog:\n%s", len(r.errors), len(tt.failed), strings.Join(r.errors, "\n"), strings.Join(r.logs, "\n"))
			}
			for i, check := range tt.failed {
				if want := at + ": db-timeout-serves-cache / on DB timeout return cached data: " + check + ": measured "; !strings.HasPrefix(r.errors[i], want) {
					t.Errorf("t.Errorf %d:\n got %s\nwant %s…", i, r.errors[i], want)
				}
			}
			// The fault was switched in the process chaoskit started.
			if f := rep.Scenarios[0].Faults; len(f) != 1 || !strings.HasSuffix(f[0].Point, "store/productQuery") {
				t.Errorf("faults = %+v", f)
			}
			if _, err := os.Stat(filepath.Join(dir, "report.json")); err != nil {
				t.Errorf("ReportDir: %v", err)
			}
		})
	}
}

// docs/go-test.md shows testdata/items.yaml as it is, and the line its
// failures name.
func TestDocsShowTheScenario(t *testing.T) {
	doc, err := os.ReadFile("../docs/go-test.md")
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile("testdata/items.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```yaml\n"+string(file)+"```") {
		t.Errorf("docs/go-test.md does not show testdata/items.yaml as it is:\n%s", file)
	}
	if at := position(t, "testdata/items.yaml", "name: reads succeed"); !strings.Contains(string(doc), at+": items / reads succeed: status == 200") {
		t.Errorf("docs/go-test.md does not name the contract at %s", at)
	}
	if at := position(t, "testdata/items-faults.yaml", "point: store/query"); !strings.Contains(string(doc), at+`: phase "store-down" switches`) {
		t.Errorf("docs/go-test.md does not name the fault at %s", at)
	}
}
