package fuzz

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/internal/reach"
	"github.com/chaoskit/chaoskit/plan"
)

// procShop is a fuzz scenario of the demo with a Redis-like dependency
// whose fault space holds process faults of both, and a failpoint.
const procShop = `name: proc-shop
target:
  demo:
    args: []
dependencies:
  - name: kv
    command:
      argv: [kv-server, --port, "{port:kv}"]
load:
  rate: 100/s
  requests: [{path: /products/1}]
fuzz:
  duration: 1s..2s
  max_faults: 2
  faults:
    - process: kv
      actions: [kill, terminate, pause, restart]
    - process: target
      actions: [pause]
    - point: store/productQuery
      actions: [error]
contracts:
  - name: answers
    expect:
      - status in [200, 503] for == 100%
`

// TestProcessFaultsAreDrawnRenderedAndLoadedBack: process faults work in a
// fault space (they were refused as an unknown field), every action is
// drawn, a restart never gets a duration, and the rendered trial loads
// back as the same schedule.
func TestProcessFaultsAreDrawnRenderedAndLoadedBack(t *testing.T) {
	sc, err := plan.Parse(filepath.Join(t.TempDir(), "proc-shop.yaml"), []byte(procShop), catalog)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for trial := 1; trial <= 60; trial++ {
		s := Generate(sc.Fuzz, 11, trial)
		if err := s.Validate(sc.Fuzz); err != nil {
			t.Fatalf("trial %d: %v: %s", trial, err, s)
		}
		got, text, err := Load(sc, s, "proc-trial", filepath.Join(t.TempDir(), "trial.yaml"), "", catalog)
		if err != nil {
			t.Fatalf("trial %d: %v\n%s", trial, err, text)
		}
		if back := Extract(got); !reflect.DeepEqual(back.Phases, s.Phases) {
			t.Fatalf("trial %d: rendered\n%s\nloaded back as\n%s\n%s", trial, s, back, text)
		}
		for _, p := range got.Phases {
			for _, f := range p.Faults {
				if f.Source().Name != "process" {
					continue
				}
				kinds[f.Process+"="+f.Action] = true
				if f.Path != "process/"+f.Process || f.Probability != 0 || (f.Action == "restart" && f.For.D() != 0) {
					t.Errorf("trial %d: process fault %+v", trial, f)
				}
			}
		}
	}
	if len(kinds) != 5 {
		t.Errorf("60 trials drew the process faults %v, want all five", kinds)
	}
	var keys []string
	for _, c := range Singles(sc.Fuzz) {
		keys = append(keys, c[0].String())
	}
	if want := "process/kv=kill process/kv=terminate process/kv=pause process/kv=restart process/target=pause store/productQuery=error(injected error)"; strings.Join(keys, " ") != want {
		t.Errorf("singles %s\nwant    %s", strings.Join(keys, " "), want)
	}
}

// TestFuzzProcessFaultErrors: a mistake in a process fault of the fault
// space is reported once, at its place, and alone: not after a failpoint
// catalog the fault space does not need.
func TestFuzzProcessFaultErrors(t *testing.T) {
	only := strings.Replace(procShop, "    - point: store/productQuery\n      actions: [error]\n", "", 1)
	tests := []struct{ from, to, want string }{
		{"- process: kv\n", "- process: kvv\n", `proc-shop.yaml:16:16: no process named "kvv": process faults act on the target or a dependency (did you mean "kv"?)`},
		{"[kill, terminate, pause, restart]", "[kill, stop]", `process action "stop" cannot be fuzzed`},
		{"[kill, terminate, pause, restart]", "[kill]\n      latency: 1s..2s", "a process fault takes no errors, statuses, latency or probability"},
		{"- process: kv\n", "- process: kv\n      proxy: kv\n", "a fuzz fault names one of point, proxy or process"},
	}
	failing := plan.Options{Catalog: func(plan.Target, *reach.Policy) (*inject.Catalog, error) {
		return nil, errors.New("no failpoints to list")
	}}
	for _, tt := range tests {
		_, err := plan.Parse("proc-shop.yaml", []byte(strings.Replace(only, tt.from, tt.to, 1)), failing)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Count(err.Error(), "proc-shop.yaml:") != 1 {
			t.Errorf("%s: err = %v, want only %q", tt.to, err, tt.want)
		}
	}
	if _, err := plan.Parse("proc-shop.yaml", []byte(only), failing); err != nil {
		t.Errorf("a fault space of processes only needs no failpoint catalog: %v", err)
	}
}
