package reports

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	xsdvalidate "github.com/terminalstatic/go-xsd-validate"

	"github.com/chaoskit/chaoskit/contract"
)

// brokenRun is a report whose second scenario did not finish: it has a run
// error and no contracts.
func brokenRun(t *testing.T) *Report {
	r := fixtureReport(t)
	broken := ScenarioReport{Name: "orders", File: "scenarios/orders.yaml", RunDir: "orders", Error: "the target exited during phase db-error: exit status 2"}
	broken.Verdict = contract.Overall(nil, errors.New(broken.Error))
	r.Scenarios = append(r.Scenarios, broken)
	r.Verdict = contract.Fail
	return r
}

func TestTable(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTable(&buf, fixtureReport(t), TableOptions{Dir: "out"}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"SCENARIO", "db-timeout +500ms", "fallback(\"cache\") >= 99%", "100% (350/350)",
		`degrade fast: first violation of "time_to_degrade < 100ms": +0s GET /products/2 -> 503 error with ` + fixtureFault + " on",
		"fast while degraded: inconclusive: 400 requests in the window, fewer than min_samples 1000",
		"run dir: out/db-timeout-serves-cache\n",
		"FAIL: 1 scenarios, 4 contracts: 2 passed, 1 failed, 1 inconclusive (10.42s)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour without Color")
	}
	if !strings.HasSuffix(out, Summary(fixtureReport(t))+"\n") {
		t.Error("the summary is not the last line")
	}
	abs := fixtureReport(t)
	abs.Scenarios[0].RunDir = filepath.Join(t.TempDir(), "elsewhere")
	buf.Reset()
	_ = WriteTable(&buf, abs, TableOptions{Dir: "out"})
	if !strings.Contains(buf.String(), "run dir: "+abs.Scenarios[0].RunDir+"\n") {
		t.Errorf("an absolute run dir was not kept:\n%s", buf.String())
	}
	buf.Reset()
	_ = WriteTable(&buf, fixtureReport(t), TableOptions{Color: true})
	if !strings.Contains(buf.String(), "\x1b[31mfail\x1b[0m") || !strings.Contains(buf.String(), "\x1b[32mpass\x1b[0m") {
		t.Errorf("no colour with Color:\n%s", buf.String())
	}
}

// skeletonReport is the report.json schema of the walking skeleton, which
// CI scripts read and which must keep working.
type skeletonReport struct {
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

func TestJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, brokenRun(t)); err != nil {
		t.Fatal(err)
	}
	var old skeletonReport
	if err := json.Unmarshal(buf.Bytes(), &old); err != nil {
		t.Fatal(err)
	}
	c := old.Scenarios[0].Contracts[1]
	if old.Verdict != "fail" || old.Scenarios[0].Name != "db-timeout-serves-cache" || old.Scenarios[0].File == "" ||
		c.Name != "degrade fast" || c.Verdict != "fail" || c.Phase != "db-timeout" || c.Measured != "300ms" || c.Expected != "< 100ms" {
		t.Errorf("walking-skeleton fields = %+v", old)
	}
	if old.Scenarios[1].Verdict != "inconclusive" {
		t.Errorf("broken run verdict = %s", old.Scenarios[1].Verdict)
	}
	var doc map[string]any
	_ = json.Unmarshal(buf.Bytes(), &doc)
	if doc["schema_version"] != 2.0 {
		t.Errorf("schema_version = %v", doc["schema_version"])
	}
	s := doc["scenarios"].([]any)[0].(map[string]any)
	phases := s["phases"].([]any)
	faults := s["faults"].([]any)
	if len(phases) != 3 || phases[1].(map[string]any)["name"] != "db-timeout" || phases[1].(map[string]any)["requests"] != 400.0 {
		t.Errorf("phases = %v", phases)
	}
	if len(faults) != 1 || faults[0].(map[string]any)["on_ns"] != 3e9 || faults[0].(map[string]any)["hits"] != 412.0 {
		t.Errorf("faults = %v", faults)
	}
	v := s["contracts"].([]any)[1].(map[string]any)["checks"].([]any)[0].(map[string]any)["violations"].([]any)[0].(map[string]any)
	if v["class"] != "error" || v["status"] != 503.0 || v["faults"].([]any)[0] != fixtureFault {
		t.Errorf("violation evidence = %v", v)
	}
	if _, ok := s["Series"]; ok {
		t.Error("the chart series leaked into report.json")
	}
}

