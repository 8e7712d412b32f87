package runner

import (
	"slices"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/chaoskit/chaoskit/plan"
)

// dueTimes lists when each of a pacer's hits is due over d: the wait it
// asks for at the start, hit by hit, as if every earlier hit went out on
// time.
func dueTimes(p vegeta.Pacer, d time.Duration) []time.Duration {
	var out []time.Duration
	for hits := uint64(0); ; hits++ {
		wait, stop := p.Pace(0, hits)
		if stop || wait > d {
			return out
		}
		out = append(out, wait)
	}
}

func TestShardsSliceThePacerDisjointly(t *testing.T) {
	pacers := []struct {
		name string
		p    vegeta.Pacer
	}{
		{"constant", vegeta.Rate{Freq: 1000, Per: time.Second}},
		{"steps", StepPacer{Steps: []PacerStep{{PerSecond: 200, For: 500 * time.Millisecond}, {PerSecond: 900}}}},
		{"linear", vegeta.LinearPacer{StartAt: vegeta.Rate{Freq: 100, Per: time.Second}, Slope: 400}},
	}
	for _, pc := range pacers {
		for _, n := range []int{1, 2, 3, 7} {
			whole := dueTimes(pc.p, time.Second)
			var union []time.Duration
			var planned uint64
			for i := 1; i <= n; i++ {
				sh := Shard{Index: i, Count: n}
				union = append(union, dueTimes(sh.pacer(pc.p, time.Second), time.Second)...)
				planned += plannedHits(sh.pacer(pc.p, time.Second), time.Second)
			}
			slices.Sort(union)
			if !slices.Equal(union, whole) {
				t.Errorf("%s, %d shards: the shards' %d hits are not the whole pacer's %d", pc.name, n, len(union), len(whole))
			}
			if want := plannedHits(pc.p, time.Second); planned != want {
				t.Errorf("%s, %d shards: plan %d hits in all, the whole pacer %d", pc.name, n, planned, want)
			}
		}
	}
}

func TestShardsTakeTheirRequests(t *testing.T) {
	load := plan.Load{Seed: 7, Requests: []plan.RequestSpec{
		{Method: "GET", Path: "/a/{seq}", Weight: 3}, {Method: "GET", Path: "/b", Weight: 1},
	}}
	gen := func() *plan.Generator {
		g, err := plan.NewGenerator(load, nil)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	const n, hits = 3, 30
	whole := &shardRequests{gen: gen()}
	var want []string
	for range n * hits {
		q := whole.next()
		want = append(want, q.Path)
	}
	got := make([]string, n*hits)
	for i := 1; i <= n; i++ {
		s := &shardRequests{gen: gen(), shard: Shard{Index: i, Count: n}}
		for k := range hits {
			got[k*n+i-1] = s.next().Path
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("the shards' requests, hit by hit:\n%v\nthe whole run's:\n%v", got, want)
	}
}

func TestParseShard(t *testing.T) {
	tests := []struct {
		in   string
		want Shard
		ok   bool
	}{
		{"1/3", Shard{1, 3}, true}, {"3/3", Shard{3, 3}, true}, {"1/1", Shard{1, 1}, true},
		{"0/3", Shard{}, false}, {"4/3", Shard{}, false}, {"2", Shard{}, false}, {"a/b", Shard{}, false}, {"1/1001", Shard{}, false},
	}
	for _, tt := range tests {
		got, err := ParseShard(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseShard(%q) = %v, %v", tt.in, got, err)
		}
	}
}

// attackCount runs vegeta's attack loop (lib/attack.go) on a virtual clock
// where each hit takes 1ns to hand over: how many hits an attack of du
// sends.
func attackCount(p vegeta.Pacer, du time.Duration) int {
	var elapsed time.Duration
	for count := uint64(0); ; count++ {
		if elapsed > du {
			return int(count)
		}
		wait, stop := p.Pace(elapsed, count)
		if stop {
			return int(count)
		}
		elapsed += max(wait, 0) + 1
	}
}

// TestShardsSendWhatTheWholeRunSends holds the shards to the whole run's
// count at the end of a phase, where vegeta sends one more hit after the
// last one due within the duration.
func TestShardsSendWhatTheWholeRunSends(t *testing.T) {
	for _, p := range []vegeta.Pacer{vegeta.Rate{Freq: 200, Per: time.Second}, vegeta.Rate{Freq: 7, Per: 100 * time.Millisecond},
		vegeta.LinearPacer{StartAt: vegeta.Rate{Freq: 100, Per: time.Second}, Slope: 400}} {
		for _, du := range []time.Duration{time.Second, 3 * time.Second, 1234 * time.Millisecond} {
			whole := attackCount(p, du)
			for _, n := range []int{2, 3, 7} {
				sum := 0
				for i := 1; i <= n; i++ {
					sum += attackCount(Shard{Index: i, Count: n}.pacer(p, du), du)
				}
				if sum != whole {
					t.Errorf("%v over %v: %d shards send %d hits in all, the whole run %d", p, du, n, sum, whole)
				}
			}
		}
	}
}
