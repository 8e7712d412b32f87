package prompolicy_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/degrade"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/health"
	"github.com/chaoskit/chaoskit/breakerimpl/prombreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/prompolicy"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/shed"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

type cpu float64

func (c cpu) Usage() float64 { return float64(c) }

var errDown = errors.New("down")

// registry builds one of every policy, drives a few calls through them,
// and registers them all (with the breaker collector) on a pedantic
// registry, which checks each metric against its description.
func registry(t *testing.T) *prometheus.Registry {
	t.Helper()
	clk := clock.NewFake(time.Time{})
	ctx := context.Background()

	bh := bulkhead.New(bulkhead.Settings{Name: "recs", MaxConcurrent: 1, Clock: clk})
	p, _ := bh.Allow(ctx)
	bh.Allow(ctx) // rejected: full
	p.Done(nil)

	budget := retry.NewBudget(retry.BudgetSettings{Ratio: 0.5, MinRetries: -1, Window: time.Second, Clock: clk})
	rt := retry.New(retry.Settings{Name: "recs", MaxAttempts: 3, Budget: budget, Clock: clock.NewInstant(time.Time{})})
	retry.Execute(ctx, rt, func(context.Context) (int, error) { return 0, errDown })

	to := timeout.New(timeout.Settings{Name: "recs", Timeout: 250 * time.Millisecond, Clock: clk})
	// One call abandoned at its deadline, its work still running until
	// the test ends.
	abClock := clock.NewFake(time.Time{})
	toAb := timeout.New(timeout.Settings{Name: "payments", Timeout: time.Second, Slack: -1, Clock: abClock, Mode: timeout.Abandon})
	release, returned, answered := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	t.Cleanup(func() { close(release); <-returned })
	go func() {
		answered <- toAb.Run(ctx, func(context.Context) error { defer close(returned); <-release; return nil })
	}()
	for abClock.Timers() == 0 {
		time.Sleep(time.Millisecond)
	}
	abClock.Advance(time.Second)
	if err := <-answered; !errors.Is(err, timeout.ErrTimeout) {
		t.Fatalf("abandon-mode call: %v, want a timeout", err)
	}
	sh := shed.New(shed.Settings{Name: "search", CPU: cpu(0.5), Clock: clk})
	t.Cleanup(sh.Close)
	tb := ratelimit.NewTokenBucket(ratelimit.TokenSettings{Name: "search", Rate: 10, Burst: 1, Clock: clk})
	tb.Allow(ctx)
	tb.Allow(ctx) // rejected

	score := health.New(health.Settings{Name: "db", Clock: clk})
	for range 20 {
		score.Record(time.Millisecond, errDown)
	}
	sw := degrade.New(degrade.Settings{Name: "db-p99", Threshold: 0.1, Release: 0.05, Clock: clk, Signal: func() float64 { return 0.3 }})
	pipe := breakerimpl.Pipeline[int, string]{Degrade: sw, Fallback: fallback.Static[int, string]{Name: "cache", Value: "x"}}
	results := prompolicy.NewResults("shop")
	for range 2 { // the switch engages at once and refuses both
		res, err := pipe.Execute(ctx, 1, func(context.Context) (string, error) { return "y", nil })
		prompolicy.Observe(results, "products", res, err)
	}
	prompolicy.Observe(results, "products", breakerimpl.Result[string]{Source: breakerimpl.SourcePrimary, Reason: breakerimpl.ReasonTimeout}, context.DeadlineExceeded)
	cb := circuitbreaker.New(circuitbreaker.Settings{Name: "db", Clock: clk})

	c := prompolicy.New("shop")
	c.AddBulkhead(bh)
	c.AddRetry(rt)
	c.AddTimeout(to, toAb)
	c.AddShedder(sh)
	c.AddLimiter(tb)
	c.AddHealth(score)
	c.AddSwitch(sw)
	c.AddHTTPFallback(overHTTP{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c, results, prombreaker.NewCollector("shop", cb))
	return reg
}

// overHTTP stands for a *grpcx.HTTPFallback (whose counts the grpcx tests
// check on real servers).
type overHTTP struct{}

func (overHTTP) Name() string           { return "recs" }
func (overHTTP) ServedOverHTTP() uint64 { return 3 }
func (overHTTP) GzipSavedBytes() uint64 { return 1200 }

func TestCollectorValues(t *testing.T) {
	reg := registry(t)
	want := `
# HELP shop_bulkhead_rejections_total Calls a bulkhead turned away: at once (full) or after waiting (wait_timeout).
# TYPE shop_bulkhead_rejections_total counter
shop_bulkhead_rejections_total{bulkhead="recs",reason="full"} 1
shop_bulkhead_rejections_total{bulkhead="recs",reason="wait_timeout"} 0
# HELP shop_retry_retries_total Retries made.
# TYPE shop_retry_retries_total counter
shop_retry_retries_total{retry="recs"} 0
# HELP shop_retry_budget_denied_total Retries the retry budget refused.
# TYPE shop_retry_budget_denied_total counter
shop_retry_budget_denied_total{retry="recs"} 1
# HELP shop_http_fallback_calls_total Calls sent over HTTP while their gRPC path was down.
# TYPE shop_http_fallback_calls_total counter
shop_http_fallback_calls_total{dependency="recs"} 3
# HELP shop_http_fallback_gzip_saved_bytes_total Bytes gzip kept off the wire on the HTTP path: uncompressed less compressed sizes of gzipped bodies, both ways.
# TYPE shop_http_fallback_gzip_saved_bytes_total counter
shop_http_fallback_gzip_saved_bytes_total{dependency="recs"} 1200
# HELP shop_timeout_seconds The timeout of a call.
# TYPE shop_timeout_seconds gauge
shop_timeout_seconds{timeout="payments"} 1
shop_timeout_seconds{timeout="recs"} 0.25
# HELP shop_timeout_abandoned_calls Calls answered at their deadline whose work still runs (abandon mode).
# TYPE shop_timeout_abandoned_calls gauge
shop_timeout_abandoned_calls{timeout="payments"} 1
# HELP shop_rate_limiter_rejections_total Calls the limiter refused.
# TYPE shop_rate_limiter_rejections_total counter
shop_rate_limiter_rejections_total{kind="token-bucket",limiter="search"} 1
# HELP shop_health_healthy 1 while the dependency is healthy.
# TYPE shop_health_healthy gauge
shop_health_healthy{dependency="db"} 0
# HELP shop_health_error_ratio Share of the window's calls that failed.
# TYPE shop_health_error_ratio gauge
shop_health_error_ratio{dependency="db"} 1
# HELP shop_degrade_switch_engaged 1 while the switch forces the fallback.
# TYPE shop_degrade_switch_engaged gauge
shop_degrade_switch_engaged{switch="db-p99"} 1
# HELP shop_degrade_switch_refused_total Calls the engaged switch sent to the fallback.
# TYPE shop_degrade_switch_refused_total counter
shop_degrade_switch_refused_total{switch="db-p99"} 2
# HELP shop_pipeline_results_total Results of calls through a pipeline, by source (primary, a fallback's name, none when the call failed) and the reason the primary did not serve.
# TYPE shop_pipeline_results_total counter
shop_pipeline_results_total{pipeline="products",reason="degraded",source="cache"} 2
shop_pipeline_results_total{pipeline="products",reason="timeout",source="none"} 1
# HELP shop_circuit_breaker_state Circuit breaker state: 1 for the current one.
# TYPE shop_circuit_breaker_state gauge
shop_circuit_breaker_state{breaker="db",state="closed"} 1
shop_circuit_breaker_state{breaker="db",state="half_open"} 0
shop_circuit_breaker_state{breaker="db",state="open"} 0
`
	names := []string{"shop_bulkhead_rejections_total", "shop_retry_retries_total", "shop_retry_budget_denied_total", "shop_http_fallback_calls_total", "shop_http_fallback_gzip_saved_bytes_total", "shop_timeout_seconds", "shop_timeout_abandoned_calls", "shop_rate_limiter_rejections_total",
		"shop_health_healthy", "shop_health_error_ratio", "shop_degrade_switch_engaged", "shop_degrade_switch_refused_total",
		"shop_pipeline_results_total", "shop_circuit_breaker_state"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	// Every described metric has a sample.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, mf := range mfs {
		got[mf.GetName()] = true
	}
	ch := make(chan *prometheus.Desc, 100)
	prompolicy.New("shop").Describe(ch)
	close(ch)
	for d := range ch {
		name := d.String()[strings.Index(d.String(), `"`)+1:]
		name = name[:strings.Index(name, `"`)]
		if !got[name] {
			t.Errorf("%s is described but has no sample", name)
		}
	}
}

// The metrics follow Prometheus's naming conventions, as promlint (the
// linter promtool check metrics runs) checks them: _total counters, base
// units in names (_seconds, _ratio), no colons, help on each.
func TestMetricsLint(t *testing.T) {
	mfs, err := registry(t).Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// promtool check metrics, Debian's promtool (package prometheus), on the
// exposition text: the check a Prometheus user would run.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool not found; apt-get install prometheus")
		}
		t.Skip("promtool not found; apt-get install prometheus")
	}
	mfs, err := registry(t).Gather()
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, promtool, "check", "metrics")
	cmd.Stdin = &text
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
