package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/internal/reach"
)

func TestBundledFuzzScenario(t *testing.T) {
	sc, err := BundledFuzz("shop", demoCatalogFuzz)
	if err != nil {
		t.Fatal(err)
	}
	fz := sc.Fuzz
	if fz == nil || fz.Warmup.D() != 1500*time.Millisecond || fz.Phases != (IntRange{1, 3}) || fz.Duration != (DurationRange{time.Second, 2500 * time.Millisecond}) ||
		fz.MinRate.String() != "100/s" || len(fz.Faults) != 3 {
		t.Fatalf("fuzz section %+v", fz)
	}
	pq := fz.Faults[0]
	if pq.Path != "github.com/chaoskit/chaoskit/demo/store/productQuery" || pq.Latency != (DurationRange{20 * time.Millisecond, 300 * time.Millisecond}) ||
		pq.Probability != (FloatRange{0.3, 1}) || pq.Errors[0] != "injected error" || pq.Statuses[0] != 503 {
		t.Errorf("productQuery space %+v", pq)
	}
	// The skeleton: warmup and recovery, no faults; run alone it is a run
	// without faults.
	if len(sc.Phases) != 2 || sc.Phases[0].Name != "warmup" || sc.Phases[1].Name != "recovery" || sc.Phases[1].Duration.D() != 3*time.Second {
		t.Errorf("phases %+v", sc.Phases)
	}
	if sc.Target.Demo.Args[0] != "--bug=" {
		t.Errorf("demo args %q", sc.Target.Demo.Args)
	}
	sc, err = BundledFuzz("shop", Options{Catalog: demoCatalogFuzz.Catalog, Vars: map[string]string{"bug": "stale-after-recovery"}})
	if err != nil || sc.Target.Demo.Args[0] != "--bug=stale-after-recovery" {
		t.Errorf("with --var bug: %v %v", sc, err)
	}
	if _, err := BundledFuzz("shopp", Options{}); err == nil || !strings.Contains(err.Error(), `did you mean "shop"?`) {
		t.Errorf("unknown name: %v", err)
	}
	if names := BundledFuzzNames(); len(names) == 0 || names[0] != "shop" {
		t.Errorf("names %v", names)
	}
	// The bundled fuzz scenarios are not among the bundled scenarios.
	scs, err := Bundled(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scs {
		if s.Fuzz != nil {
			t.Errorf("bundled scenario %s is a fuzz scenario", s.Name)
		}
	}
}

var demoCatalogFuzz = Options{Catalog: func(t Target, _ *reach.Policy) (*inject.Catalog, error) {
	return inject.NewCatalog("github.com/chaoskit/chaoskit/demo/store/productQuery", "github.com/chaoskit/chaoskit/demo/store/orderWrite", "github.com/chaoskit/chaoskit/demo/cache/cacheGet"), nil
}}

func TestFuzzSectionErrors(t *testing.T) {
	const base = `name: f
target: {demo: {args: []}}
load:
  rate: 10/s
  requests:
    - path: /x
fuzz:
  phases: PHASES
  duration: DURATION
  faults:
    - point: POINT
      actions: [ACTION]
      errors: [ERROR]
      probability: PROB
contracts:
  - name: c
    phase: CPHASE
    expect: [status == 200 for >= 99%]
`
	ok := map[string]string{"PHASES": "1..2", "DURATION": "1s..2s", "POINT": "store/productQuery", "ACTION": "timeout", "ERROR": "down", "PROB": "0.5..1", "CPHASE": "recovery"}
	tests := []struct {
		key, value string
		want       string
	}{
		{"", "", ""},
		{"PHASES", "3..1", ":8:11: range 3..1 is empty or starts below 1"},
		{"PHASES", "many", `:8:11: bad range "many..many"`},
		{"DURATION", "2s..1s", ":9:13: duration range 2s..1s is empty or not positive"},
		{"POINT", "store/productQuerry", `:11:14: unknown failpoint "store/productQuerry" (did you mean "store/productQuery"?)`},
		{"ACTION", "timout", `:12:17: action "timout" cannot be fuzzed (did you mean "timeout"?)`},
		{"ACTION", "term", `:12:17: action "term" cannot be fuzzed`},
		{"ERROR", `'say "no"'`, `:13:16: value "say \"no\"" holds a quote`},
		{"PROB", "0..1", ":14:20: probability range 0..1 must lie within 0..1, above 0"},
		{"CPHASE", "faults-1", `:17:12: contract "c" names phase "faults-1", which the scenario does not have`},
	}
	for _, tt := range tests {
		text := base
		for k, v := range ok {
			if k == tt.key {
				v = tt.value
			}
			text = strings.ReplaceAll(text, k, v)
		}
		_, err := Parse("f.yaml", []byte(text), demoCatalogFuzz)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("valid fuzz scenario: %v", err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), "f.yaml"+tt.want)):
			t.Errorf("%s = %s: got %v\nwant f.yaml%s", tt.key, tt.value, err, tt.want)
		}
	}
	// A fuzz scenario draws its phases: giving some is an error.
	text := strings.NewReplacer("PHASES", "1", "DURATION", "1s", "POINT", "store/productQuery", "ACTION", "error", "ERROR", "x", "PROB", "1", "CPHASE", "recovery").Replace(base)
	text = strings.Replace(text, "fuzz:\n", "phases: [{name: p, duration: 1s}]\nfuzz:\n", 1)
	if _, err := Parse("f.yaml", []byte(text), demoCatalogFuzz); err == nil || !strings.Contains(err.Error(), "a fuzz scenario has no phases of its own") {
		t.Errorf("phases and fuzz: %v", err)
	}
}
