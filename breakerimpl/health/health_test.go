package health_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/health"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errBoom = errors.New("500 from the dependency")

// calls is a batch of n calls of one latency and error.
type calls struct {
	n       int
	latency time.Duration
	err     error
}

func TestScore(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	tests := []struct {
		name        string
		settings    health.Settings
		calls       []calls
		down        bool
		wantHealthy bool
		wantScore   float64
		wantP95     time.Duration // 0: not checked
	}{
		{name: "no calls is healthy", wantHealthy: true, wantScore: 1},
		{name: "fast successes", calls: []calls{{100, 10 * time.Millisecond, nil}}, wantHealthy: true, wantScore: 1},
		// One component at its worst takes the default score to 0.6, the
		// threshold: unhealthy.
		{name: "slow successes alone", calls: []calls{{100, 800 * time.Millisecond, nil}}, wantHealthy: false, wantScore: 0.6, wantP95: 800 * time.Millisecond},
		{name: "half the calls fail", calls: []calls{{50, 10 * time.Millisecond, nil}, {50, 10 * time.Millisecond, errBoom}}, wantHealthy: false, wantScore: 0.6},
		// 25% errors is halfway to MaxErrorRate: 0.4·1 + 0.4·0.5 + 0.2·1.
		{name: "a quarter fail", calls: []calls{{75, 10 * time.Millisecond, nil}, {25, 10 * time.Millisecond, errBoom}}, wantHealthy: true, wantScore: 0.8},
		// Connection errors weigh in the errors and the connection
		// components: 0.4 + 0.4·0.5 + 0.2·0.5.
		{name: "a quarter refused at dial", calls: []calls{{75, 10 * time.Millisecond, nil}, {25, 10 * time.Millisecond, dial}}, wantHealthy: true, wantScore: 0.7},
		{name: "connection down", calls: []calls{{100, 10 * time.Millisecond, nil}}, down: true, wantHealthy: true, wantScore: 0.8},
		{name: "connection down and slow", calls: []calls{{100, 300 * time.Millisecond, nil}}, down: true, wantHealthy: false},
		{name: "too few calls say nothing", calls: []calls{{9, time.Second, errBoom}}, wantHealthy: true, wantScore: 1},
		{name: "refusals are not counted", calls: []calls{{5, 10 * time.Millisecond, nil}, {50, 0, breakerimpl.ErrOpen}, {50, 0, breakerimpl.ErrRejected}, {50, 0, health.ErrUnhealthy}}, wantHealthy: true, wantScore: 1},
		{name: "cancelled calls are not counted", calls: []calls{{50, time.Second, context.Canceled}, {5, time.Millisecond, nil}}, wantHealthy: true, wantScore: 1},
		// A latency halfway between the target and the limit scores 0.5.
		{name: "p95 between target and limit", settings: health.Settings{LatencyTarget: 10 * time.Millisecond, LatencyLimit: 30 * time.Millisecond},
			calls: []calls{{100, 20 * time.Millisecond, nil}}, wantHealthy: true, wantScore: 0.8, wantP95: 20 * time.Millisecond},
		{name: "weights", settings: health.Settings{LatencyWeight: 1, ErrorWeight: -1, ConnectionWeight: -1},
			calls: []calls{{100, 10 * time.Millisecond, errBoom}}, wantHealthy: true, wantScore: 1},
		{name: "threshold", settings: health.Settings{Threshold: 0.9}, calls: []calls{{75, 10 * time.Millisecond, nil}, {25, 10 * time.Millisecond, errBoom}}, wantHealthy: false, wantScore: 0.8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.settings
			st.Clock = clock.NewFake(time.Time{})
			s := health.New(st)
			for _, c := range tt.calls {
				for range c.n {
					s.Record(c.latency, c.err)
				}
			}
			s.SetConnected(!tt.down)
			r := s.Report()
			if r.Healthy != tt.wantHealthy || s.Healthy() != tt.wantHealthy {
				t.Errorf("healthy %v (Healthy() %v), want %v; report %+v", r.Healthy, s.Healthy(), tt.wantHealthy, r)
			}
			if tt.wantScore != 0 && !near(r.Score, tt.wantScore, 0.02) {
				t.Errorf("score %v, want %v; report %+v", r.Score, tt.wantScore, r)
			}
			if tt.wantP95 != 0 && !near(float64(r.P95), float64(tt.wantP95), 0.5*float64(tt.wantP95)) {
				t.Errorf("p95 %v, want about %v", r.P95, tt.wantP95)
			}
		})
	}
}

func near(a, b, tol float64) bool { return a >= b-tol && a <= b+tol }