func TestJUnitValidates(t *testing.T) {
	var buf bytes.Buffer
	r := brokenRun(t)
	r.Scenarios[0].Contracts[1].Position = contract.Position{File: "scenarios/db.yaml", Line: 30, Column: 5}
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	validateJUnit(t, buf.Bytes())

	var got junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Tests != 5 || got.Failures != 1 || got.Errors != 2 || len(got.Suites) != 2 {
		t.Fatalf("totals tests=%d failures=%d errors=%d suites=%d", got.Tests, got.Failures, got.Errors, len(got.Suites))
	}
	s := got.Suites[0]
	if s.Name != "db-timeout-serves-cache" || s.Tests != 4 || s.Time != "10.000" || s.Timestamp != "2026-03-01T12:00:00" {
		t.Errorf("suite = %+v", s)
	}
	fail := s.Cases[1]
	if fail.File != "scenarios/db.yaml" || fail.Line != 30 {
		t.Errorf("failing case at %s:%d, want its contract's scenarios/db.yaml:30", fail.File, fail.Line)
	}
	if fail.Failure == nil || fail.Failure.Message != "time_to_degrade < 100ms: measured 300ms, expected < 100ms" ||
		!strings.Contains(fail.Failure.Text, "+0s GET /products/2 -> 503 error with "+fixtureFault+" on") || fail.Time != "4.000" {
		t.Errorf("failing case = %+v", fail)
	}
	if inc := s.Cases[3]; inc.Error == nil || inc.Error.Type != "inconclusive" || !strings.Contains(inc.Error.Message, "fewer than min_samples 1000") {
		t.Errorf("inconclusive case = %+v", inc)
	}
	if pass := s.Cases[0]; pass.Failure != nil || pass.Error != nil || !strings.Contains(pass.SystemOut, "PASS  stale <= 30s") {
		t.Errorf("passing case = %+v", pass)
	}
	if pass := s.Cases[0]; pass.File != "scenarios/db-timeout-serves-cache.yaml" || pass.Line != 0 {
		t.Errorf("a contract without a position is at %s:%d, want its scenario file", pass.File, pass.Line)
	}
	if run := got.Suites[1].Cases[0]; run.Name != "run" || run.Error == nil || run.Error.Type != "run" || run.File == "" {
		t.Errorf("broken run case = %+v", run)
	}
}

// caseLocation matches a testcase's file or line attribute.
var caseLocation = regexp.MustCompile(`(<testcase [^>]*?) (?:file|line)="[^"]*"`)

// validateJUnit checks a JUnit document against the JUnit schema Jenkins
// uses (testdata/junit-10.xsd). That schema does not name a testcase's
// file and line, which pytest writes and GitLab and GitHub reporters read:
// they are taken out before validating.
func validateJUnit(t *testing.T, doc []byte) {
	t.Helper()
	for caseLocation.Match(doc) {
		doc = caseLocation.ReplaceAll(doc, []byte("$1"))
	}
	schema, err := os.ReadFile(filepath.Join("testdata", "junit-10.xsd"))
	if err != nil {
		t.Fatal(err)
	}
	if err := xsdvalidate.Init(); err != nil {
		t.Fatal(err)
	}
	defer xsdvalidate.Cleanup()
	xsd, err := xsdvalidate.NewXsdHandlerMem(schema, xsdvalidate.ParsErrDefault)
	if err != nil {
		t.Fatal(err)
	}
	defer xsd.Free()
	if err := xsd.ValidateMem(doc, xsdvalidate.ValidErrDefault); err != nil {
		t.Fatalf("JUnit XML does not validate: %v\n%s", err, doc)
	}
}

