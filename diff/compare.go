package diff

import (
	"errors"
	"fmt"
	"math"
	"path"
	"slices"
)

// Word is the verdict of one figure's comparison.
type Word string

// The words. Unknown is a figure one side could not measure in most of its
// repetitions (too few requests, an inconclusive check): never a
// regression, never an improvement. Changed is a figure with no worse
// side that moved beyond its band.
const (
	Regressed Word = "regressed"
	Improved  Word = "improved"
	Same      Word = "same"
	New       Word = "new"
	Gone      Word = "gone"
	Unknown   Word = "unknown"
	Changed   Word = "changed"
)

// Options tune Compare. The zero value compares as docs/diff.md says.
type Options struct {
	// Gate names the figures a regression of which counts for Regressed
	// with no gates of its own: globs (path.Match) over a figure's name,
	// e.g. "p99", "share.*", "bill.*", "verdict". Empty means every figure.
	Gate []string
	// MinEffect scales every figure's minimum effect (see floor); 0 means
	// 1. Above 1 asks for larger differences before a word other than
	// same.
	MinEffect float64
}

// Side is one side's values of a figure, one per repetition.
type Side struct {
	// Values are the repetitions that measured the figure, in run order.
	Values []float64 `json:"values"`
	// Unknown is how many repetitions could not measure it, and Reason
	// the first one's reason.
	Unknown int    `json:"unknown,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Median of Values; Spread is their range (max − min).
	Median float64 `json:"median"`
	Spread float64 `json:"spread"`
	// Missing is true when no run of the side has the figure at all.
	Missing bool `json:"missing,omitempty"`
}

// known reports whether the side measured the figure in most of its
// repetitions: a side that measured it in fewer cannot say where it lies.
func (s Side) known() bool {
	return !s.Missing && len(s.Values) > 0 && len(s.Values) >= s.Unknown
}

// Figure is one figure compared: both sides, the difference of their
// medians (head − base), the noise band and the word.
type Figure struct {
	Key
	Unit  string  `json:"unit"`
	Worse Worse   `json:"worse,omitempty"`
	Base  Side    `json:"base"`
	Head  Side    `json:"head"`
	Delta float64 `json:"delta"`
	Band  float64 `json:"band"`
	Word  Word    `json:"word"`
}

// Result is a comparison of two sides.
type Result struct {
	// BaseRuns and HeadRuns count the runs compared per side.
	BaseRuns int      `json:"base_runs"`
	HeadRuns int      `json:"head_runs"`
	Figures  []Figure `json:"figures"`
	// Bills are each side's bill per fault (medians of the repetitions).
	Bills []BillPair `json:"bills,omitempty"`
	gate  []string
}

// Compare compares the runs of the base with those of the head, figure by
// figure. Runs of one scenario are grouped: a scenario only one side ran
// gives figures that are new or gone. It fails only when a side has no
// run at all.
func Compare(base, head []Run, o Options) (*Result, error) {
	if len(base) == 0 || len(head) == 0 {
		return nil, errors.New("diff: each side needs at least one run")
	}
	if o.MinEffect == 0 {
		o.MinEffect = 1
	}
	for _, g := range o.Gate {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("diff: gate %q is not a valid glob: %v", g, err)
		}
	}
	bs, hs := make([]*figureSet, len(base)), make([]*figureSet, len(head))
	for i, r := range base {
		bs[i] = figures(r)
	}
	for i, r := range head {
		hs[i] = figures(r)
	}
	res := &Result{BaseRuns: len(base), HeadRuns: len(head), gate: o.Gate}
	for _, k := range unionKeys(bs, hs) {
		f := Figure{Key: k}
		f.Base, f.Unit, f.Worse = side(k, bs, scenarioRuns(base, k.Scenario))
		var hu string
		var hw Worse
		f.Head, hu, hw = side(k, hs, scenarioRuns(head, k.Scenario))
		if f.Base.Missing {
			f.Unit, f.Worse = hu, hw
		}
		judge(&f, o.MinEffect)
		res.Figures = append(res.Figures, f)
	}
	res.Bills = billPairs(base, head)
	return res, nil
}

// scenarioRuns counts the runs of one scenario.
func scenarioRuns(runs []Run, sc string) int {
	n := 0
	for _, r := range runs {
		if r.Scenario == sc {
			n++
		}
	}
	return n
}

// side gathers a figure's values over one side's runs of its scenario. A
// run of the scenario without the figure counts as unknown, unless no run
// has it (the figure is then missing from the side).
func side(k Key, sets []*figureSet, runs int) (Side, string, Worse) {
	var s Side
	var m meta
	found := false
	for _, set := range sets {
		v, ok := set.vals[k]
		if !ok {
			continue
		}
		found, m = true, set.meta[k]
		if v.known && !math.IsNaN(v.v) && !math.IsInf(v.v, 0) {
			s.Values = append(s.Values, v.v)
		} else {
			s.Unknown++
			if s.Reason == "" {
				s.Reason = firstNonEmpty(v.unknown, "not a number")
			}
		}
	}
	if !found {
		s.Missing = true
		return s, "", Neither
	}
	if absent := runs - len(s.Values) - s.Unknown; absent > 0 {
		s.Unknown += absent
		if s.Reason == "" {
			s.Reason = "not measured in every run"
		}
	}
	s.Median, s.Spread = median(s.Values), spread(s.Values)
	return s, m.unit, m.worse
}

// judge gives f its delta, band and word.
//
// The band is the larger of the figure's minimum effect (floor) and the
// sum of the two sides' spreads. A head median past the base median by
// more than that sum means every head repetition lies beyond every base
// repetition (the ranges do not overlap): the most extreme rank order, the
// one a Mann–Whitney U test needs to say anything at all with three runs a
// side (U = 0, one-sided p = 1/20). Overlap alone would flag one figure in
// ten on the same build; with a hundred figures a diff that is noise. The
// floor keeps a real but harmless shift (a p50 0.3 ms slower, one point
// more fallback) from gating a pull request. docs/diff.md says more.
func judge(f *Figure, scale float64) {
	switch {
	case f.Base.Missing && f.Head.Missing:
		f.Word = Unknown
		return
	case f.Base.Missing:
		f.Word = New
		f.Head.Missing = false
		return
	case f.Head.Missing:
		f.Word = Gone
		return
	case !f.Base.known() || !f.Head.known():
		f.Word = Unknown
		return
	}
	f.Delta = f.Head.Median - f.Base.Median
	f.Band = math.Max(scale*floor(f.Unit, f.Base.Median), f.Base.Spread+f.Head.Spread)
	if f.Unit == UnitVerdict {
		// A verdict's median is the majority's: it moved when the
		// majority did, whatever one repetition said.
		f.Band = floor(f.Unit, 0)
	}
	if math.Abs(f.Delta) <= f.Band {
		f.Word = Same
		return
	}
	worse := (f.Delta > 0) == (f.Worse == Higher)
	switch {
	case f.Worse == Neither:
		f.Word = Changed
	case worse:
		f.Word = Regressed
	default:
		f.Word = Improved
	}
}

// floor is a figure's minimum effect: the smallest difference of medians
// that can get a word other than same, however quiet the repetitions.
//
//   - latency: 10 ms, or half the base's median when that is more (a p99
//     from 40 ms to 900 ms is far past it; 40 ms to 55 ms is not);
//   - time to degrade or recover, breaker open: 200 ms, or half the base;
//   - shares of requests: 5 points;
//   - writes, transitions: 1 (more than one write or transition apart);
//   - a verdict: half (the majority of repetitions changed);
//   - throughput: a fifth of the base;
//   - any other number (a probe, a metric expression): a fifth of the base,
//     at least 1e-9.
func floor(unit string, base float64) float64 {
	b := math.Abs(base)
	switch unit {
	case UnitMs:
		return math.Max(10, b/2)
	case UnitSeconds:
		return math.Max(0.2, b/2)
	case UnitPercent:
		return 5
	case UnitCount:
		return 1
	case UnitVerdict:
		return 0.5
	}
	return math.Max(1e-9, b/5)
}

// Regressed reports whether a figure regressed whose name matches one of
// gates (globs, see Options.Gate); with no gates, those of the Options
// Compare was given; with none there either, any figure.
func (r *Result) Regressed(gate ...string) bool {
	return len(r.regressions(gate...)) > 0
}

// regressions lists the regressed figures that gate.
func (r *Result) regressions(gate ...string) []Figure {
	if len(gate) == 0 {
		gate = r.gate
	}
	var out []Figure
	for _, f := range r.Figures {
		if f.Word == Regressed && gates(f.Name, gate) {
			out = append(out, f)
		}
	}
	return out
}

// Count counts the figures with word w.
func (r *Result) Count(w Word) int {
	n := 0
	for _, f := range r.Figures {
		if f.Word == w {
			n++
		}
	}
	return n
}

func gates(name string, gate []string) bool {
	if len(gate) == 0 {
		return true
	}
	for _, g := range gate {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func spread(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return slices.Max(v) - slices.Min(v)
}
