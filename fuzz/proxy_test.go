package fuzz

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// pgShop is a fuzz scenario of the demo on Postgres whose fault space
// holds a failpoint and a proxy.
const pgShop = `name: pg-shop
target:
  demo:
    args: [--postgres, "postgres://postgres:{password:db}@127.0.0.1:{port:pg}/postgres?sslmode=disable"]
dependencies:
  - name: db
    postgres: {}
proxies:
  - name: pg
    upstream: "127.0.0.1:{port:db}"
load:
  rate: 100/s
  requests: [{path: /products/1}]
fuzz:
  duration: 1s..2s
  max_faults: 2
  faults:
    - proxy: pg
      actions: [latency, reset_peer, down, timeout]
      latency: 20ms..300ms
      probability: 0.5..1
    - point: store/productQuery
      actions: [error]
contracts:
  - name: answers
    expect:
      - status in [200, 503] for == 100%
`

func pgShopScenario(t *testing.T) *plan.Scenario {
	t.Helper()
	sc, err := plan.Parse(filepath.Join(t.TempDir(), "pg-shop.yaml"), []byte(pgShop), catalog)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestProxyFaultsAreDrawnRenderedAndLoadedBack(t *testing.T) {
	sc := pgShopScenario(t)
	kinds := map[string]bool{}
	for trial := 1; trial <= 60; trial++ {
		s := Generate(sc.Fuzz, 7, trial)
		if err := s.Validate(sc.Fuzz); err != nil {
			t.Fatalf("trial %d: %v: %s", trial, err, s)
		}
		got, text, err := Load(sc, s, "pg-trial", filepath.Join(t.TempDir(), "trial.yaml"), "", catalog)
		if err != nil {
			t.Fatalf("trial %d: %v\n%s", trial, err, text)
		}
		if back := Extract(got); !reflect.DeepEqual(back.Phases, s.Phases) {
			t.Fatalf("trial %d: rendered\n%s\nloaded back as\n%s\n%s", trial, s, back, text)
		}
		if len(got.Dependencies) != 1 || len(got.Proxies) != 1 {
			t.Fatalf("trial %d: the rendered scenario lost its dependencies or proxies:\n%s", trial, text)
		}
		for _, p := range got.Phases {
			for _, f := range p.Faults {
				if f.Source().Name != "proxy" {
					continue
				}
				kinds[f.Action] = true
				if f.Path != "proxy/pg" || f.Net == nil || !strings.HasPrefix(f.Term, "proxy pg "+f.Action) {
					t.Errorf("trial %d: proxy fault %+v", trial, f)
				}
				if f.Action == "latency" && (f.Latency.D() < 20*time.Millisecond || f.Latency.D() > 300*time.Millisecond) {
					t.Errorf("trial %d: latency %v outside 20ms..300ms", trial, f.Latency.D())
				}
			}
		}
	}
	if len(kinds) != 4 {
		t.Errorf("60 trials drew the proxy actions %v, want all four", kinds)
	}
}

func TestExploreAndCoverageKnowProxyFaults(t *testing.T) {
	sc := pgShopScenario(t)
	var keys []string
	for _, c := range Singles(sc.Fuzz) {
		keys = append(keys, c[0].String())
	}
	want := "proxy/pg=latency(300ms) proxy/pg=reset_peer proxy/pg=down proxy/pg=timeout store/productQuery=error(injected error)"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("singles %s\nwant    %s", got, want)
	}
	cov := NewCoverage(sc)
	s := ComboSchedule(sc.Fuzz, Singles(sc.Fuzz)[0])
	cov.Add(s, &Outcome{Hits: map[string]int64{"faults-1/proxy/pg=latency": 1}})
	if fc := cov.fault("proxy/pg=latency"); fc.Scheduled != 1 || fc.Fired != 1 {
		t.Errorf("coverage of the proxy latency: %+v", fc)
	}
}

func TestShrinkLowersAProxyLatency(t *testing.T) {
	sc := pgShopScenario(t)
	clk := &fakeClock{}
	slow := func(s Schedule) []string {
		for _, p := range s.Phases {
			for _, f := range p.Faults {
				if f.Proxy == "pg" && f.Action == "latency" {
					if d, _ := time.ParseDuration(f.Value); d >= 100*time.Millisecond {
						return []string{"B"}
					}
				}
			}
		}
		return nil
	}
	tr := &fakeTrier{clk: clk, judge: slow}
	s := ComboSchedule(sc.Fuzz, Singles(sc.Fuzz)[0])
	sh := &Shrinker{Trier: tr, Invariant: "B", Allowed: []string{"B"}, Keep: map[string]bool{"recovery": true}, Space: sc.Fuzz,
		MinScale: 0.5, Config: Config{Clock: clk}}
	got, _, err := sh.Shrink(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	var f *Fault
	for i := range got.Phases {
		for j := range got.Phases[i].Faults {
			f = &got.Phases[i].Faults[j]
		}
	}
	if f == nil || f.Proxy != "pg" {
		t.Fatalf("shrunk to %s", got)
	}
	if d, _ := time.ParseDuration(f.Value); d < 100*time.Millisecond || d >= 200*time.Millisecond {
		t.Errorf("latency shrunk to %s, want the least that still fails (100ms..190ms)", f.Value)
	}
}

func TestFuzzProxyFaultErrors(t *testing.T) {
	tests := []struct{ from, to, want string }{
		{"- proxy: pg\n", "- proxy: pgg\n", `no proxy named "pgg" (did you mean "pg"?)`},
		{"[latency, reset_peer, down, timeout]", "[latency, bandwidth]", `proxy action "bandwidth" cannot be fuzzed`},
		{"latency: 20ms..300ms", "latency: 20ms..300ms\n      errors: [x]", "a proxy fault takes no errors or statuses"},
	}
	for _, tt := range tests {
		_, err := plan.Parse("pg-shop.yaml", []byte(strings.Replace(pgShop, tt.from, tt.to, 1)), catalog)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.to, err, tt.want)
		}
	}
}

// A proxy fault has no marker: Judge counts it fired when it was switched
// on, so that coverage and Unfired do not call it dead.
func TestJudgeCountsAProxyFaultSwitchedOnAsFired(t *testing.T) {
	sc := pgShopScenario(t)
	s := ComboSchedule(sc.Fuzz, Singles(sc.Fuzz)[0])
	trial, _, err := Load(sc, s, "pg-trial", filepath.Join(t.TempDir(), "trial.yaml"), "", catalog)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	tl := &timeline.Timeline{Events: []timeline.Event{
		{Time: t0, Kind: timeline.PhaseStart, Phase: "faults-1"},
		{Time: t0, Kind: timeline.FaultOn, Phase: "faults-1", Point: "proxy/pg", Term: "proxy pg latency 300ms"},
		{Time: t0.Add(time.Second), Kind: timeline.FaultOff, Phase: "faults-1", Point: "proxy/pg"},
		{Time: t0.Add(time.Second), Kind: timeline.PhaseEnd, Phase: "faults-1"},
	}}
	o, err := Judge(trial, tl)
	if err != nil {
		t.Fatal(err)
	}
	if h := o.Hits["faults-1/proxy/pg=latency"]; h != 1 {
		t.Errorf("hits of the proxy fault: %d (all: %v), want 1", h, o.Hits)
	}
	if u := o.Unfired(s); len(u) != 0 {
		t.Errorf("unfired: %v", u)
	}
}
