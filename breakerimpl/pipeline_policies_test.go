package breakerimpl_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/hedge"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// recordingGuard logs Allow and Done, and refuses with refuse if set.
type recordingGuard struct {
	name   string
	log    *[]string
	refuse error
}

func (g *recordingGuard) Allow(context.Context) (breakerimpl.Permit, error) {
	*g.log = append(*g.log, "allow "+g.name)
	if g.refuse != nil {
		return breakerimpl.Permit{}, g.refuse
	}
	return breakerimpl.NewPermit(g, 0, 0), nil
}

func (g *recordingGuard) Done(_ breakerimpl.Permit, err error) {
	*g.log = append(*g.log, fmt.Sprintf("done %s %v", g.name, err))
}

func TestPipelineAsksGuardsInOrderAndTellsThemInReverse(t *testing.T) {
	var log []string
	guards := map[string]*recordingGuard{}
	for _, n := range []string{"shed", "limit", "degrade", "breaker", "bulkhead"} {
		guards[n] = &recordingGuard{name: n, log: &log}
	}
	p := breakerimpl.Pipeline[string, int]{
		Shedder: guards["shed"], Limiter: guards["limit"], Degrade: guards["degrade"], Breaker: guards["breaker"], Bulkhead: guards["bulkhead"],
		Fallback: fallback.Static[string, int]{Value: -1},
	}
	errDB := errors.New("db")
	res, err := p.Execute(context.Background(), "k", func(context.Context) (int, error) {
		log = append(log, "fn")
		return 0, errDB
	})
	want := []string{"allow shed", "allow limit", "allow degrade", "allow breaker", "allow bulkhead", "fn",
		"done bulkhead db", "done breaker db", "done degrade db", "done limit db", "done shed db"}
	if err != nil || res.Value != -1 || res.Reason != breakerimpl.ReasonError || !slices.Equal(log, want) {
		t.Fatalf("got %+v, %v, log %q; want the fallback and log %q", res, err, log, want)
	}

	// A guard that refuses is the last asked, and only those outside it
	// are told, innermost first.
	order := []string{"shed", "limit", "degrade", "breaker", "bulkhead"}
	for i, refuser := range order {
		log = nil
		for _, n := range order {
			guards[n].refuse = nil
		}
		guards[refuser].refuse = breakerimpl.ErrRejected
		res, err = p.Execute(context.Background(), "k", func(context.Context) (int, error) { t.Fatal("fn ran"); return 0, nil })
		want = nil
		for _, n := range order[:i+1] {
			want = append(want, "allow "+n)
		}
		for j := i - 1; j >= 0; j-- {
			want = append(want, "done "+order[j]+" "+breakerimpl.ErrRejected.Error())
		}
		if err != nil || res.Reason != breakerimpl.ReasonRejected || !slices.Equal(log, want) {
			t.Fatalf("%s refused: got %+v, %v, log %q; want reason rejected and log %q", refuser, res, err, log, want)
		}
	}
}

// The breaker sees one outcome per call, after the retries; the bulkhead
// holds one slot for the call, retries included.
func TestPipelineRetriesInsideTheBreakerAndTheBulkhead(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 2}, Clock: clk})
	bh := bulkhead.New(bulkhead.Settings{MaxConcurrent: 1, Clock: clk})
	p := breakerimpl.Pipeline[string, string]{
		Breaker: cb, Bulkhead: bh,
		Retry: retry.New(retry.Settings{MaxAttempts: 3, Rand: func(int64) int64 { return 0 }, Clock: clk}),
	}
	attempts := 0
	flaky := func(context.Context) (string, error) {
		attempts++
		if s := bh.Snapshot(); s.InFlight != 1 {
			t.Errorf("attempt %d with %d slots taken, want 1", attempts, s.InFlight)
		}
		if attempts%3 != 0 {
			return "", errors.New("reset")
		}
		return "ok", nil
	}
	for range 2 {
		if res, err := p.Execute(context.Background(), "k", flaky); err != nil || res.Value != "ok" {
			t.Fatalf("got %+v, %v", res, err)
		}
	}
	// Four failed attempts, two of them in a row, and still closed: the
	// breaker saw two successful calls.
	if cb.State() != circuitbreaker.Closed || attempts != 6 || bh.Snapshot().InFlight != 0 {
		t.Fatalf("breaker %v after %d attempts, %d slots taken", cb.State(), attempts, bh.Snapshot().InFlight)
	}
}

