package circuitbreaker_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

var errDown = errors.New("dependency down")

// step is one action in a scripted breaker test.
type step struct {
	advance time.Duration // move the fake clock first
	err     error         // outcome of the call (when call is set)
	call    bool          // make one call through Execute
	slow    time.Duration // the call takes this long on the fake clock
	wantErr error         // what Execute must return
	want    circuitbreaker.State
}

func calls(n int, err error, want circuitbreaker.State) []step {
	s := make([]step, n)
	for i := range s {
		s[i] = step{call: true, err: err, wantErr: err, want: want}
	}
	return s
}

// slowCalls is n calls that succeed after d.
func slowCalls(n int, d time.Duration, want circuitbreaker.State) []step {
	s := make([]step, n)
	for i := range s {
		s[i] = step{call: true, slow: d, want: want}
	}
	return s
}

func script(parts ...[]step) []step {
	var all []step
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

func TestBreakerTransitions(t *testing.T) {
	const (
		closed   = circuitbreaker.Closed
		open     = circuitbreaker.Open
		halfOpen = circuitbreaker.HalfOpen
	)
	tests := []struct {
		name     string
		settings circuitbreaker.Settings
		steps    []step
	}{
		{
			name:     "consecutive failures trip at the threshold",
			settings: circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 3}},
			steps: script(
				calls(2, errDown, closed),
				calls(1, nil, closed), // resets the run
				calls(2, errDown, closed),
				calls(1, errDown, open),
				[]step{{call: true, wantErr: circuitbreaker.ErrOpen, want: open}},
			),
		},
		{
			name:     "open lasts OpenDuration, then one probe closes",
			settings: circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, OpenDuration: time.Second},
			steps: script(
				calls(1, errDown, open),
				[]step{{advance: 999 * time.Millisecond, call: true, wantErr: circuitbreaker.ErrOpen, want: open}},
				[]step{{advance: time.Millisecond, want: halfOpen}},
				calls(1, nil, closed),
			),
		},
		{
			name:     "a failed probe reopens for another OpenDuration",
			settings: circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, OpenDuration: time.Second, HalfOpenSuccesses: 2},
			steps: script(
				calls(1, errDown, open),
				[]step{{advance: time.Second, want: halfOpen}},
				calls(1, nil, halfOpen),
				calls(1, errDown, open),
				[]step{{advance: 500 * time.Millisecond, call: true, wantErr: circuitbreaker.ErrOpen, want: open}},
				[]step{{advance: 500 * time.Millisecond, want: halfOpen}},
				calls(1, nil, halfOpen),
				calls(1, nil, closed),
			),
		},
		{
			name:     "error rate: below the request volume nothing trips",
			settings: circuitbreaker.Settings{Rule: circuitbreaker.ErrorRate{MinRequests: 10}},
			steps:    calls(9, errDown, closed),
		},
		{
			name:     "error rate: trips at the percentage once the volume is reached",
			settings: circuitbreaker.Settings{Rule: circuitbreaker.ErrorRate{MinRequests: 10, Percent: 50}},
			steps: script(
				calls(5, nil, closed),
				calls(4, errDown, closed), // 4 of 9: volume not reached
				calls(1, errDown, open),   // 5 of 10 = 50 %
			),
		},
		{
			name:     "error rate: failures below the percentage never trip",
			settings: circuitbreaker.Settings{Rule: circuitbreaker.ErrorRate{MinRequests: 10, Percent: 50}},
			steps: script(
				calls(11, nil, closed),
				calls(10, errDown, closed), // 10 of 21 < 50 %
				calls(1, errDown, open),    // 11 of 22
			),
		},
		{
			name: "error rate: failures leave the window as it rolls",
			settings: circuitbreaker.Settings{Rule: circuitbreaker.ErrorRate{
				Window: 10 * time.Second, Buckets: 10, MinRequests: 10, Percent: 50,
			}},
			steps: script(
				calls(9, errDown, closed),
				[]step{{advance: 10 * time.Second}}, // the nine fall out of the window
				calls(1, errDown, closed),
				calls(8, errDown, closed),
				calls(1, errDown, open),
			),
		},
		{
			name: "error rate: successes count in the bucket of their time",
			settings: circuitbreaker.Settings{Rule: circuitbreaker.ErrorRate{
				Window: 10 * time.Second, Buckets: 10, MinRequests: 10, Percent: 50,
			}},
			steps: script(
				[]step{{advance: 500 * time.Millisecond}},
				calls(5, nil, closed),              // bucket 0
				[]step{{advance: time.Second}},     // 1.5 s
				calls(5, nil, closed),              // bucket 1
				[]step{{advance: time.Second}},     // 2.5 s
				calls(5, nil, closed),              // bucket 2
				[]step{{advance: 9 * time.Second}}, // 11.5 s: buckets 0 and 1 have left the window
				calls(4, errDown, closed),          // 4 of 9
				calls(1, errDown, open),            // 5 of 10
			),
		},
		{
			name:     "count window: the last calls are judged, older ones leave",
			settings: circuitbreaker.Settings{Rule: circuitbreaker.CountWindow{Calls: 10, Percent: 50}},
			steps: script(
				calls(4, errDown, closed), // 4 calls: below the window's 10
				calls(10, nil, closed),    // the four failures pushed out
				calls(4, errDown, closed), // 4 of the last 10
				calls(1, errDown, open),   // 5 of the last 10
			),
		},
		{
			name: "count window: the slow-call rate trips on its own",
			settings: circuitbreaker.Settings{
				Rule:              circuitbreaker.CountWindow{Calls: 10, Percent: 50, SlowPercent: 30},
				SlowCallThreshold: 100 * time.Millisecond,
			},
			steps: script(
				calls(7, nil, closed),
				slowCalls(2, time.Second, closed), // 9 calls: below the window
				slowCalls(1, time.Second, open),   // 3 slow of 10; 0 failures
			),
		},
		{
			name: "count window without a slow rate: slow calls are failures",
			settings: circuitbreaker.Settings{
				Rule:              circuitbreaker.CountWindow{Calls: 4, Percent: 50},
				SlowCallThreshold: 100 * time.Millisecond,
			},
			steps: script(
				calls(2, nil, closed),
				slowCalls(1, time.Second, closed),
				slowCalls(1, time.Second, open), // 2 of 4
			),
		},
		{
			name:     "context.Canceled is ignored by default",
			settings: circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}},
			steps: script(
				calls(3, context.Canceled, closed),
				calls(1, context.DeadlineExceeded, open),
			),
		},
		{
			name: "a classifier can make an error a success",
			settings: circuitbreaker.Settings{
				Rule: circuitbreaker.ConsecutiveFailures{Threshold: 2},
				Classify: func(err error) breakerimpl.Outcome {
					if errors.Is(err, errNotFound) {
						return breakerimpl.Success
					}
					return breakerimpl.Failure
				},
			},
			steps: script(
				calls(1, errDown, closed),
				calls(1, errNotFound, closed), // success: resets the run
				calls(1, errDown, closed),
				calls(1, errDown, open),
			),
		},
		{
			name: "slow calls are failures",
			settings: circuitbreaker.Settings{
				Rule:              circuitbreaker.ConsecutiveFailures{Threshold: 2},
				SlowCallThreshold: 100 * time.Millisecond,
			},
			steps: []step{
				{call: true, slow: 100 * time.Millisecond, want: closed}, // at the threshold: fine
				{call: true, slow: 101 * time.Millisecond, want: closed},
				{call: true, slow: time.Second, want: open},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Time{})
			tc.settings.Clock = clk
			cb := circuitbreaker.New(tc.settings)
			for i, s := range tc.steps {
				clk.Advance(s.advance)
				if s.call {
					_, err := circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) {
						clk.Advance(s.slow)
						return 0, s.err
					})
					if !errors.Is(err, s.wantErr) || (s.wantErr == nil && err != nil) {
						t.Fatalf("step %d: err = %v, want %v", i, err, s.wantErr)
					}
				}
				if got := cb.State(); got != s.want {
					t.Fatalf("step %d: state %v, want %v (counts %+v)", i, got, s.want, cb.Counts())
				}
			}
		})
	}
}

