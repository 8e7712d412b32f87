package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errDown = errors.New("503")

// half draws the middle of every jitter range, so waits are predictable.
func half(n int64) int64 { return n / 2 }

// failing returns work that fails with errs in turn, then succeeds, and
// counts its attempts.
func failing(attempts *int, errs ...error) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		*attempts++
		if *attempts <= len(errs) {
			return "", errs[*attempts-1]
		}
		return "ok", nil
	}
}

func TestBackoffIsFullJitterUnderTheCap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	r := retry.New(retry.Settings{Backoff: 100 * time.Millisecond, MaxBackoff: time.Second, Rand: rng.Int64N})
	top := retry.New(retry.Settings{Backoff: 100 * time.Millisecond, MaxBackoff: time.Second, Rand: func(n int64) int64 { return n - 1 }})
	for n := 1; n <= 40; n++ {
		ceiling := min(time.Second, 100*time.Millisecond<<min(n-1, 20))
		for range 50 {
			if w := r.Backoff(n); w < 0 || w >= ceiling {
				t.Fatalf("Backoff(%d) = %v, want in [0, %v)", n, w, ceiling)
			}
		}
		if w := top.Backoff(n); w != ceiling-1 {
			t.Fatalf("largest Backoff(%d) = %v, want %v", n, w, ceiling-1)
		}
	}
}

func TestExecuteRetriesWithBackoffUntilSuccess(t *testing.T) {
	clk := clock.NewInstant(time.Time{})
	var events []string
	r := retry.New(retry.Settings{
		Name: "inventory", MaxAttempts: 4, Backoff: 100 * time.Millisecond, Rand: half, Clock: clk,
		OnEvent: func(e retry.Event) { events = append(events, fmt.Sprintf("%s %d %v", e.Kind, e.Attempt, e.Wait)) },
	})
	var attempts int
	v, err := retry.Execute(context.Background(), r, failing(&attempts, errDown, errDown))
	if v != "ok" || err != nil || attempts != 3 {
		t.Fatalf("got %q, %v after %d attempts; want ok after 3", v, err, attempts)
	}
	if want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}; !slices.Equal(clk.Waits(), want) {
		t.Fatalf("waits %v, want %v", clk.Waits(), want)
	}
	if want := []string{"retrying 1 50ms", "retrying 2 100ms"}; !slices.Equal(events, want) {
		t.Fatalf("events %q, want %q", events, want)
	}
	if s := r.Snapshot(); s.Retries != 2 || s.GaveUp != 0 {
		t.Fatalf("snapshot %+v", s)
	}
}

func TestWhenRetriesStop(t *testing.T) {
	errNotFound := errors.New("not found")
	for _, tc := range []struct {
		name     string
		s        retry.Settings
		errs     []error
		attempts int
		why      string
	}{
		{"max attempts", retry.Settings{MaxAttempts: 3}, []error{errDown, errDown, errDown, errDown}, 3, retry.WhyAttempts},
		{"one attempt means no retry", retry.Settings{MaxAttempts: 1}, []error{errDown}, 1, retry.WhyAttempts},
		{"permanent", retry.Settings{}, []error{retry.Permanent(errDown)}, 1, retry.WhyNotRetryable},
		{"open breaker", retry.Settings{}, []error{breakerimpl.ErrOpen}, 1, retry.WhyNotRetryable},
		{"classifier", retry.Settings{Retryable: func(err error) bool { return err != errNotFound }}, []error{errDown, errNotFound}, 2, retry.WhyNotRetryable},
		// Waits of 50, 100, 200 ms: the fourth attempt would start 350 ms in.
		{"max elapsed", retry.Settings{MaxAttempts: 10, MaxElapsed: 300 * time.Millisecond}, []error{errDown, errDown, errDown, errDown}, 3, retry.WhyElapsed},
		{"budget", retry.Settings{Budget: retry.NewBudget(retry.BudgetSettings{MinRetries: -1, Clock: clock.NewFake(time.Time{})})}, []error{errDown}, 1, retry.WhyBudget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewInstant(time.Time{})
			s := tc.s
			s.Rand, s.Clock = half, clk
			var why string
			s.OnEvent = func(e retry.Event) {
				if e.Kind == retry.GaveUp {
					why = e.Why
				}
			}
			var attempts int
			_, err := retry.Execute(context.Background(), retry.New(s), failing(&attempts, tc.errs...))
			if err != tc.errs[attempts-1] || attempts != tc.attempts || why != tc.why {
				t.Fatalf("%d attempts, err %v, gave up for %q; want %d, %v, %q", attempts, err, why, tc.attempts, tc.errs[tc.attempts-1], tc.why)
			}
		})
	}
}

