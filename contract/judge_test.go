package contract

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// synthetic is a run of n requests made on the fly: a warmup, a fault
// phase served from a cache, a recovery. It holds no request.
type synthetic struct {
	head timeline.Timeline
	n    int
	t0   time.Time
	// sample, when set, is called every sampleEvery requests.
	sample func()
}

const sampleEvery = 100_000

func newSynthetic(n int) *synthetic {
	t0 := time.Unix(1_700_000_000, 0)
	s := &synthetic{n: n, t0: t0}
	per := time.Duration(n/3) * 100 * time.Microsecond
	hits := int64(n / 3)
	ev := func(at time.Duration, k timeline.EventKind, phase string) timeline.Event {
		return timeline.Event{Time: t0.Add(at), Kind: k, Phase: phase}
	}
	s.head.Events = []timeline.Event{
		ev(0, timeline.PhaseStart, "warmup"), ev(per, timeline.PhaseEnd, "warmup"),
		ev(per, timeline.PhaseStart, "fault"), {Time: t0.Add(per), Kind: timeline.FaultOn, Phase: "fault", Point: "store/q"},
		{Time: t0.Add(2 * per), Kind: timeline.FaultOff, Phase: "fault", Point: "store/q"},
		{Time: t0.Add(2 * per), Kind: timeline.FaultHits, Phase: "fault", Point: "store/q", Hits: &hits},
		ev(2*per, timeline.PhaseEnd, "fault"), ev(2*per, timeline.PhaseStart, "recovery"), ev(3*per, timeline.PhaseEnd, "recovery"),
		ev(3*per, timeline.RunEnd, ""),
	}
	s.head.Complete = true
	return s
}

func (s *synthetic) Head() *timeline.Timeline { return &s.head }

var syntheticHeaders = []map[string]string{
	{"X-Served-From": "db", "Content-Type": "application/json"},
	{"X-Served-From": "cache", "X-Copy-Age": "1500", "Content-Type": "application/json"},
}

var syntheticTargets = func() []string {
	out := make([]string, 50)
	for i := range out {
		out[i] = fmt.Sprintf("GET /products/%d", i)
	}
	return out
}()

func (s *synthetic) EachRequest(fn func(*timeline.Request) error) error {
	var q timeline.Request
	third := s.n / 3
	for i := range s.n {
		phase, h := "warmup", 0
		switch {
		case i >= 2*third:
			phase = "recovery"
		case i >= third:
			phase, h = "fault", 1
		}
		q = timeline.Request{Seq: uint64(i + 1), Phase: phase, Time: s.t0.Add(time.Duration(i) * 100 * time.Microsecond), Method: "GET",
			Target: syntheticTargets[i%50], Status: 200, Latency: time.Duration(200+i%1000) * time.Microsecond, Headers: syntheticHeaders[h],
			Body: `{"id":7}`, BodySize: 8}
		if err := fn(&q); err != nil {
			return err
		}
		if s.sample != nil && i%sampleEvery == 0 {
			s.sample()
		}
	}
	return nil
}