func TestJUnitSchemaRejects(t *testing.T) {
	// The validation can fail: a testsuite without its required counts is
	// refused.
	bad := []byte(`<?xml version="1.0" encoding="UTF-8"?><testsuites><testsuite name="s"><testcase name="c"/></testsuite></testsuites>`)
	schema, _ := os.ReadFile(filepath.Join("testdata", "junit-10.xsd"))
	if err := xsdvalidate.Init(); err != nil {
		t.Fatal(err)
	}
	defer xsdvalidate.Cleanup()
	xsd, err := xsdvalidate.NewXsdHandlerMem(schema, xsdvalidate.ParsErrDefault)
	if err != nil {
		t.Fatal(err)
	}
	defer xsd.Free()
	if err := xsd.ValidateMem(bad, xsdvalidate.ValidErrDefault); err == nil {
		t.Fatal("the schema accepted a testsuite without tests, failures and errors")
	}
}

func TestMarkdown(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, brokenRun(t)); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, want := range []string{
		"## chaoskit: ❌ FAIL\n",
		"| Scenario | Contract | Window | Check | Measured | Expected | Verdict |",
		"| db-timeout-serves-cache | on DB timeout return cached data | db-timeout +500ms | `fallback(\"cache\") >= 99%` | 100% (350/350) | >= 99% | ✅ pass |",
		"| db-timeout-serves-cache | fast while degraded | db-timeout | `p50 < 5ms` | 695µs | < 5ms | ⚠️ inconclusive |",
		"| orders | – | – | – | – | – | ⚠️ inconclusive |",
		"#### ❌ db-timeout-serves-cache / degrade fast: fail",
		"`time_to_degrade < 100ms`: measured **300ms**, expected < 100ms",
		"| +0s | GET /products/2 | 503 | error | " + fixtureFault + " | – |",
		"Inconclusive: 400 requests in the window, fewer than min_samples 1000.",
		"**orders**: the run failed: the target exited during phase db-error",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	for _, bad := range []string{"](", "http://", "https://", "<a ", "<img", "<br"} {
		if strings.Contains(md, bad) {
			t.Errorf("markdown holds %q (links or HTML)", bad)
		}
	}
	if strings.Contains(md, "#### ✅") {
		t.Error("passing contracts in the evidence")
	}
}

func TestMarkdownEscapesCells(t *testing.T) {
	r := New(t0, []ScenarioReport{{Name: "a|b", Verdict: contract.Pass, Contracts: []contract.Verdict{{Name: "x", Window: "w", Outcome: contract.Pass,
		Checks: []contract.CheckResult{{Expect: `status == 200 || status == 204 for >= 99%`, Outcome: contract.Pass, Measured: "100%", Expected: ">= 99%"}}}}}})
	var buf bytes.Buffer
	_ = WriteMarkdown(&buf, r)
	if !strings.Contains(buf.String(), `| a\|b | x | w | `+"`status == 200 \\|\\| status == 204 for >= 99%`") {
		t.Errorf("pipes not escaped:\n%s", buf.String())
	}
}

func TestParseFormats(t *testing.T) {
	got, err := ParseFormats("html, table,json,JUNIT,md,json")
	if err != nil || !slices.Equal(got, []Format{HTML, Table, JSON, JUnit, Markdown}) {
		t.Errorf("ParseFormats = %v, %v", got, err)
	}
	for _, bad := range []string{"pdf", "", " , "} {
		if _, err := ParseFormats(bad); err == nil {
			t.Errorf("ParseFormats(%q) accepted", bad)
		}
	}
}

