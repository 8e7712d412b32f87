package harness

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/fuzz/trials"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/timeline"
)

// oneJudgeScenario has contracts of every kind the judge streams: shares
// of classes and sources, a percentile, a predicate over baseline bodies,
// a status shift, a time to degrade, a whole-run window and a filtered one.
// Some pass and some fail on oneJudgeRun's run.
const oneJudgeScenario = `name: onejudge
target:
  demo:
    args: []
load:
  rate: 200/s
  requests:
    - path: /products/{1..5}
      tags: [read]
phases:
  - name: warmup
    duration: 1s
  - name: fault
    duration: 1s
    faults:
      - point: productQuery
        action: timeout
contracts:
  - name: the cache serves
    phase: fault
    expect:
      - fallback("cache") >= 85%
  - name: the copies are the data
    phase: fault
    expect:
      - body == baseline("warmup") for >= 85%
  - name: reads stay fast
    phase: fault
    expect:
      - p99 latency < 50ms
  - name: the switch is quick
    phase: fault
    expect:
      - time_to_degrade < 500ms
  - name: no status shift
    phase: fault
    expect:
      - status_shift("5xx") <= 5%
  - name: every read answered
    expect:
      - status == 200 for >= 99%
  - name: tagged reads in the warmup
    phase: warmup
    requests: {tag: read}
    expect:
      - primary >= 99%
      - p50 latency < 10ms
classify:
  source_header: X-Served-From
`

// oneJudgeRun writes the run of oneJudgeScenario into dir, or the part of
// it that shard i of n sent (n 0: the whole run). In the fault phase one
// read in ten gets a slow 503 and the others a copy from the cache; hits
// is what the fault's marker counted (0: it never fired).
func oneJudgeRun(t *testing.T, dir string, i, n int, hits int64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, timeline.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	meta := timeline.Meta{Scenario: "onejudge", File: filepath.Join(dir, "gone.yaml"), Start: t0}
	if n > 0 {
		meta.Shard = fmt.Sprintf("%d/%d", i, n)
	}
	w := timeline.NewWriter(f)
	must(w.Meta(meta))
	switches := n == 0 || i == 1
	const perPhase = 200
	seq := uint64(0)
	for k, phase := range []string{"warmup", "fault"} {
		start := t0.Add(time.Duration(k) * time.Second)
		must(w.Event(timeline.Event{Time: start, Kind: timeline.PhaseStart, Phase: phase, Planned: time.Second}))
		if phase == "fault" && switches {
			must(w.Event(timeline.Event{Time: start, Kind: timeline.FaultOn, Phase: phase, Point: "demo/store/productQuery"}))
		}
		sent := 0
		for r := 0; r < perPhase; r++ {
			seq++
			if n > 0 && int(seq%uint64(n)) != i-1 {
				continue
			}
			sent++
			id := r%5 + 1
			req := timeline.Request{Seq: seq, Phase: phase, Time: start.Add(time.Duration(r) * 5 * time.Millisecond), Method: "GET",
				Target: fmt.Sprintf("GET /products/%d", id), Tags: []string{"read"}, Status: 200,
				Latency: time.Duration(1+r%4) * time.Millisecond, Body: fmt.Sprintf(`{"id":%d}`, id),
				Headers: map[string]string{"X-Served-From": "db"}}
			if phase == "fault" {
				req.Headers["X-Served-From"] = "cache"
				if r%10 == 0 {
					req.Status, req.Latency, req.Body, req.Headers = 503, 100*time.Millisecond, "", nil
				}
			}
			must(w.Request(&req))
		}
		// The pacer planned its share of 200 and sent all of it.
		planned := perPhase
		if n > 0 {
			planned = sent
		}
		end := start.Add(time.Second)
		must(w.Event(timeline.Event{Time: end, Kind: timeline.PhaseEnd, Phase: phase, Data: map[string]any{
			timeline.PlannedRequests: planned, timeline.SentRequests: sent, timeline.MaxWorkers: 10,
			timeline.PlannedBy: planned, timeline.SentBy: sent, timeline.BehindAt: int64(0)}}))
		if phase == "fault" && switches {
			must(w.Event(timeline.Event{Time: end, Kind: timeline.FaultOff, Phase: phase, Point: "demo/store/productQuery"}))
			must(w.Event(timeline.Event{Time: end, Kind: timeline.FaultHits, Phase: phase, Point: "demo/store/productQuery", Hits: &hits}))
		}
	}
	must(w.Event(timeline.Event{Time: t0.Add(2 * time.Second), Kind: timeline.RunEnd, Message: "completed"}))
	must(w.Flush())
	if err := os.WriteFile(filepath.Join(dir, plan.CopyFile), []byte(oneJudgeScenario), 0o644); err != nil {
		t.Fatal(err)
	}
}

// verdictLine is what a verdict says, without the evidence's request
// numbers (a merge numbers requests across its shards).
func verdictLine(name, outcome, measured, expected, reason string, samples int) string {
	return fmt.Sprintf("%s: %s, measured %q, expected %q, reason %q, %d samples", name, outcome, measured, expected, reason, samples)
}

