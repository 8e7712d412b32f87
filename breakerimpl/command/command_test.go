package command_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/command"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errDown = errors.New("503 from payments")

func TestDoAndFallback(t *testing.T) {
	reg := &command.Registry{Clock: clock.NewFake(time.Time{})}
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	fail := func(context.Context) error { return errDown }
	var got error
	handled := func(_ context.Context, err error) error { got = err; return nil }
	tests := []struct {
		name     string
		run      func(context.Context) error
		fallback func(context.Context, error) error
		want     error
		wantSeen error // what the fallback was given
	}{
		{"success", ok, handled, nil, nil},
		{"failure, no fallback", fail, nil, errDown, nil},
		{"failure handled", fail, handled, nil, errDown},
		{"fallback fails too", fail, func(context.Context, error) error { return context.Canceled }, context.Canceled, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			err := reg.Command("payments").Do(ctx, tt.run, tt.fallback)
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("Do: %v, want %v", err, tt.want)
			}
			if !errors.Is(got, tt.wantSeen) || (tt.wantSeen == nil && got != nil) {
				t.Fatalf("fallback given %v, want %v", got, tt.wantSeen)
			}
		})
	}
}

// hystrix's rule: ErrorPercentThreshold of RequestVolumeThreshold calls
// opens the breaker for SleepWindow; the fallback is told ErrOpen.
func TestConfigureCommandTripsAndKeepsCounts(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	reg := &command.Registry{Clock: clk}
	reg.Configure("payments", command.Config{RequestVolumeThreshold: 4, ErrorPercentThreshold: 50, SleepWindow: 2 * time.Second})
	cmd := reg.Command("payments")
	ctx := context.Background()
	for _, fail := range []bool{false, true, false} {
		cmd.Do(ctx, func(context.Context) error {
			if fail {
				return errDown
			}
			return nil
		}, nil)
	}
	// Reconfigured in use: the counts stay, the new volume applies to them.
	reg.Configure("payments", command.Config{RequestVolumeThreshold: 3, ErrorPercentThreshold: 30, SleepWindow: 2 * time.Second})
	if c := cmd.Breaker().Counts(); c.Requests != 3 || c.Failures != 1 {
		t.Fatalf("counts after Configure %+v, want the 3 calls kept", c)
	}
	cmd.Do(ctx, func(context.Context) error { return errDown }, nil)
	if s := cmd.Breaker().State(); s != circuitbreaker.Open {
		t.Fatalf("breaker %v after 2 failures of 4 at a 30%% threshold, want open", s)
	}
	var seen error
	ran := false
	cmd.Do(ctx, func(context.Context) error { ran = true; return nil }, func(_ context.Context, err error) error { seen = err; return nil })
	if ran || !errors.Is(seen, breakerimpl.ErrOpen) {
		t.Fatalf("open: ran %v, fallback given %v; want no run and ErrOpen", ran, seen)
	}
	if got := cmd.Config(); got.RequestVolumeThreshold != 3 || got.Timeout != command.DefaultTimeout || got.MaxConcurrentRequests != command.DefaultMaxConcurrentRequests {
		t.Fatalf("config %+v", got)
	}
	if names := reg.Names(); !slices.Equal(names, []string{"payments"}) {
		t.Fatalf("names %v", names)
	}
}