func TestRetryAfterIsRespected(t *testing.T) {
	clk := clock.NewInstant(time.Time{})
	r := retry.New(retry.Settings{Backoff: 100 * time.Millisecond, Rand: half, Clock: clk})
	var attempts int
	throttled := retry.After(errDown, 3*time.Second)
	if _, err := retry.Execute(context.Background(), r, failing(&attempts, throttled, errDown)); err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{3 * time.Second, 100 * time.Millisecond}; !slices.Equal(clk.Waits(), want) {
		t.Fatalf("waits %v, want %v: Retry-After first, then the backoff", clk.Waits(), want)
	}
	if d, ok := retry.RetryAfter(fmt.Errorf("wrapped: %w", throttled)); !ok || d != 3*time.Second {
		t.Fatalf("RetryAfter through a wrap = %v, %v", d, ok)
	}
}

func TestNoRetryPastTheDeadline(t *testing.T) {
	clk := clock.NewInstant(time.Time{})
	r := retry.New(retry.Settings{Backoff: time.Second, Rand: half, Clock: clk})
	ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(400*time.Millisecond))
	defer cancel()
	var attempts int
	if _, err := retry.Execute(ctx, r, failing(&attempts, errDown, errDown)); err != errDown || attempts != 1 {
		t.Fatalf("%d attempts, %v; want one, not a 500 ms wait past a 400 ms deadline", attempts, err)
	}
	if len(clk.Waits()) != 0 {
		t.Fatalf("waited %v", clk.Waits())
	}
}

func TestCancelledDuringTheWait(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := clock.NewFake(time.Time{})
	r := retry.New(retry.Settings{Backoff: time.Minute, Rand: half, Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		var attempts int
		retry.Execute(ctx, r, failing(&attempts, errDown, errDown))
		done <- attempts
	}()
	for clk.Timers() == 0 {
		runtime.Gosched()
	}
	cancel()
	if n := <-done; n != 1 {
		t.Fatalf("%d attempts, want the wait cut short after the first", n)
	}
}

func TestAttemptTimeout(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	r := retry.New(retry.Settings{AttemptTimeout: time.Second, Rand: func(int64) int64 { return 0 }, Clock: clk})
	hang := make(chan struct{})
	attempts := 0
	done := make(chan error)
	go func() {
		_, err := retry.Execute(context.Background(), r, func(ctx context.Context) (int, error) {
			attempts++
			if attempts == 1 {
				close(hang)
				<-ctx.Done()
				return 0, ctx.Err()
			}
			return 1, nil
		})
		done <- err
	}()
	<-hang
	clk.Advance(time.Second + 10*time.Millisecond) // the timeout's default slack is 1 %
	if err := <-done; err != nil || attempts != 2 {
		t.Fatalf("%d attempts, %v; want the hung first attempt timed out and a second that succeeds", attempts, err)
	}
}

func TestPanicIsNotRetried(t *testing.T) {
	r := retry.New(retry.Settings{Clock: clock.NewInstant(time.Time{})})
	attempts := 0
	defer func() {
		if recover() != "boom" || attempts != 1 {
			t.Fatalf("attempts %d; want one, and the panic raised", attempts)
		}
	}()
	retry.Execute(context.Background(), r, func(context.Context) (int, error) { attempts++; panic("boom") })
}

func TestDefaultRetryable(t *testing.T) {
	for err, want := range map[error]bool{
		errDown:                        true,
		context.DeadlineExceeded:       true,
		timeout.ErrTimeout:             true,
		context.Canceled:               false,
		breakerimpl.ErrRejected:        false,
		breakerimpl.NewPanicError("x"): false,
		fmt.Errorf("x: %w", retry.Permanent(errDown)): false,
	} {
		if got := retry.DefaultRetryable(err); got != want {
			t.Errorf("DefaultRetryable(%v) = %v, want %v", err, got, want)
		}
	}
}
