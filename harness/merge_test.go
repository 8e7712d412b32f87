package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/runner"
	"github.com/chaoskit/chaoskit/timeline"
)

// TestMergeRefusesWhatIsNotOneRun: each refusal is exit 2 with what to do.
func TestMergeRefusesWhatIsNotOneRun(t *testing.T) {
	tests := []struct {
		name   string
		shards []string // Meta.Shard of each run; every saved run switches a fault
		want   string
	}{
		{"one directory", []string{"1/2"}, "at least two shards"},
		{"a shard twice", []string{"1/2", "1/2"}, "give each shard once"},
		{"two splits", []string{"1/2", "2/3"}, "merge the shards of one split"},
		{"two runs switched faults", []string{"1/2", "2/2"}, "only shard 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			var dirs []string
			for i, sh := range tt.shards {
				d := filepath.Join(root, "run"+string(rune('a'+i)))
				saveRunWith(t, d, timeline.Meta{Shard: sh}, true)
				dirs = append(dirs, d)
			}
			_, err := Merge(dirs, RejudgeOptions{ReportDir: filepath.Join(root, "merged")})
			if err == nil || !strings.Contains(err.Error(), tt.want) || exitcode.Of(err) != exitcode.Invalid {
				t.Fatalf("Merge: %v (exit %d), want exit 2 saying %q", err, exitcode.Of(err), tt.want)
			}
			if testing.Verbose() {
				t.Log(err)
			}
		})
	}
}

// TestMergeRefusesRunsThatAreNotOneRun: the runs given are every shard of
// one split of one scenario, with the same variables and rate scale, and
// ran their phases together; anything else is exit 2 naming what differs.
func TestMergeRefusesRunsThatAreNotOneRun(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	type run struct {
		meta     timeline.Meta
		scenario string // the copy in its run directory; "" for none
	}
	shard := func(sh string) run { return run{meta: timeline.Meta{Shard: sh, Start: t0}} }
	with := func(r run, f func(*run)) run { f(&r); return r }
	tests := []struct {
		name string
		runs []run
		want string // "" for a merge that is judged
	}{
		{"every shard, together", []run{shard("1/3"), shard("2/3"), shard("3/3")}, ""},
		{"a shard 300ms late still overlaps", []run{shard("1/2"), with(shard("2/2"), func(r *run) { r.meta.Start = t0.Add(300 * time.Millisecond) })}, ""},
		{"the last shard missing", []run{shard("1/3"), shard("2/3")}, "shard 3/3 of the split is missing: merged without it, the run would be judged on 2 of the 3 slices"},
		{"a middle shard missing", []run{shard("1/3"), shard("3/3")}, "shard 2/3 of the split is missing"},
		{"another scenario", []run{shard("1/2"), with(shard("2/2"), func(r *run) { r.meta.Scenario = "other" })}, `is a run of scenario "other" and`},
		{"another version of the scenario", []run{with(shard("1/2"), func(r *run) { r.scenario = "a" }), with(shard("2/2"), func(r *run) { r.scenario = "b" })}, "ran different versions of scenario"},
		{"other vars", []run{with(shard("1/2"), func(r *run) { r.meta.Vars = map[string]string{"rate": "100/s"} }), with(shard("2/2"), func(r *run) { r.meta.Vars = map[string]string{"rate": "10/s"} })},
			"with rate=100/s and"},
		{"a var only one shard set", []run{shard("1/2"), with(shard("2/2"), func(r *run) { r.meta.Vars = map[string]string{"rate": "10/s"} })}, "with rate unset and"},
		{"a tenth of the rate", []run{shard("1/2"), with(shard("2/2"), func(r *run) { r.meta.RateScale = 0.1 })}, "at --rate-scale 1 and"},
		{"a shard 10s late", []run{shard("1/2"), with(shard("2/2"), func(r *run) { r.meta.Start = t0.Add(10 * time.Second) })}, `ran phase "warmup" from +10.0s to +11.0s`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeScenario(t, root, "85")
			var dirs []string
			for i, r := range tt.runs {
				d := filepath.Join(root, "run"+string(rune('a'+i)))
				saveRunSwitching(t, d, r.meta, true, i == 0)
				if r.scenario != "" {
					if err := os.WriteFile(filepath.Join(d, plan.CopyFile), []byte(r.scenario), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				dirs = append(dirs, d)
			}
			_, err := Merge(dirs, RejudgeOptions{ReportDir: filepath.Join(root, "merged"), Scenario: filepath.Join(root, "scenario.yaml")})
			if tt.want == "" {
				if exitcode.Of(err) == exitcode.Invalid {
					t.Fatalf("Merge refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || exitcode.Of(err) != exitcode.Invalid {
				t.Fatalf("Merge: %v (exit %d), want exit 2 saying %q", err, exitcode.Of(err), tt.want)
			}
			if testing.Verbose() {
				t.Log(err)
			}
		})
	}
}

// TestShardOnOwnTargetRefused: --shard (or --no-faults, --faults-only) on
// a target chaoskit starts itself would give each shard a service of its
// own; it is refused with exit 2 before anything starts.
func TestShardOnOwnTargetRefused(t *testing.T) {
	command := &plan.Scenario{Name: "s", File: "s.yaml", Target: plan.Target{Command: &plan.Command{Argv: []string{"svc"}}, URL: "http://127.0.0.1:1"}}
	demo := &plan.Scenario{Name: "d", File: "d.yaml", Target: plan.Target{Demo: &plan.DemoTarget{}}}
	remote := &plan.Scenario{Name: "r", File: "r.yaml", Target: plan.Target{URL: "http://127.0.0.1:1"}}
	tests := []struct {
		name string
		sc   *plan.Scenario
		opts Options
		want string // "" for no refusal
	}{
		{"shard on a command", command, Options{Shard: runner.Shard{Index: 2, Count: 3}}, "s.yaml: --shard 2/3 on a target chaoskit starts itself (target.command)"},
		{"shard on the demo", demo, Options{Shard: runner.Shard{Index: 1, Count: 2}}, "d.yaml: --shard 1/2 on a target chaoskit starts itself (target.demo)"},
		{"faults-only on a command", command, Options{FaultsOnly: true}, "--faults-only on a target"},
		{"no-faults on a command", command, Options{NoFaults: true}, "--no-faults on a target"},
		{"shard on a remote target", remote, Options{Shard: runner.Shard{Index: 2, Count: 3}}, ""},
		{"no shard on a command", command, Options{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkShardTargets([]*plan.Scenario{remote, tt.sc}, tt.opts)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "give its address as target.url") || exitcode.Of(err) != exitcode.Invalid {
				t.Fatalf("got %v (exit %d), want exit 2 saying %q", err, exitcode.Of(err), tt.want)
			}
		})
	}
}