// Go runs the command on its own goroutine; its channel gets the error and
// is closed once run has returned: nil on success.
func TestGo(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	reg := &command.Registry{Clock: clk}
	reg.Configure("search", command.Config{Timeout: 100 * time.Millisecond, MaxConcurrentRequests: 1})
	cmd := reg.Command("search")
	ctx := context.Background()

	success := cmd.Go(ctx, func(context.Context) error { return nil }, nil)
	select {
	case err, open := <-success:
		if err != nil || open {
			t.Fatalf("success: %v (channel open %v), want the channel closed with nothing sent", err, open)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the channel of a successful call was not closed within 10s")
	}

	// A slow call holds the only slot until its timeout cancels it.
	started := make(chan struct{})
	slow := cmd.Go(ctx, func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}, nil)
	<-started
	if err := <-cmd.Go(ctx, func(context.Context) error { t.Error("ran past a full bulkhead"); return nil }, nil); !errors.Is(err, breakerimpl.ErrRejected) {
		t.Fatalf("second call with the slot taken: %v, want ErrRejected", err)
	}
	select {
	case err := <-slow:
		t.Fatalf("the slow call ended before its timeout: %v", err)
	default:
	}
	clk.Advance(time.Second)
	if err := <-slow; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow call: %v, want a timeout", err)
	}

	// A panic with no fallback arrives as an error.
	err := <-cmd.Go(ctx, func(context.Context) error { panic("boom") }, nil)
	var pe *breakerimpl.PanicError
	if !errors.As(err, &pe) || pe.Value != "boom" {
		t.Fatalf("panic: %v, want a *PanicError", err)
	}
	// With a fallback, the fallback is given it.
	var seen error
	if err := <-cmd.Go(ctx, func(context.Context) error { panic("boom") }, func(_ context.Context, err error) error { seen = err; return nil }); err != nil || !errors.As(seen, &pe) {
		t.Fatalf("panic with a fallback: %v, fallback given %v", err, seen)
	}
}

func TestDefaultRegistry(t *testing.T) {
	command.ConfigureCommand("default-registry-test", command.Config{Timeout: time.Minute})
	if err := <-command.Go(context.Background(), "default-registry-test", func(context.Context) error { return errDown }, nil); !errors.Is(err, errDown) {
		t.Fatalf("Go: %v", err)
	}
	if err := command.Do(context.Background(), "default-registry-test", func(context.Context) error { return nil }, nil); err != nil {
		t.Fatalf("Do: %v", err)
	}
	if c := command.DefaultRegistry.Command("default-registry-test").Config(); c.Timeout != time.Minute {
		t.Fatalf("config %+v", c)
	}
}

// A run that ignores its context for 400 ms under a 50 ms timeout: Do
// answers with a timeout at the deadline, the breaker counts a failure and
// the fallback runs; the abandoned run is counted until it returns.
func TestTimeoutAnswersAtDeadlineWhateverRunDoes(t *testing.T) {
	reg := &command.Registry{}
	reg.Configure("slow", command.Config{Timeout: 50 * time.Millisecond})
	cmd := reg.Command("slow")
	finished := make(chan struct{})
	run := func(context.Context) error {
		defer close(finished)
		time.Sleep(400 * time.Millisecond) // heeds no context
		return nil
	}
	var seen error
	fallback := func(_ context.Context, err error) error { seen = err; return err }
	start := time.Now()
	err := cmd.Do(context.Background(), run, fallback)
	took := time.Since(start)
	if !errors.Is(err, timeout.ErrTimeout) || !errors.Is(seen, timeout.ErrTimeout) {
		t.Fatalf("Do: %v, fallback given %v; want timeout.ErrTimeout for both", err, seen)
	}
	if took > 60*time.Millisecond {
		t.Errorf("Do answered after %v, want within 60ms of a 50ms timeout", took)
	}
	if s := cmd.Breaker().Snapshot(); s.Failures != 1 || s.Successes != 0 {
		t.Errorf("breaker counted %d failures and %d successes, want 1 and 0", s.Failures, s.Successes)
	}
	if s := cmd.Timeout().Snapshot(); s.Abandoned != 1 || s.AbandonedTotal != 1 || s.TimedOut != 1 {
		t.Errorf("timeout snapshot %+v, want 1 abandoned running, 1 in all, 1 timed out", s)
	}
	<-finished
	waitFor(t, func() bool { return cmd.Timeout().Snapshot().Abandoned == 0 })
}

// Config.Cooperative waits for run, as before: the same run holds Do for
// its 400 ms, and its success counts as one.
func TestCooperativeTimeoutWaitsForRun(t *testing.T) {
	reg := &command.Registry{}
	reg.Configure("slow", command.Config{Timeout: 50 * time.Millisecond, Cooperative: true})
	start := time.Now()
	err := reg.Command("slow").Do(context.Background(), func(context.Context) error {
		time.Sleep(400 * time.Millisecond)
		return nil
	}, nil)
	if err != nil || time.Since(start) < 400*time.Millisecond {
		t.Fatalf("Do: %v after %v, want nil after the run's 400ms", err, time.Since(start))
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
	}
}
