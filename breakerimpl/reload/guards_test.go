package reload_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/degrade"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/health"
	"github.com/chaoskit/chaoskit/breakerimpl/reload"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// guards is one of each policy the guard entries tune, registered.
type guards struct {
	t      *reload.Targets
	clk    *clock.Fake
	to     *timeout.Timeout
	bh     *bulkhead.Bulkhead
	toggle *fallback.Toggle
	fb     fallback.Toggled[string, string]
	hs     *health.Score
	sw     *degrade.Switch
}

func newGuards() *guards {
	clk := clock.NewFake(time.Time{})
	g := &guards{t: &reload.Targets{}, clk: clk, toggle: &fallback.Toggle{}}
	g.to = timeout.New(timeout.Settings{Name: "recs", Timeout: time.Second, Slack: -1, Clock: clk})
	g.bh = bulkhead.New(bulkhead.Settings{Name: "recs", MaxConcurrent: 1, Clock: clk})
	g.fb = fallback.Toggled[string, string]{Fallback: fallback.Static[string, string]{Value: "default"}, Toggle: g.toggle}
	g.hs = health.New(health.Settings{Name: "grpc", MinRequests: 1, Clock: clk})
	g.sw = degrade.New(degrade.Settings{Name: "db-p95", Signal: func() float64 { return 0.5 }, Threshold: 1, Clock: clk})
	g.t.AddTimeout("recommendations", g.to)
	g.t.AddBulkhead("recommendations", g.bh)
	g.t.AddFallback("recommendations-default", g.toggle)
	g.t.AddHealth("recommendations-grpc", g.hs)
	g.t.AddDegrade("db-p95", g.sw)
	return g
}

const guardFile = `timeouts:
  recommendations:
    timeout: 20ms
    max_abandoned: 5
bulkheads:
  recommendations:
    max_concurrent: 2
    max_wait: 50ms
fallbacks:
  recommendations-default:
    enabled: false
health:
  recommendations-grpc:
    threshold: -1
    max_error_rate: 0.9
degrade:
  db-p95:
    threshold: 0.2
    hold: 2s
`

func applyFile(t *testing.T, targets *reload.Targets, src string) error {
	t.Helper()
	p, err := reload.Parse("policies.yaml", []byte(src))
	if err != nil {
		return err
	}
	return targets.Apply("policies.yaml", []byte(src), p)
}

// TestGuardEntriesChangeLivePolicies applies a file to a timeout, a
// bulkhead, a fallback toggle, a health score and a degrade switch, sees
// each behave by its new settings, and rolls back to the initial ones.
func TestGuardEntriesChangeLivePolicies(t *testing.T) {
	g := newGuards()
	ctx := context.Background()

	// Before: one bulkhead slot; the fallback serves; the switch released;
	// failures make the score unhealthy.
	held, err := g.bh.Allow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.bh.Allow(ctx); !errors.Is(err, bulkhead.ErrFull) {
		t.Fatalf("second call with one slot: %v, want ErrFull", err)
	}
	for range 20 {
		g.hs.Record(time.Millisecond, errors.New("unavailable"))
	}
	if g.hs.Healthy() {
		t.Fatal("health: healthy after 20 failures in 20 calls")
	}
	if g.sw.Engaged() {
		t.Fatal("degrade: engaged at a signal of 0.5 under a threshold of 1")
	}

	if err := applyFile(t, g.t, guardFile); err != nil {
		t.Fatal(err)
	}

	// A call begun now times out after 20ms.
	cctx := g.to.Begin(ctx)
	g.clk.Advance(20 * time.Millisecond)
	select {
	case <-cctx.Done():
	default:
		t.Error("timeout: a call begun after the reload is not done 20ms in")
	}
	if err := g.to.End(cctx, cctx.Err()); !errors.Is(err, timeout.ErrTimeout) {
		t.Errorf("timeout: %v, want ErrTimeout", err)
	}
	if got := g.to.MaxAbandoned(); got != 5 {
		t.Errorf("timeout: max_abandoned %d, want 5", got)
	}
	// The second slot is there.
	second, err := g.bh.Allow(ctx)
	if err != nil {
		t.Fatalf("bulkhead: second call after max_concurrent 2: %v", err)
	}
	if s := g.bh.Settings(); s.MaxConcurrent != 2 || s.MaxWait != 50*time.Millisecond {
		t.Errorf("bulkhead settings %+v, want 2 slots and 50ms of wait", s)
	}
	// The fallback serves nothing.
	if _, err := g.fb.Recover(ctx, "k", errors.New("down")); !errors.Is(err, fallback.ErrDisabled) {
		t.Errorf("fallback: %v, want ErrDisabled", err)
	}
	// A negative threshold: healthy whatever the score.
	if !g.hs.Healthy() {
		t.Error("health: unhealthy under a threshold of -1")
	}
	// The signal of 0.5 is now over the threshold.
	if !g.sw.Engaged() {
		t.Error("degrade: released at a signal of 0.5 over a threshold of 0.2")
	}
	if tu := g.sw.Tuning(); tu.Hold != 2*time.Second || tu.Release != 0.2 {
		t.Errorf("degrade tuning %+v, want hold 2s and the release following the threshold to 0.2", tu)
	}

	if err := g.t.Rollback("initial"); err != nil {
		t.Fatal(err)
	}
	if g.to.Timeout() != time.Second || g.bh.Settings().MaxConcurrent != 1 || !g.toggle.Enabled() {
		t.Errorf("after rollback: timeout %v, %d slots, fallback on %v; want 1s, 1, true", g.to.Timeout(), g.bh.Settings().MaxConcurrent, g.toggle.Enabled())
	}
	if g.hs.Healthy() {
		t.Error("after rollback: health still healthy after 20 failures")
	}
	if tu := g.sw.Tuning(); tu.Threshold != 1 || tu.Hold != 0 {
		t.Errorf("after rollback: degrade tuning %+v, want threshold 1, no hold", tu)
	}
	held.Done(nil)
	second.Done(nil)
	if vs := g.t.Versions(); len(vs) != 3 || vs[2].Source != "rollback to initial" {
		t.Errorf("versions %+v, want initial, v1, v2 (the rollback)", vs)
	}
}