var errNotFound = errors.New("not found")

func TestHalfOpenAdmitsExactlyNProbes(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, OpenDuration: time.Second,
		HalfOpenProbes: 3, HalfOpenSuccesses: 4, Clock: clk,
	})
	ctx := context.Background()
	trip(t, cb)
	clk.Advance(time.Second)

	var permits []breakerimpl.Permit
	for range 3 {
		p, err := cb.Allow(ctx)
		if err != nil {
			t.Fatalf("probe refused: %v", err)
		}
		permits = append(permits, p)
	}
	if _, err := cb.Allow(ctx); !errors.Is(err, circuitbreaker.ErrHalfOpenFull) {
		t.Fatalf("fourth probe: err = %v, want ErrHalfOpenFull", err)
	}
	permits[0].Done(nil) // frees a slot; 1 of 4 successes
	p, err := cb.Allow(ctx)
	if err != nil {
		t.Fatalf("probe after a slot freed: %v", err)
	}
	for _, p := range append(permits[1:], p) {
		p.Done(nil)
	}
	if got := cb.State(); got != circuitbreaker.Closed {
		t.Fatalf("after 4 successful probes: %v, want closed", got)
	}
}

func TestStalePermitIsNotCounted(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, OpenDuration: time.Second, Clock: clk,
	})
	ctx := context.Background()
	slow, err := cb.Allow(ctx) // admitted while closed, finishes much later
	if err != nil {
		t.Fatal(err)
	}
	trip(t, cb)
	clk.Advance(time.Second)
	probe, err := cb.Allow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slow.Done(errDown) // from the closed period: must not reopen the breaker
	if got := cb.State(); got != circuitbreaker.HalfOpen {
		t.Fatalf("stale failure changed the state to %v", got)
	}
	probe.Done(nil)
	if got := cb.State(); got != circuitbreaker.Closed {
		t.Fatalf("state %v, want closed", got)
	}
}