func contractLines(vs []contract.Verdict) []string {
	var out []string
	for _, v := range vs {
		out = append(out, verdictLine(v.Name, string(v.Outcome), v.Measured, v.Expected, v.Reason, v.Samples))
	}
	return out
}

func reportLines(t *testing.T, rep *reports.Report) []string {
	t.Helper()
	if len(rep.Scenarios) != 1 {
		t.Fatalf("%d scenarios in the report, want 1", len(rep.Scenarios))
	}
	return contractLines(rep.Scenarios[0].Contracts)
}

// judgedByEveryCommand judges one recorded run through the judging path of
// every command, and returns each path's verdicts by command. whole is the
// run directory, shards the same run recorded as two shards.
func judgedByEveryCommand(t *testing.T, whole string, shards []string) map[string][]string {
	t.Helper()
	got := map[string][]string{}

	// run and chaostest: harness.Run judges the directory the runner
	// wrote with ScenarioReport, as does init's baseline run.
	sc, err := plan.LoadCopy(whole, "", plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := timeline.OpenDir(whole)
	if err != nil {
		t.Fatal(err)
	}
	got["run"] = contractLines(ScenarioReport(sc, src, whole, nil).Contracts)

	// report: a saved run judged again.
	var out bytes.Buffer
	rep, err := Rejudge(whole, RejudgeOptions{Out: &out, ReportDir: t.TempDir()})
	if rep == nil {
		t.Fatalf("report: %v\n%s", err, out.String())
	}
	got["report"] = reportLines(t, rep)

	// report --merge: the same run recorded as shards.
	rep, err = Merge(shards, RejudgeOptions{Out: &out, ReportDir: t.TempDir()})
	if rep == nil {
		t.Fatalf("report --merge: %v\n%s", err, out.String())
	}
	got["report --merge"] = reportLines(t, rep)

	// fuzz and explore: a trial's run directory judged by the campaign.
	o, err := trials.Judge(sc, whole)
	if err != nil {
		t.Fatal(err)
	}
	got["fuzz, explore"] = contractLines(o.Verdicts)
	return got
}

// Every command judges the same run directory with the same verdicts: run
// (and chaostest, and init, which judge through ScenarioReport), report,
// report --merge of the same run recorded as shards, and fuzz and explore
// (trials.Judge), the fault-schedule campaigns differing only where a
// fault never fired, by the judge's own option.
func TestEveryCommandJudgesARunAlike(t *testing.T) {
	for _, tc := range []struct {
		name string
		hits int64
	}{{"the fault fired", 40}, {"the fault never fired", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			whole := filepath.Join(root, "whole")
			oneJudgeRun(t, whole, 0, 0, tc.hits)
			shards := []string{filepath.Join(root, "shard-1"), filepath.Join(root, "shard-2")}
			for i, d := range shards {
				oneJudgeRun(t, d, i+1, len(shards), tc.hits)
			}
			got := judgedByEveryCommand(t, whole, shards)
			want := got["run"]
			outcomes := map[string]int{}
			for _, l := range want {
				outcomes[strings.SplitN(strings.SplitN(l, ": ", 2)[1], ",", 2)[0]]++
			}
			if tc.hits > 0 && (outcomes["pass"] < 3 || outcomes["fail"] < 3) {
				t.Fatalf("the run should pass some contracts and fail others, and gives\n%s", strings.Join(want, "\n"))
			}
			if tc.hits == 0 && outcomes["inconclusive"] < 5 {
				t.Fatalf("a fault that never fired should leave the fault phase's contracts inconclusive, and gives\n%s", strings.Join(want, "\n"))
			}
			campaign := want
			if tc.hits == 0 {
				// The campaigns' one difference is an option of the judge:
				// the scenario's judge with it set gives their verdicts.
				sc, err := plan.LoadCopy(whole, "", plan.Options{})
				if err != nil {
					t.Fatal(err)
				}
				src, err := timeline.OpenDir(whole)
				if err != nil {
					t.Fatal(err)
				}
				vs, _, err := sc.Judge(src, nil, contract.JudgeOptions{UnfiredJudged: true})
				if err != nil {
					t.Fatal(err)
				}
				campaign = contractLines(vs)
				withFired := judgedByEveryCommand(t, func() string {
					d := filepath.Join(root, "fired")
					oneJudgeRun(t, d, 0, 0, 40)
					return d
				}(), shards)["run"]
				if strings.Join(campaign, "\n") != strings.Join(withFired, "\n") {
					t.Errorf("judged with UnfiredJudged, a fault that never fired is judged as one that fired:\n%s\nwant\n%s", strings.Join(campaign, "\n"), strings.Join(withFired, "\n"))
				}
			}
			for cmd, lines := range got {
				w := want
				if cmd == "fuzz, explore" {
					w = campaign
				}
				if strings.Join(lines, "\n") != strings.Join(w, "\n") {
					t.Errorf("%s judges the run differently from run:\n%s\nwant\n%s", cmd, strings.Join(lines, "\n"), strings.Join(w, "\n"))
				}
			}
		})
	}
}