// TestBulkheadRaisedHandsSlotsToTheQueue: a caller queued on a full
// bulkhead gets the slot a reload adds, without any call ending.
func TestBulkheadRaisedHandsSlotsToTheQueue(t *testing.T) {
	g := newGuards()
	ctx := context.Background()
	if err := applyFile(t, g.t, "bulkheads:\n  recommendations:\n    max_wait: 1h\n"); err != nil {
		t.Fatal(err)
	}
	held, err := g.bh.Allow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		p, err := g.bh.Allow(ctx)
		if err == nil {
			p.Done(nil)
		}
		got <- err
	}()
	for g.bh.Snapshot().Waiting == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := applyFile(t, g.t, "bulkheads:\n  recommendations:\n    max_concurrent: 2\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("queued caller: %v, want the new slot", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("queued caller still waiting 5s after a second slot was added")
		held.Done(nil)
		<-got
		return
	}
	held.Done(nil)
}

// TestBadGuardEntriesAreRefusedWhole: each bad value is named at its line
// and column, and no policy changes.
func TestBadGuardEntriesAreRefusedWhole(t *testing.T) {
	g := newGuards()
	src := `timeouts:
  recommendations:
    timeout: 0s
bulkheads:
  recommendations:
    max_concurrent: 0
fallbacks:
  recommendation-default:
    enabled: false
health:
  recommendations-grpc:
    latency_target: 500ms
    latency_limit: 200ms
degrade:
  db-p95:
    release: 3
`
	err := applyFile(t, g.t, src)
	if err == nil {
		t.Fatal("a bad file was applied")
	}
	for _, want := range []string{
		"policies.yaml:3:14: timeout 0s: want a duration above 0",
		"policies.yaml:6:21: max_concurrent 0: want 1 or more",
		`policies.yaml:8:3: unknown fallback "recommendation-default" (known: recommendations-default)`,
		"policies.yaml:13:20: latency_limit 200ms is not above latency_target 500ms",
		"policies.yaml:16:14: release 3 is above threshold 1",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
	if g.to.Timeout() != time.Second || g.bh.Settings().MaxConcurrent != 1 || !g.toggle.Enabled() || g.hs.Tuning().LatencyTarget != health.DefaultLatencyTarget || g.sw.Tuning().Release != 1 {
		t.Error("a policy changed although the file was refused")
	}
	if vs := g.t.Versions(); len(vs) != 0 {
		t.Errorf("versions %v after a refused file, want none", vs)
	}
	// A duration that does not parse is named at its place too.
	if err := applyFile(t, g.t, "degrade:\n  db-p95:\n    hold: soon\n"); err == nil || !strings.Contains(err.Error(), "policies.yaml:3:11:") {
		t.Errorf("bad duration: %v, want it at 3:11", err)
	}
}

// The fallback toggle in a pipeline: off, the caller gets the primary's
// error.
func TestToggledFallbackInPipeline(t *testing.T) {
	g := newGuards()
	p := breakerimpl.Pipeline[string, string]{Fallback: g.fb}
	fail := func(context.Context) (string, error) { return "", errors.New("down") }
	if res, err := p.Execute(context.Background(), "k", fail); err != nil || res.Value != "default" {
		t.Fatalf("on: %+v %v, want the default", res, err)
	}
	g.toggle.SetEnabled(false)
	if _, err := p.Execute(context.Background(), "k", fail); err == nil || !strings.Contains(err.Error(), "down") {
		t.Fatalf("off: %v, want the primary's error", err)
	}
}