func TestPanicCountsAsFailureAndIsRaisedAgain(t *testing.T) {
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, Clock: clock.NewFake(time.Time{}),
	})
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want the original panic", r)
		}
		if got := cb.State(); got != circuitbreaker.Open {
			t.Fatalf("state %v after a panic, want open", got)
		}
	}()
	circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) { panic("boom") })
}

func TestStateChangeEventsCarryTheCounts(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	var events []circuitbreaker.StateChange
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Name:          "db",
		Rule:          circuitbreaker.ErrorRate{MinRequests: 4, Percent: 50},
		OpenDuration:  time.Second,
		Clock:         clk,
		OnStateChange: func(e circuitbreaker.StateChange) { events = append(events, e) },
	})
	for _, err := range []error{nil, nil, errDown, errDown} {
		circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) { return 0, err })
	}
	clk.Advance(time.Second)
	circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) { return 0, nil })

	want := []struct {
		from, to circuitbreaker.State
		reason   circuitbreaker.Transition
		counts   circuitbreaker.Counts
	}{
		{circuitbreaker.Closed, circuitbreaker.Open, circuitbreaker.Tripped, circuitbreaker.Counts{Requests: 4, Successes: 2, Failures: 2}},
		{circuitbreaker.Open, circuitbreaker.HalfOpen, circuitbreaker.OpenElapsed, circuitbreaker.Counts{}},
		{circuitbreaker.HalfOpen, circuitbreaker.Closed, circuitbreaker.ProbesSucceeded, circuitbreaker.Counts{Requests: 1, Successes: 1}},
	}
	if len(events) != len(want) {
		t.Fatalf("got %d events %+v, want %d", len(events), events, len(want))
	}
	for i, w := range want {
		e := events[i]
		if e.Name != "db" || e.From != w.from || e.To != w.to || e.Reason != w.reason || e.Counts != w.counts || e.Generation != uint64(i+1) {
			t.Errorf("event %d = %+v, want %+v", i, e, w)
		}
	}
}

func TestStateStrings(t *testing.T) {
	for s, want := range map[circuitbreaker.State]string{
		circuitbreaker.Closed: "closed", circuitbreaker.Open: "open", circuitbreaker.HalfOpen: "half-open",
	} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", s, s.String(), want)
		}
	}
}