func TestWriteAllFormats(t *testing.T) {
	dir := t.TempDir()
	var table bytes.Buffer
	paths, err := Write(dir, &table, fixtureReport(t), Formats, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{FileJSON, FileJUnit, FileMarkdown, FileHTML}
	if len(paths) != len(want) {
		t.Fatalf("wrote %v", paths)
	}
	for i, p := range paths {
		st, err := os.Stat(p)
		if err != nil || filepath.Base(p) != want[i] || st.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
	if !strings.Contains(table.String(), "run dir: "+filepath.Join(dir, "db-timeout-serves-cache")) {
		t.Errorf("table:\n%s", table.String())
	}
	paths, _ = Write(dir, &table, fixtureReport(t), DefaultFormats, Options{})
	if len(paths) != 1 || filepath.Base(paths[0]) != FileJSON {
		t.Errorf("default formats wrote %v", paths)
	}
}

func TestSummaryDurationRounds(t *testing.T) {
	r := New(t0, nil)
	r.Duration = 1234567 * time.Microsecond
	if s := Summary(r); s != "INCONCLUSIVE: 0 scenarios, 0 contracts: 0 passed, 0 failed, 0 inconclusive (1.23s)" {
		t.Errorf("Summary = %q", s)
	}
}

// TestSummaryOfAnInterruptedRun: the counts of a run stopped by a signal
// are of what ran before the stop, and the line says so first, never
// "INCONCLUSIVE: … 1 passed, 0 inconclusive" alone.
func TestSummaryOfAnInterruptedRun(t *testing.T) {
	r := New(t0, []ScenarioReport{{Name: "s", Verdict: contract.Inconclusive, Error: "run interrupted: interrupt received",
		Contracts: []contract.Verdict{{Outcome: contract.Pass}}}})
	r.Duration = 3 * time.Second
	r.Interrupted = "interrupt received"
	want := "INTERRUPTED (interrupt received), inconclusive before it: 1 scenarios, 1 contracts: 1 passed, 0 failed, 0 inconclusive (3s)"
	if s := Summary(r); s != want {
		t.Errorf("Summary =\n %q\nwant\n %q", s, want)
	}
}

// failAfter accepts n bytes and fails every write after them, as a disk
// that fills up does.
type failAfter struct {
	w io.Writer
	n int
}

var errDiskFull = errors.New("no space left on device")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n, _ := f.w.Write(p[:f.n])
		f.n = 0
		return n, errDiskFull
	}
	f.n -= len(p)
	return f.w.Write(p)
}

func TestWriteFailureKeepsTheOldFileAndShowsNoVerdict(t *testing.T) {
	dir := t.TempDir()
	old := []byte(`{"schema_version": 2, "verdict": "fail"}` + "\n")
	if err := os.WriteFile(filepath.Join(dir, FileJSON), old, 0o644); err != nil {
		t.Fatal(err)
	}
	// The JSON report fails after 100 bytes: the old file stays whole, no
	// temporary file is left, and the table with its verdict line is not
	// printed.
	_, err := writeFile(dir, FileJSON, fixtureReport(t), func(w io.Writer, r *Report) error {
		return WriteJSON(&failAfter{w: w, n: 100}, r)
	})
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("writeFile error %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, FileJSON)); !bytes.Equal(got, old) {
		t.Errorf("report.json after a failed write:\n%s", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files left: %v", entries)
	}

	// A report directory that cannot take files: Write fails before the
	// table.
	notDir := filepath.Join(dir, "file")
	os.WriteFile(notDir, nil, 0o644)
	var table bytes.Buffer
	if _, err := Write(notDir, &table, fixtureReport(t), []Format{Table, JSON}, Options{}); err == nil || !strings.Contains(err.Error(), "json report") {
		t.Fatalf("Write into a file: %v", err)
	}
	if table.Len() != 0 {
		t.Errorf("the table was printed although report.json was not written:\n%s", table.String())
	}
}
