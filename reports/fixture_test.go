package reports

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/timeline"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const fixtureFault = "github.com/chaoskit/chaoskit/demo/store/productQuery"

// shopTimeline is a hand-made run of the demo shop: 3s of warmup, 4s with
// the product database timing out, 3s of recovery, at 100 requests per
// second. The service errs slowly for 300ms until its breaker opens, then
// serves the cache, and goes back to the database 1s after the fault ends.
func shopTimeline() *timeline.Timeline {
	rng := rand.New(rand.NewPCG(1, 2))
	tl := &timeline.Timeline{Meta: timeline.Meta{Scenario: "db-timeout-serves-cache", Start: t0}, Complete: true}
	phases := []struct {
		name string
		len  time.Duration
	}{{"warmup", 3 * time.Second}, {"db-timeout", 4 * time.Second}, {"recovery", 3 * time.Second}}
	at := t0
	seq := uint64(0)
	hits := int64(412)
	faultOn, faultOff := t0.Add(3*time.Second), t0.Add(7*time.Second)
	for _, p := range phases {
		tl.Events = append(tl.Events, timeline.Event{Time: at, Kind: timeline.PhaseStart, Phase: p.name, Planned: p.len})
		if p.name == "db-timeout" {
			tl.Events = append(tl.Events, timeline.Event{Time: at, Kind: timeline.FaultOn, Phase: p.name, Point: fixtureFault,
				Term: `return("` + fixtureFault + `|timeout")`, Ack: 2 * time.Millisecond})
		}
		for d := time.Duration(0); d < p.len; d += 10 * time.Millisecond {
			seq++
			sent := at.Add(d)
			r := timeline.Request{Seq: seq, Phase: p.name, Time: sent, Method: "GET", Target: fmt.Sprintf("GET /products/%d", seq%50+1)}
			source, status, lat, breaker := "db", 200, time.Duration(800+rng.IntN(1500))*time.Microsecond, "closed"
			switch {
			case !sent.Before(faultOn) && sent.Before(faultOn.Add(300*time.Millisecond)):
				source, status, lat = "none", 503, 100*time.Millisecond+time.Duration(rng.IntN(5))*time.Millisecond
			case !sent.Before(faultOn) && sent.Before(faultOff.Add(time.Second)):
				source, lat, breaker = "cache", time.Duration(300+rng.IntN(700))*time.Microsecond, "open"
			}
			if rng.IntN(200) == 0 {
				lat += 40 * time.Millisecond
			}
			r.Status, r.Latency = status, lat
			r.Headers = map[string]string{"X-Chaoskit-Source": source, "X-Chaoskit-Breaker": breaker}
			if status == 200 {
				r.Body = fmt.Sprintf(`{"id":%d,"name":"product %d"}`, seq%50+1, seq%50+1)
				r.BodySize = len(r.Body)
			}
			if source == "cache" {
				r.Headers["X-Chaoskit-Age"] = fmt.Sprint(sent.Sub(faultOn).Milliseconds() + 900)
			}
			tl.Requests = append(tl.Requests, r)
		}
		at = at.Add(p.len)
		tl.Events = append(tl.Events, timeline.Event{Time: at, Kind: timeline.PhaseEnd, Phase: p.name})
		if p.name == "db-timeout" {
			tl.Events = append(tl.Events,
				timeline.Event{Time: at, Kind: timeline.FaultOff, Phase: p.name, Point: fixtureFault, Ack: time.Millisecond},
				timeline.Event{Time: at, Kind: timeline.FaultHits, Phase: p.name, Point: fixtureFault, Hits: &hits})
		}
	}
	for d := time.Duration(0); d <= 10*time.Second; d += 100 * time.Millisecond {
		state := "closed"
		switch {
		case d >= 3300*time.Millisecond && d < 8*time.Second:
			state = "open"
		case d >= 8*time.Second && d < 8200*time.Millisecond:
			state = "half-open"
		}
		tl.Events = append(tl.Events, timeline.Event{Time: t0.Add(d), Kind: timeline.State,
			Data: map[string]any{"breakers": map[string]any{"db": map[string]any{"state": state}}}})
	}
	tl.Events = append(tl.Events, timeline.Event{Time: at, Kind: timeline.RunEnd})
	return tl
}

// demoCls classifies shopTimeline's requests by the demo's headers.
var demoCls = contract.Classification{SourceHeader: "X-Chaoskit-Source", AgeHeader: "X-Chaoskit-Age", BreakerHeader: "X-Chaoskit-Breaker"}

// measureInto measures tl into s as a run's judging does, the chart's
// series included.
func measureInto(s *ScenarioReport, tl *timeline.Timeline) {
	cls := demoCls
	ser := NewSeries(tl, cls)
	_, m, err := contract.JudgeWith(tl, nil, &cls, contract.JudgeOptions{Each: ser.Add})
	if err != nil {
		panic(err)
	}
	s.AddMeasurement(*m)
	s.Series = ser.Series()
}

// fixtureSpecs are contracts over shopTimeline: some pass, one fails, one
// is inconclusive.
var fixtureSpecs = []contract.Spec{
	{Name: "on DB timeout return cached data", Phase: "db-timeout", Settle: 500 * time.Millisecond,
		Expect: []string{`status == 200 for >= 99%`, `fallback("cache") >= 99%`, `body == baseline("warmup") for >= 99%`, `stale <= 30s`}},
	{Name: "degrade fast", Phase: "db-timeout", Expect: []string{`time_to_degrade < 100ms`, `breaker("db") opens within 1s`}},
	{Name: "recover", Phase: "recovery", Expect: []string{`time_to_recover < 6s`, `breaker("db") closes within 8s after fault`, `p99 latency < 150ms`}},
	{Name: "fast while degraded", Phase: "db-timeout", Expect: []string{`p50 < 5ms`}, MinSamples: 1000},
}

// fixtureReport judges and measures shopTimeline as a run would.
func fixtureReport(t testing.TB) *Report {
	t.Helper()
	tl := shopTimeline()
	s := ScenarioReport{Name: tl.Meta.Scenario, File: "scenarios/db-timeout-serves-cache.yaml", RunDir: tl.Meta.Scenario}
	for _, spec := range fixtureSpecs {
		spec.Classify = demoCls
		c, err := contract.Compile(spec)
		if err != nil {
			t.Fatal(err)
		}
		s.Contracts = append(s.Contracts, c.Evaluate(tl))
	}
	measureInto(&s, tl)
	s.Verdict = contract.Overall(s.Contracts, nil)
	r := New(t0, []ScenarioReport{s})
	r.Duration = 10*time.Second + 420*time.Millisecond
	return r
}

func TestFixtureVerdicts(t *testing.T) {
	r := fixtureReport(t)
	var got []contract.Outcome
	for _, c := range r.Scenarios[0].Contracts {
		got = append(got, c.Outcome)
	}
	want := []contract.Outcome{contract.Pass, contract.Fail, contract.Pass, contract.Inconclusive}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		for _, c := range r.Scenarios[0].Contracts {
			t.Logf("%s: %s %s %s", c.Name, c.Outcome, c.Measured, c.Reason)
		}
		t.Fatalf("fixture verdicts %v, want %v", got, want)
	}
}