// TestHalfOpenStress hammers a breaker that flips between open and
// half-open and checks that no half-open period ever runs more than N probes
// at once, and that every call is counted once: what the callers saw adds
// up to the breaker's lifetime counters.
func TestHalfOpenStress(t *testing.T) {
	defer goleak.VerifyNone(t)
	const probes = 3
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, OpenDuration: time.Millisecond,
		HalfOpenProbes: probes, HalfOpenSuccesses: 1000, Clock: clk,
	})
	trip(t, cb)
	before := cb.Snapshot()

	var running, peak, admitted atomic.Int64
	var succeeded, failed, rejected atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
					runtime.Gosched() // let the clock's goroutine in
				}
				_, err := circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) {
					admitted.Add(1)
					n := running.Add(1)
					for {
						p := peak.Load()
						if n <= p || peak.CompareAndSwap(p, n) {
							break
						}
					}
					defer running.Add(-1)
					for range 20 { // stay a while, so that probes overlap
						runtime.Gosched()
					}
					if (g+i)%7 == 0 {
						return 0, errDown // reopens now and then
					}
					return 0, nil
				})
				switch {
				case err == nil:
					succeeded.Add(1)
				case errors.Is(err, errDown):
					failed.Add(1)
				default:
					rejected.Add(1)
				}
			}
		}()
	}
	for i := 0; admitted.Load() < 2000 && i < 3000; i++ {
		clk.Advance(time.Millisecond)
		runtime.Gosched()
	}
	t.Logf("admitted %d probes, at most %d at once", admitted.Load(), peak.Load())
	close(stop)
	wg.Wait()
	if peak.Load() > probes {
		t.Fatalf("%d probes ran at once, at most %d allowed", peak.Load(), probes)
	}
	if peak.Load() < probes {
		t.Fatalf("at most %d probes ever ran at once: the test proved nothing", peak.Load())
	}
	s := cb.Snapshot()
	got := [3]uint64{s.Successes - before.Successes, s.Failures - before.Failures, s.Rejections - before.Rejections}
	if want := [3]uint64{succeeded.Load(), failed.Load(), rejected.Load()}; got != want {
		t.Fatalf("breaker counted %v successes, failures, rejections; callers saw %v", got, want)
	}
	if s.ProbesRunning != 0 {
		t.Fatalf("%d probe slots still taken", s.ProbesRunning)
	}
}

// TestClosedStress runs many goroutines through a closed error-rate breaker
// that never trips and checks that no success or failure is lost, in the
// window or in the lifetime counters.
func TestClosedStress(t *testing.T) {
	defer goleak.VerifyNone(t)
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ErrorRate{Window: time.Hour, MinRequests: 1 << 30}, Clock: clock.NewFake(time.Time{}),
	})
	const workers, each = 8, 5000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				var err error
				if (w*each+i)%10 == 0 {
					err = errDown
				}
				if i%2 == 0 {
					circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) { return 0, err })
				} else {
					p, _ := cb.Allow(context.Background())
					p.Done(err)
				}
			}
		}()
	}
	wg.Wait()
	want := circuitbreaker.Counts{Requests: workers * each, Successes: workers * each * 9 / 10, Failures: workers * each / 10}
	if got := cb.Counts(); got != want {
		t.Fatalf("window %+v, want %+v", got, want)
	}
	if s := cb.Snapshot(); s.Successes != want.Successes || s.Failures != want.Failures {
		t.Fatalf("snapshot %+v, want %+v", s, want)
	}
}

// trip fails calls until the breaker opens, at most a thousand.
func trip(t *testing.T, cb *circuitbreaker.Breaker) {
	t.Helper()
	for i := 0; i < 1000 && cb.State() == circuitbreaker.Closed; i++ {
		circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) { return 0, errDown })
	}
	if cb.State() != circuitbreaker.Open {
		t.Fatalf("breaker did not open after a thousand failures: %v", cb.State())
	}
}

// TestStaleExecuteIsNotCounted is TestStalePermitIsNotCounted for Execute's
// own closed path: a call that outlives its closed period counts in the
// lifetime counters only, not in the window of the period that follows.
func TestStaleExecuteIsNotCounted(t *testing.T) {
	cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ErrorRate{}, Clock: clock.NewFake(time.Time{})})
	for _, err := range []error{nil, errDown} {
		circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) {
			cb.ForceOpen("")
			cb.ForceClosed("") // a new closed period, fresh counts
			return 0, err
		})
		if c := cb.Counts(); c.Requests != 0 {
			t.Fatalf("window %+v after a stale %v, want it left out", c, err)
		}
	}
	if s := cb.Snapshot(); s.Successes != 1 || s.Failures != 1 {
		t.Fatalf("snapshot %+v, want both calls counted for the lifetime", s)
	}
}
