package breakerimpl_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
)

var errDown = errors.New("db down")

func TestPipelineSourcesAndReasons(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ConsecutiveFailures{Threshold: 2}, OpenDuration: time.Minute, Clock: clk,
	})
	cache := fallback.NewCache[string, string](fallback.CacheSettings{MaxStaleness: 10 * time.Second, Clock: clk})
	p := breakerimpl.Pipeline[string, string]{
		Breaker:  cb,
		Fallback: fallback.Chain[string, string]{cache, fallback.Static[string, string]{Name: "default", Value: "?"}},
	}
	ctx := context.Background()
	ok := func(v string) func(context.Context) (string, error) {
		return func(context.Context) (string, error) { return v, nil }
	}
	fail := func(err error) func(context.Context) (string, error) {
		return func(context.Context) (string, error) { return "", err }
	}
	tests := []struct {
		name    string
		advance time.Duration
		key     string
		fn      func(context.Context) (string, error)
		want    breakerimpl.Result[string]
	}{
		{"primary serves and is remembered", 0, "a", ok("A"), breakerimpl.Result[string]{Value: "A", Source: "primary"}},
		{"error: the cached copy, with its age", 3 * time.Second, "a", fail(errDown),
			breakerimpl.Result[string]{Value: "A", Source: "cache", Reason: breakerimpl.ReasonError, Age: 3 * time.Second}},
		{"unknown key: the next in the chain", 0, "b", fail(errDown),
			breakerimpl.Result[string]{Value: "?", Source: "default", Reason: breakerimpl.ReasonError}},
		{"open breaker: cache, reason open", time.Second, "a", ok("never runs"),
			breakerimpl.Result[string]{Value: "A", Source: "cache", Reason: breakerimpl.ReasonOpen, Age: 4 * time.Second}},
		{"too stale for the cache: the default", 7 * time.Second, "a", ok("never runs"),
			breakerimpl.Result[string]{Value: "?", Source: "default", Reason: breakerimpl.ReasonOpen}},
		{"deadline exceeded is a timeout", time.Minute, "a", fail(context.DeadlineExceeded),
			breakerimpl.Result[string]{Value: "?", Source: "default", Reason: breakerimpl.ReasonTimeout}},
	}
	for _, tc := range tests {
		clk.Advance(tc.advance)
		got, err := p.Execute(ctx, tc.key, tc.fn)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v, nil", tc.name, got, err, tc.want)
		}
	}
}

func TestPipelineJoinsErrorsWhenTheFallbackFails(t *testing.T) {
	p := breakerimpl.Pipeline[string, int]{
		Fallback: fallback.NewCache[string, int](fallback.CacheSettings{Clock: clock.NewFake(time.Time{})}),
	}
	res, err := p.Execute(context.Background(), "k", func(context.Context) (int, error) { return 0, errDown })
	if !errors.Is(err, errDown) || !errors.Is(err, fallback.ErrNotCached) {
		t.Fatalf("err = %v, want both the primary's and the fallback's", err)
	}
	if res.Source != breakerimpl.SourcePrimary || res.Reason != breakerimpl.ReasonError {
		t.Fatalf("result %+v, want source primary, reason error", res)
	}
}

func TestPipelineFallbackOn(t *testing.T) {
	errNotFound := errors.New("not found")
	p := breakerimpl.Pipeline[string, int]{
		Fallback:   fallback.Static[string, int]{Value: -1},
		FallbackOn: func(err error) bool { return !errors.Is(err, errNotFound) },
	}
	_, err := p.Execute(context.Background(), "k", func(context.Context) (int, error) { return 0, errNotFound })
	if !errors.Is(err, errNotFound) {
		t.Fatalf("err = %v, want not found passed through", err)
	}
	res, err := p.Execute(context.Background(), "k", func(context.Context) (int, error) { return 0, errDown })
	if err != nil || res.Value != -1 || res.Source != "static" {
		t.Fatalf("got %+v, %v; want the static fallback", res, err)
	}
}

func TestPipelinePanic(t *testing.T) {
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, Clock: clock.NewFake(time.Time{}),
	})
	boom := func(context.Context) (int, error) { panic("boom") }

	withFallback := breakerimpl.Pipeline[string, int]{Breaker: cb, Fallback: fallback.Static[string, int]{Value: 7}}
	res, err := withFallback.Execute(context.Background(), "k", boom)
	if err != nil || res.Value != 7 || res.Reason != breakerimpl.ReasonPanic {
		t.Fatalf("got %+v, %v; want the fallback, reason panic", res, err)
	}
	if cb.State() != circuitbreaker.Open {
		t.Fatalf("breaker %v after a panic, want open", cb.State())
	}

	failing := breakerimpl.Pipeline[string, int]{Fallback: fallback.Func[string, int]{
		Fn: func(context.Context, string, error) (int, error) { return 0, errDown },
	}}
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want the panic raised again when the fallback fails", r)
		}
	}()
	failing.Execute(context.Background(), "k", boom)
}

func TestReasonOf(t *testing.T) {
	for err, want := range map[error]breakerimpl.Reason{
		nil:                                       breakerimpl.ReasonNone,
		breakerimpl.ErrOpen:                       breakerimpl.ReasonOpen,
		breakerimpl.ErrHalfOpenFull:               breakerimpl.ReasonHalfOpenFull,
		breakerimpl.ErrRejected:                   breakerimpl.ReasonRejected,
		breakerimpl.ErrDegraded:                   breakerimpl.ReasonDegraded,
		context.DeadlineExceeded:                  breakerimpl.ReasonTimeout,
		breakerimpl.NewPanicError("x"):            breakerimpl.ReasonPanic,
		errors.Join(errDown, breakerimpl.ErrOpen): breakerimpl.ReasonOpen,
		errDown: breakerimpl.ReasonError,
	} {
		if got := breakerimpl.ReasonOf(err); got != want {
			t.Errorf("ReasonOf(%v) = %v, want %v", err, got, want)
		}
	}
}

// Run with no guard runs the function, passes its result through, and
// raises its panic again.
func TestRunWithoutAGuard(t *testing.T) {
	n, err := breakerimpl.Run(context.Background(), nil, func(context.Context) (int, error) { return 7, errDown })
	if n != 7 || !errors.Is(err, errDown) {
		t.Fatalf("Run = %d, %v; want 7, %v", n, err, errDown)
	}
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want the panic of fn", r)
		}
	}()
	breakerimpl.Run(context.Background(), nil, func(context.Context) (int, error) { panic("boom") })
}