func syntheticContracts(t testing.TB) []*Contract {
	specs := []Spec{
		{Name: "cache", Phase: "fault", Settle: 100 * time.Millisecond, Expect: []string{
			"status == 200 for >= 99%", `header("X-Served-From") == "cache" for >= 99%`, "fallback >= 99%", "p99 latency < 2s", "stale <= 30s",
			"time_to_degrade < 1s"}},
		{Name: "recovers", Phase: "recovery", Expect: []string{"primary >= 99%", "time_to_recover < 1s", "p999 latency < 2s", "rps >= 1"}},
		{Name: "run", Expect: []string{"status 5xx <= 1%", `status_shift("4xx") <= 10%`, "avg latency < 1s"}},
	}
	var out []*Contract
	for _, s := range specs {
		c, err := Compile(conv(s))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// TestJudgeMemoryIndependentOfLength judges 3,000,000 requests streamed
// past every kind of accumulator and holds the heap to a bound a run of any
// length stays under: no check keeps the requests.
func TestJudgeMemoryIndependentOfLength(t *testing.T) {
	if testing.Short() {
		t.Skip("judges 3,000,000 requests")
	}
	src := newSynthetic(3_000_000)
	var peak uint64
	src.sample = func() {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
	}
	cls := convCls(Classification{})
	vs, m, err := Judge(src, syntheticContracts(t), &cls)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Outcome != Pass {
			t.Errorf("%s: %s %s %s", v.Name, v.Outcome, v.Measured, v.Reason)
		}
		if v.Samples < 900_000 {
			t.Errorf("%s: %d samples", v.Name, v.Samples)
		}
	}
	if m.Phases[1].Requests != 1_000_000 || m.Phases[1].P99 == 0 {
		t.Errorf("measured %+v", m.Phases[1])
	}
	t.Logf("peak heap %.1f MB", float64(peak)/(1<<20))
	if peak > 64<<20 {
		t.Fatalf("the heap reached %.0f MB judging 3,000,000 requests, want under 64 MB: an accumulator keeps requests", float64(peak)/(1<<20))
	}
}

// BenchmarkJudge is the re-judging speed of the engine alone, in requests
// a second (BenchmarkRejudge in package harness reads them from disk too).
func BenchmarkJudge(b *testing.B) {
	src := newSynthetic(300_000)
	cs := syntheticContracts(b)
	cls := convCls(Classification{})
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, _, err := Judge(src, cs, &cls); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(src.n)*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}

func sortDurations(d []time.Duration) { slices.Sort(d) }

// BenchmarkJudgeFromDisk is re-judging a run directory: the compact
// request stream read and decoded, then judged, in requests a second.
func BenchmarkJudgeFromDisk(b *testing.B) {
	src := newSynthetic(300_000)
	dir := b.TempDir()
	f, err := os.Create(filepath.Join(dir, timeline.FileName))
	if err != nil {
		b.Fatal(err)
	}
	jw := timeline.NewWriter(f)
	jw.Meta(timeline.Meta{Scenario: "synthetic", BaseURL: "http://127.0.0.1:1"})
	for _, e := range src.head.Events {
		jw.Event(e)
	}
	if err := jw.Close(); err != nil {
		b.Fatal(err)
	}
	q, err := os.Create(filepath.Join(dir, timeline.RequestsFile))
	if err != nil {
		b.Fatal(err)
	}
	rw := timeline.NewRequestWriter(q, "http://127.0.0.1:1")
	src.EachRequest(func(r *timeline.Request) error {
		c := *r
		return rw.Add(&c, []byte(r.Body))
	})
	if err := rw.Close(); err != nil {
		b.Fatal(err)
	}
	cs := syntheticContracts(b)
	cls := convCls(Classification{})
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s, err := timeline.OpenDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		vs, _, err := Judge(s, cs, &cls)
		if err != nil || vs[0].Samples == 0 {
			b.Fatal(err, vs[0].Samples)
		}
	}
	b.ReportMetric(float64(src.n)*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}

// TestTimeChecksReadSendOrder holds time_to_degrade and time_to_recover
// to send order when the record is in completion order: slow responses
// come late, and the verdict is the one of the requests sorted.
func TestTimeChecksReadSendOrder(t *testing.T) {
	tl := sampleTimeline()
	sorted := *tl
	sorted.Requests = slices.Clone(tl.Requests)
	slices.SortStableFunc(sorted.Requests, func(a, b timeline.Request) int { return a.Time.Compare(b.Time) })
	// Completion order: each request where it ended.
	done := *tl
	done.Requests = slices.Clone(sorted.Requests)
	slices.SortStableFunc(done.Requests, func(a, b timeline.Request) int { return a.End().Compare(b.End()) })
	if slices.EqualFunc(done.Requests, sorted.Requests, func(a, b timeline.Request) bool { return a.Seq == b.Seq }) {
		t.Fatal("the sample's completion order is its send order: it tests nothing")
	}
	for _, expect := range []string{"time_to_degrade < 1s", "time_to_recover < 6s", `time_to_degrade("fallback", "rejected") < 100ms`} {
		c, err := Compile(conv(Spec{Name: "t", Phase: "fault", Expect: []string{expect}, MinSamples: 1}))
		if err != nil {
			t.Fatal(err)
		}
		want, got := c.Evaluate(&sorted), c.Evaluate(&done)
		if got.Checks[0].Measured != want.Checks[0].Measured || got.Checks[0].Outcome != want.Checks[0].Outcome ||
			len(got.Checks[0].Violations) != len(want.Checks[0].Violations) {
			t.Errorf("%s: completion order gives %s %s (%d violations), send order %s %s (%d)", expect, got.Checks[0].Outcome, got.Checks[0].Measured,
				len(got.Checks[0].Violations), want.Checks[0].Outcome, want.Checks[0].Measured, len(want.Checks[0].Violations))
		}
	}
}

// sampleTimeline has slow failures at the fault's start, which complete
// after the fast answers sent after them.
func sampleTimeline() *timeline.Timeline {
	return build(400, func(i int) bool { return i < 60 && i%3 == 0 || i%50 == 0 }, 10)
}
