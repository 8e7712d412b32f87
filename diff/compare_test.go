package diff

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/contract"
)

// run makes a run of scenario "s" with one faulted phase "db-timeout":
// its p99, fallback and error shares (of 1000 requests), the breaker's
// open time and the contract's outcome.
func run(p99 time.Duration, fallback, errors int, open time.Duration, outcome contract.Outcome) Run {
	primary := 1000 - fallback - errors
	m := &contract.Measurement{
		Phases: []contract.PhaseMetrics{{
			Name: "db-timeout", Requests: 1000, RPS: 100, P50: p99 / 4, P90: p99 / 2, P99: p99,
			Classes:  map[contract.Class]int{contract.Primary: primary, contract.Fallback: fallback, contract.Error: errors},
			Statuses: map[string]int{"200": primary + fallback, "503": errors},
			Breakers: []contract.BreakerTime{{Name: "db", Open: open, Transitions: 2}},
		}},
		Faults: []contract.FaultTiming{{Point: "db/timeout", Phase: "db-timeout"}},
	}
	v := contract.Verdict{Name: "cached-reads", Phase: "db-timeout", Outcome: outcome}
	return FromJudged("s", "", []contract.Verdict{v}, m, nil)
}

func figure(t *testing.T, r *Result, name string) Figure {
	t.Helper()
	for _, f := range r.Figures {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no figure %s", name)
	return Figure{}
}

// jitter is a run of the same build: each figure within a few percent.
func jitter(rng *rand.Rand) Run {
	j := func(v float64, rel float64) float64 { return v * (1 + rel*(2*rng.Float64()-1)) }
	return run(time.Duration(j(float64(40*time.Millisecond), 0.3)), int(j(900, 0.02)), int(j(20, 0.5)), time.Duration(j(float64(5*time.Second), 0.1)), contract.Pass)
}

func TestSameBuildNeverRegresses(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for try := range 100 {
		base := []Run{jitter(rng), jitter(rng), jitter(rng)}
		head := []Run{jitter(rng), jitter(rng), jitter(rng)}
		r, err := Compare(base, head, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Regressed() {
			for _, f := range r.regressions() {
				t.Errorf("try %d: %s regressed: %v -> %v (band %v)", try, f.Key, f.Base.Values, f.Head.Values, f.Band)
			}
		}
	}
}

func TestWords(t *testing.T) {
	ms := time.Millisecond
	base := []Run{
		run(40*ms, 900, 20, 5*time.Second, contract.Pass),
		run(38*ms, 905, 18, 5200*ms, contract.Pass),
		run(45*ms, 895, 22, 4900*ms, contract.Pass),
	}
	cases := []struct {
		name  string
		head  []Run
		fig   string
		word  Word
		delta string
	}{
		{"p99 40ms to 900ms", []Run{run(900*ms, 900, 20, 5*time.Second, contract.Pass), run(880*ms, 900, 20, 5*time.Second, contract.Pass), run(950*ms, 900, 20, 5*time.Second, contract.Pass)}, "p99", Regressed, "+860ms"},
		{"p99 40ms to 50ms is noise", []Run{run(50*ms, 900, 20, 5*time.Second, contract.Pass), run(48*ms, 900, 20, 5*time.Second, contract.Pass), run(52*ms, 900, 20, 5*time.Second, contract.Pass)}, "p99", Same, ""},
		{"fallback drops 40 points", []Run{run(40*ms, 500, 420, 5*time.Second, contract.Pass), run(40*ms, 505, 415, 5*time.Second, contract.Pass), run(40*ms, 495, 425, 5*time.Second, contract.Pass)}, "share.fallback", Regressed, "-40.0 pts"},
		{"errors rise 40 points", []Run{run(40*ms, 500, 420, 5*time.Second, contract.Pass), run(40*ms, 505, 415, 5*time.Second, contract.Pass), run(40*ms, 495, 425, 5*time.Second, contract.Pass)}, "share.error", Regressed, "+40.0 pts"},
		{"breaker open 3x longer", []Run{run(40*ms, 900, 20, 15*time.Second, contract.Pass), run(40*ms, 900, 20, 15500*ms, contract.Pass), run(40*ms, 900, 20, 14800*ms, contract.Pass)}, "breaker.db.open", Regressed, "+10s"},
		{"p99 faster", []Run{run(4*ms, 900, 20, 5*time.Second, contract.Pass), run(5*ms, 900, 20, 5*time.Second, contract.Pass), run(4*ms, 900, 20, 5*time.Second, contract.Pass)}, "p99", Improved, "-36ms"},
		{"a contract that now fails", []Run{run(40*ms, 900, 20, 5*time.Second, contract.Fail), run(40*ms, 900, 20, 5*time.Second, contract.Fail), run(40*ms, 900, 20, 5*time.Second, contract.Pass)}, "verdict", Regressed, "-1.0"},
		{"a contract that fails once", []Run{run(40*ms, 900, 20, 5*time.Second, contract.Fail), run(40*ms, 900, 20, 5*time.Second, contract.Pass), run(40*ms, 900, 20, 5*time.Second, contract.Pass)}, "verdict", Same, ""},
		{"inconclusive on the head", []Run{run(40*ms, 900, 20, 5*time.Second, contract.Inconclusive), run(40*ms, 900, 20, 5*time.Second, contract.Inconclusive), run(40*ms, 900, 20, 5*time.Second, contract.Fail)}, "verdict", Unknown, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Compare(base, c.head, Options{})
			if err != nil {
				t.Fatal(err)
			}
			f := figure(t, r, c.fig)
			if f.Word != c.word {
				t.Fatalf("%s: word %s, want %s (base %v, head %v, band %v)", c.fig, f.Word, c.word, f.Base.Values, f.Head.Values, f.Band)
			}
			if c.delta != "" && deltaText(f) != c.delta {
				t.Errorf("%s: delta %s, want %s", c.fig, deltaText(f), c.delta)
			}
			if got, want := r.Regressed(), c.word == Regressed; got != want {
				t.Errorf("Regressed() = %v, want %v", got, want)
			}
		})
	}
}

func TestGates(t *testing.T) {
	ms := time.Millisecond
	base := []Run{run(40*ms, 900, 20, 5*time.Second, contract.Pass)}
	head := []Run{run(900*ms, 900, 20, 5*time.Second, contract.Pass)}
	r, err := Compare(base, head, Options{Gate: []string{"share.*"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Regressed() {
		t.Error("a p99 regression gated by share.* only")
	}
	if !r.Regressed("p9?") {
		t.Error("p99 regression not seen by gate p9?")
	}
	if _, err := Compare(base, head, Options{Gate: []string{"["}}); err == nil {
		t.Error("a malformed gate was taken")
	}
	if _, err := Compare(nil, head, Options{}); err == nil {
		t.Error("no base runs compared")
	}
}

func TestNewAndGone(t *testing.T) {
	ms := time.Millisecond
	b := run(40*ms, 900, 20, 5*time.Second, contract.Pass)
	h := run(40*ms, 900, 20, 5*time.Second, contract.Pass)
	h.Verdicts[0].Name = "renamed"
	r, err := Compare([]Run{b}, []Run{h}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	words := map[string]Word{}
	for _, f := range r.Figures {
		if f.Name == "verdict" {
			words[f.Contract] = f.Word
		}
	}
	if words["cached-reads"] != Gone || words["renamed"] != New {
		t.Errorf("words %v, want cached-reads gone and renamed new", words)
	}
	if r.Regressed() {
		t.Error("a new or gone figure counted as a regression")
	}
	var out strings.Builder
	if err := r.WriteTable(&out, 80); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if len([]rune(l)) > 80 {
			t.Errorf("line wider than 80: %q", l)
		}
	}
}

func TestJSONAndRepeatedFaults(t *testing.T) {
	ms := time.Millisecond
	mk := func(failed int) Run {
		r := run(40*ms, 900, 20, 5*time.Second, contract.Pass)
		r.Measurement.Bills = []contract.Bill{
			{Fault: "db/timeout", Phase: "db-timeout", Requests: 100, Failed: 1},
			{Fault: "db/timeout", Phase: "db-timeout", Requests: 100, Failed: failed},
		}
		return r
	}
	r, err := Compare([]Run{mk(1), mk(2)}, []Run{mk(60), mk(70)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	words := map[string]Word{}
	for _, f := range r.Figures {
		if f.Name == "bill.failed" {
			words[f.Fault] = f.Word
		}
	}
	if words["db/timeout"] != Same || words["db/timeout #2"] != Regressed {
		t.Errorf("bill.failed words %v, want the first time same, the second regressed", words)
	}
	if len(r.Bills) != 2 || r.Bills[1].Fault != "db/timeout #2" || r.Bills[1].Head.Failed != 65 {
		t.Errorf("bills %+v, want two, the second's head failing 65 (the median)", r.Bills)
	}
	var b strings.Builder
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Headline    string   `json:"headline"`
		Regressions int      `json:"regressions"`
		Figures     []Figure `json:"figures"`
	}
	if err := json.Unmarshal([]byte(b.String()), &back); err != nil {
		t.Fatal(err)
	}
	if back.Regressions != 1 || len(back.Figures) != len(r.Figures) || !strings.HasPrefix(back.Headline, "1 regression,") {
		t.Errorf("JSON: %d regressions, %d figures, headline %q", back.Regressions, len(back.Figures), back.Headline)
	}
}

// TestTimeToDegrade: each fault's time to degrade is a figure in seconds,
// worse higher, with the band of a time; a side whose runs mostly could
// not tell (no fallback answer) makes it unknown with their reason, and
// the bills show each side's median.
func TestTimeToDegrade(t *testing.T) {
	ms := time.Millisecond
	mk := func(degraded time.Duration) Run {
		r := run(40*ms, 900, 20, 5*time.Second, contract.Pass)
		b := contract.Bill{Fault: "db/timeout", Phase: "db-timeout", Requests: 100}
		if degraded > 0 {
			b.DegradedIn = &degraded
		} else {
			b.DegradeUnknown = "none of the 100 requests sent while the fault was on got a fallback answer"
		}
		r.Measurement.Bills = []contract.Bill{b}
		return r
	}
	for _, tt := range []struct {
		name       string
		base, head []time.Duration
		word       Word
		band       float64 // seconds
	}{
		{"the same", []time.Duration{50 * ms, 60 * ms, 55 * ms}, []time.Duration{70 * ms, 52 * ms, 58 * ms}, Same, 0.2},
		{"slower beyond the band", []time.Duration{50 * ms, 60 * ms, 55 * ms}, []time.Duration{900 * ms, 1000 * ms, 950 * ms}, Regressed, 0.2},
		{"faster", []time.Duration{1000 * ms, 1100 * ms, 1050 * ms}, []time.Duration{50 * ms, 60 * ms, 55 * ms}, Improved, 0.525}, // half the base's median
		{"never degrades", []time.Duration{50 * ms, 60 * ms, 55 * ms}, []time.Duration{0, 0, 55 * ms}, Unknown, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var base, head []Run
			for i := range tt.base {
				base, head = append(base, mk(tt.base[i])), append(head, mk(tt.head[i]))
			}
			r, err := Compare(base, head, Options{})
			if err != nil {
				t.Fatal(err)
			}
			f := figure(t, r, "bill.time_to_degrade")
			if f.Word != tt.word || f.Unit != UnitSeconds || f.Worse != Higher || f.Fault != "db/timeout" {
				t.Fatalf("%+v: want %s, in s, worse higher", f, tt.word)
			}
			if tt.word == Unknown {
				if !strings.Contains(f.Head.Reason, "got a fallback answer") {
					t.Errorf("unknown without the runs' reason: %+v", f)
				}
				if r.Bills[0].Head.DegradedIn != nil || !strings.Contains(billText(r.Bills[0].Head), "time to degrade unknown (none of the 100") {
					t.Errorf("head bill %s, want the time to degrade unknown with its reason", billText(r.Bills[0].Head))
				}
				return
			}
			if d := f.Band - tt.band; d < -1e-9 || d > 1e-9 {
				t.Errorf("band %v, want %v", f.Band, tt.band)
			}
			if b := r.Bills[0].Base; b.DegradedIn == nil || *b.DegradedIn != tt.base[2] || !strings.Contains(billText(b), "degraded in "+tt.base[2].String()) {
				t.Errorf("base bill %s, want degraded in %v (the median)", billText(b), tt.base[2])
			}
		})
	}
}
