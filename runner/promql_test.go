package runner

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/internal/testserver"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// promFixture is a service whose /metrics exports a counter and a gauge
// the test sets.
type promFixture struct {
	mu              sync.Mutex
	requests, level float64
}

func (f *promFixture) set(requests, level float64) {
	f.mu.Lock()
	f.requests, f.level = requests, level
	f.mu.Unlock()
}

func (f *promFixture) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Fprintf(w, "# TYPE fixture_requests_total counter\nfixture_requests_total{code=\"200\"} %g\n# TYPE fixture_level gauge\nfixture_level %g\n", f.requests, f.level)
}

// Local and server evaluation agree on the same data: a run samples a
// fixture's /metrics itself (target.metrics, every 50ms) while a real
// Prometheus (Debian's, on loopback) scrapes the same endpoint every
// second; the counter and the gauge change three times, each value held
// until the server has scraped it inside the window (the server's view
// lags the service by up to a scrape interval; the local one by 50ms). The figures of the local forms and of
// their promql twins over the same window are equal (to 1e-9): a counter's
// increase and rate, a gauge's max, min and last. avg is left out: the
// local mean weighs every 50ms scrape, the server's every step.
func TestPromQLAgreesWithLocalMetrics(t *testing.T) {
	fix := &promFixture{}
	fix.set(10, 3)
	srv := httptest.NewServer(fix)
	defer srv.Close()
	prom := testserver.StartPrometheus(t, strings.TrimPrefix(srv.URL, "http://"))
	ctx := t.Context()

	pairs := [][2]string{
		{`increase(fixture_requests_total)`, "increase(promql(`sum(fixture_requests_total)`))"},
		{`rate(fixture_requests_total{code="200"})`, "rate(promql(`fixture_requests_total{code=\"200\"}`))"},
		{`max(fixture_level)`, "max(promql(`fixture_level`))"},
		{`min(fixture_level)`, "min(promql(`fixture_level`))"},
		{`last(fixture_level)`, "last(promql(`fixture_level`))"},
	}
	var expect []string
	for _, p := range pairs {
		expect = append(expect, "      - '"+strings.ReplaceAll(p[0], "'", "''")+" >= 0'", "      - '"+p[1]+" >= 0'")
	}
	yaml := fmt.Sprintf(`name: agree
target:
  url: %s
  metrics: {path: /metrics, interval: 50ms}
prometheus: {url: %s, step: 250ms, wait: 10s}
load:
  rate: 1/s
  requests: [{path: /}]
phases:
  - name: p
    duration: 1s
contracts:
  - name: figures
    phase: p
    min_samples: 0
    expect:
%s
`, srv.URL, prom.URL(), strings.Join(expect, "\n"))
	sc, err := plan.Parse("agree.yaml", []byte(yaml), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{sc: sc, tw: timeline.NewWriter(io.Discard), tl: &timeline.Timeline{Meta: timeline.Meta{Scenario: "agree"}},
		tgt: &target{baseURL: srv.URL, client: srv.Client()}}
	r.phase.Store("p")

	// scraped waits until the server's newest sample of the fixture holds
	// requests and was scraped after after; it returns the scrape's time.
	scraped := func(requests float64, after time.Time) time.Time {
		deadline := time.Now().Add(30 * time.Second)
		for {
			v, err := queryPrometheus(ctx, nil, prom.URL(), `fixture_requests_total`, time.Now())
			at, err2 := queryPrometheus(ctx, nil, prom.URL(), `timestamp(fixture_requests_total)`, time.Now())
			if err == nil && err2 == nil && v == requests && at > float64(after.UnixMilli())/1000 {
				return time.UnixMilli(int64(at * 1000))
			}
			if time.Now().After(deadline) {
				t.Fatalf("the server did not scrape %v within 30s: %v, %v", requests, err, err2)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Before the window the fixture shows other values (5 and 1): a
	// figure that reads points outside its window disagrees. The window
	// opens and closes two steps after the server scraped the values it
	// holds then, so that a point at or before each edge shows them, and
	// the server's values are not older than the window's edges.
	step := sc.Prometheus.Step.D()
	stop := r.startSampler()
	fix.set(5, 1)
	held := scraped(5, time.Time{})
	fix.set(10, 3)
	held = scraped(10, held)
	start := held.Add(2 * step)
	time.Sleep(time.Until(start))
	r.event(timeline.Event{Time: start, Kind: timeline.PhaseStart, Phase: "p"})
	held = scraped(10, start) // the window's first values, seen inside it by both
	for _, v := range [][2]float64{{17, 9}, {22, 4}, {29, 6}} {
		fix.set(v[0], v[1])
		held = scraped(v[0], held)
	}
	end := held.Add(2 * step)
	time.Sleep(time.Until(end))
	r.event(timeline.Event{Time: end, Kind: timeline.PhaseEnd, Phase: "p"})
	stop()
	r.recordPromQL(ctx)

	c, err := contract.Compile(contract.Spec{Name: "figures", Phase: "p", MinSamples: -1, Expect: sc.Contracts[0].Expect})
	if err != nil {
		t.Fatal(err)
	}
	checks := c.Evaluate(r.tl).Checks
	want := map[string]float64{"increase": 19, "max": 9, "min": 3, "last": 6}
	for i, p := range pairs {
		local, server := checks[2*i], checks[2*i+1]
		if local.Value == nil || server.Value == nil {
			t.Errorf("%s: no figure: local %s (%s), server %s (%s)", p[0], local.Measured, local.Reason, server.Measured, server.Reason)
			continue
		}
		if math.Abs(*local.Value-*server.Value) > 1e-9 {
			t.Errorf("%s = %v (%s), %s = %v (%s): they disagree", p[0], *local.Value, local.Measured, p[1], *server.Value, server.Measured)
		}
		fn := strings.SplitN(p[0], "(", 2)[0]
		if w, ok := want[fn]; ok && *server.Value != w {
			t.Errorf("%s = %v, want %v", p[1], *server.Value, w)
		}
		if fn == "rate" && math.Abs(*server.Value-19/end.Sub(start).Seconds()) > 1e-6 {
			t.Errorf("%s = %v, want 19 over the window's %v", p[1], *server.Value, end.Sub(start))
		}
	}

	// A server that is gone: each query's answer is an error, and the
	// form is inconclusive with it.
	prom.Stop()
	r.tl.Events = r.tl.Events[:0]
	r.event(timeline.Event{Time: start, Kind: timeline.PhaseStart, Phase: "p"})
	r.event(timeline.Event{Time: end, Kind: timeline.PhaseEnd, Phase: "p"})
	began := time.Now()
	r.recordPromQL(ctx)
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("asking a server that is gone took %v; it is not waited for", d)
	}
	got := c.Evaluate(r.tl).Checks[5]
	if got.Outcome != contract.Inconclusive || !strings.Contains(got.Reason, "the Prometheus server could not evaluate promql(`fixture_level`)") || !strings.Contains(got.Reason, "refused") {
		t.Errorf("with the server gone: %s (%s), want inconclusive naming the refused connection", got.Outcome, got.Reason)
	}
}