func TestPipelineTimeoutIsAFailureWithReasonTimeout(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, Clock: clk})
	p := breakerimpl.Pipeline[string, string]{
		Breaker:  cb,
		Timeout:  timeout.New(timeout.Settings{Timeout: time.Second, Slack: -1, Clock: clk}),
		Fallback: fallback.Static[string, string]{Name: "default", Value: "?"},
	}
	hang := func(ctx context.Context) (string, error) {
		clk.Advance(2 * time.Second) // the dependency takes too long
		<-ctx.Done()
		return "", ctx.Err()
	}
	res, err := p.Execute(context.Background(), "k", hang)
	if err != nil || res.Source != "default" || res.Reason != breakerimpl.ReasonTimeout || cb.State() != circuitbreaker.Open {
		t.Fatalf("got %+v, %v, breaker %v; want the fallback for a timeout and an open breaker", res, err, cb.State())
	}
}

func TestPipelineBulkheadRejectionIsReasonRejected(t *testing.T) {
	bh := bulkhead.New(bulkhead.Settings{MaxConcurrent: 1})
	hold, _ := bh.Allow(context.Background())
	defer hold.Done(nil)
	p := breakerimpl.Pipeline[string, int]{Bulkhead: bh, Fallback: fallback.Static[string, int]{Value: 1}}
	res, err := p.Execute(context.Background(), "k", func(context.Context) (int, error) { return 2, nil })
	if err != nil || res.Value != 1 || res.Reason != breakerimpl.ReasonRejected {
		t.Fatalf("got %+v, %v; want the fallback, reason rejected", res, err)
	}
}

func TestPipelineHedge(t *testing.T) {
	p := breakerimpl.Pipeline[string, string]{Hedge: hedge.New(hedge.Settings{Delay: time.Millisecond})}
	var n atomic.Int32
	res, err := p.Execute(context.Background(), "k", func(ctx context.Context) (string, error) {
		if n.Add(1) == 1 {
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "hedged", nil
	})
	if err != nil || res.Value != "hedged" {
		t.Fatalf("got %+v, %v", res, err)
	}
}

// A panic under every policy gives every slot back, and the fallback
// serves.
func TestPipelinePanicReleasesEveryGuard(t *testing.T) {
	bh := bulkhead.New(bulkhead.Settings{MaxConcurrent: 1})
	lim := ratelimit.NewConcurrency(ratelimit.ConcurrencySettings{Max: 1})
	p := breakerimpl.Pipeline[string, int]{
		Limiter: lim, Bulkhead: bh,
		Timeout:  timeout.New(timeout.Settings{}),
		Retry:    retry.New(retry.Settings{}),
		Fallback: fallback.Static[string, int]{Value: 7},
	}
	res, err := p.Execute(context.Background(), "k", func(context.Context) (int, error) { panic("boom") })
	if err != nil || res.Value != 7 || res.Reason != breakerimpl.ReasonPanic {
		t.Fatalf("got %+v, %v", res, err)
	}
	if bh.Snapshot().InFlight != 0 || lim.Snapshot().Available != 1 {
		t.Fatalf("slots kept after a panic: bulkhead %+v, limiter %+v", bh.Snapshot(), lim.Snapshot())
	}
}

// BenchmarkPipelineIsolation is the success path of a call under a
// fallback cache, a breaker, a bulkhead and a timeout, with a context the
// caller can cancel (as a request's is) and with context.Background().
func BenchmarkPipelineIsolation(b *testing.B) {
	p := breakerimpl.Pipeline[string, row]{
		Fallback: fallback.NewCache[string, row](fallback.CacheSettings{}),
		Breaker:  circuitbreaker.New(circuitbreaker.Settings{}),
		Bulkhead: bulkhead.New(bulkhead.Settings{MaxConcurrent: 1 << 20}),
		Timeout:  timeout.New(timeout.Settings{Timeout: time.Second}),
	}
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for name, ctx := range map[string]context.Context{"background": context.Background(), "cancellable": cancellable} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Execute(ctx, "row/1", readRow); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := p.Execute(ctx, "row/1", readRow); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