// A quantile is interpolated in its bin: for latencies spread evenly over
// 1..200ms it is within a bin's width of the true one.
func TestQuantile(t *testing.T) {
	s := health.New(health.Settings{Clock: clock.NewFake(time.Time{})})
	for i := 1; i <= 200; i++ {
		s.Record(time.Duration(i)*time.Millisecond, nil)
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 100 * time.Millisecond}, {0.95, 190 * time.Millisecond}, {0.99, 198 * time.Millisecond}, {0.1, 20 * time.Millisecond}} {
		got := s.Quantile(tt.q)
		if !near(float64(got), float64(tt.want), 0.25*float64(tt.want)) {
			t.Errorf("Quantile(%v) = %v, want about %v", tt.q, got, tt.want)
		}
	}
	if got := health.New(health.Settings{}).Quantile(0.99); got != 0 {
		t.Errorf("empty window's quantile %v, want 0", got)
	}
	// Past 32 times the target a latency reads as 32 times the target.
	far := health.New(health.Settings{Clock: clock.NewFake(time.Time{}), LatencyTarget: time.Millisecond})
	far.Record(time.Hour, nil)
	if got := far.Quantile(1); got != 32*time.Millisecond {
		t.Errorf("a latency of an hour reads %v, want the ceiling of 32ms", got)
	}
}

// The window forgets: once the bad calls are a window old the dependency
// is healthy again, and events say both changes with their reasons.
func TestWindowSlidesAndEvents(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	var events []health.Event
	s := health.New(health.Settings{Name: "recs", Clock: clk, Window: time.Second, Buckets: 10,
		OnChange: func(e health.Event) { events = append(events, e) }})
	for range 20 {
		s.Record(time.Millisecond, errBoom)
	}
	if s.Healthy() {
		t.Fatal("healthy after 20 failures out of 20")
	}
	clk.Advance(500 * time.Millisecond)
	if s.Healthy() {
		t.Fatal("healthy half a window after the failures")
	}
	clk.Advance(600 * time.Millisecond)
	if !s.Healthy() {
		t.Fatalf("still unhealthy a window after the failures: %+v", s.Report())
	}
	if len(events) != 2 || events[0].Healthy || events[0].Reason != health.ReasonUnder || !events[1].Healthy || events[1].Reason != health.ReasonRecovered || events[0].Name != "recs" {
		t.Fatalf("events %+v, want under then recovered", events)
	}
	if sn := s.Snapshot(); sn.Changes != 2 || !sn.Healthy {
		t.Fatalf("snapshot %+v, want 2 changes and healthy", sn)
	}
}

// Healthy reuses a score for Refresh; a Record meanwhile shows after it.
func TestHealthyRefresh(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	s := health.New(health.Settings{Clock: clk, Refresh: 100 * time.Millisecond})
	if !s.Healthy() {
		t.Fatal("unhealthy with no calls")
	}
	for range 20 {
		s.Record(time.Millisecond, errBoom)
	}
	if !s.Healthy() {
		t.Fatal("the cached verdict was not reused within Refresh")
	}
	clk.Advance(100 * time.Millisecond)
	if s.Healthy() {
		t.Fatal("the verdict was not computed again after Refresh")
	}
}

// As a Pipeline's Degrade guard, an unhealthy score keeps calls off the
// dependency: the fallback serves with Reason "degraded".
func TestGuardInPipeline(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	s := health.New(health.Settings{Clock: clk, LatencyTarget: 10 * time.Millisecond})
	p := breakerimpl.Pipeline[struct{}, string]{
		Degrade:  s,
		Fallback: fallback.Static[struct{}, string]{Name: "default", Value: "bestsellers"},
	}
	ctx := context.Background()
	primaryCalls := 0
	slow := func(context.Context) (string, error) {
		primaryCalls++
		clk.Advance(50 * time.Millisecond) // 5× the target
		return "fresh", nil
	}
	for range 10 {
		res, err := p.Execute(ctx, struct{}{}, slow)
		if err != nil || res.Source != breakerimpl.SourcePrimary {
			t.Fatalf("call %d while healthy: %+v, %v", primaryCalls, res, err)
		}
	}
	clk.Advance(health.DefaultRefresh)
	res, err := p.Execute(ctx, struct{}{}, slow)
	if err != nil || res.Source != "default" || res.Reason != breakerimpl.ReasonDegraded || res.Reason.String() != "degraded" {
		t.Fatalf("after 10 slow calls: %+v, %v; want the fallback with reason degraded", res, err)
	}
	if primaryCalls != 10 {
		t.Fatalf("the primary was called %d times, want 10", primaryCalls)
	}
	if sn := s.Snapshot(); sn.Refused != 1 {
		t.Fatalf("refused %d, want 1", sn.Refused)
	}
	if !errors.Is(health.ErrUnhealthy, breakerimpl.ErrDegraded) {
		t.Fatal("ErrUnhealthy is not a breakerimpl.ErrDegraded")
	}
}

func TestConnectionError(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("get: %w", syscall.ECONNREFUSED), true},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{&net.OpError{Op: "dial", Err: errors.New("i/o timeout")}, true},
		{errBoom, false},
		{context.DeadlineExceeded, false},
	} {
		if got := health.ConnectionError(tt.err); got != tt.want {
			t.Errorf("ConnectionError(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
