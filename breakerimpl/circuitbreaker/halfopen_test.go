package circuitbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// TestHalfOpenWaitIsBounded holds a probe that never returns and checks
// that the half-open stay ends MaxHalfOpenWait after it began, default
// included: the breaker opens again (a ProbesTimedOut change, backoff
// counted), and once the open duration has passed the next stay admits a
// new probe although the first still holds its permit.
func TestHalfOpenWaitIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait time.Duration // Settings.MaxHalfOpenWait
		ends time.Duration // when the stay must end
	}{
		{"default", 0, circuitbreaker.DefaultMaxHalfOpenWait},
		{"five seconds", 5 * time.Second, 5 * time.Second},
		{"below zero means the default", -time.Second, circuitbreaker.DefaultMaxHalfOpenWait},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Time{})
			var events []circuitbreaker.StateChange
			cb := circuitbreaker.New(circuitbreaker.Settings{
				Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, OpenDuration: time.Second,
				MaxOpenDuration: time.Minute, MaxHalfOpenWait: tc.wait, Clock: clk,
				OnStateChange: func(e circuitbreaker.StateChange) { events = append(events, e) },
			})
			ctx := context.Background()
			trip(t, cb)
			clk.Advance(time.Second)
			hung, err := cb.Allow(ctx) // the probe that never returns
			if err != nil {
				t.Fatalf("probe: %v", err)
			}
			clk.Advance(tc.ends - time.Millisecond)
			if _, err := cb.Allow(ctx); !errors.Is(err, circuitbreaker.ErrHalfOpenFull) {
				t.Fatalf("just before the wait ends: %v, want ErrHalfOpenFull", err)
			}
			if got := cb.State(); got != circuitbreaker.HalfOpen {
				t.Fatalf("just before the wait ends: %v, want half-open", got)
			}
			clk.Advance(time.Millisecond)
			if got := cb.State(); got != circuitbreaker.Open {
				t.Fatalf("%v after the probe began: %v, want open", tc.ends, got)
			}
			last := events[len(events)-1]
			if last.From != circuitbreaker.HalfOpen || last.Reason != circuitbreaker.ProbesTimedOut || last.OpenFor != 2*time.Second {
				t.Fatalf("event %v, want half-open -> open, probes-timed-out, open for 2s (backoff)", last)
			}
			if s := cb.Snapshot(); s.ProbesRunning != 0 {
				t.Fatalf("%d probe slots still held by the abandoned probe", s.ProbesRunning)
			}
			clk.Advance(2 * time.Second)
			probe, err := cb.Allow(ctx)
			if err != nil {
				t.Fatalf("the next half-open stay admits no probe: %v", err)
			}
			probe.Done(nil)
			if got := cb.State(); got != circuitbreaker.Closed {
				t.Fatalf("after a new probe succeeded: %v, want closed", got)
			}
			before := cb.Snapshot()
			hung.Done(errDown) // at last: counted for the lifetime only
			s := cb.Snapshot()
			if s.State != circuitbreaker.Closed || s.Failures != before.Failures+1 || s.ProbesRunning != 0 || cb.Counts() != (circuitbreaker.Counts{}) {
				t.Fatalf("after the abandoned probe returned: %+v, window %v", s, cb.Counts())
			}
		})
	}
}

// Ten minutes after a probe hung, with a call every minute, the breaker
// has gone on probing rather than stay half-open with its slot taken: each
// call finds the time of the state before it up, so one finds the stay of
// the last hung probe over and is refused by the open breaker, the next
// finds the open duration over and is the next probe.
func TestHungProbeTenMinutesLater(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, Clock: clk})
	trip(t, cb)
	clk.Advance(circuitbreaker.DefaultOpenDuration)
	if _, err := cb.Allow(context.Background()); err != nil { // hangs: Done never called
		t.Fatal(err)
	}
	probes := 0
	for range 10 {
		clk.Advance(time.Minute)
		if _, err := cb.Allow(context.Background()); err == nil {
			probes++ // hangs too
		}
	}
	if probes != 5 {
		t.Fatalf("%d probes in the ten minutes after one hung, want one every two minutes", probes)
	}
}

// An Update of MaxHalfOpenWait applies to the stay under way, counted from
// its start.
func TestUpdateHalfOpenWait(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, OpenDuration: time.Second, Clock: clk,
	})
	trip(t, cb)
	clk.Advance(time.Second)
	if _, err := cb.Allow(context.Background()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Second)
	cb.Update(func(s *circuitbreaker.Settings) { s.MaxHalfOpenWait = 3 * time.Second })
	if got := cb.State(); got != circuitbreaker.Open {
		t.Fatalf("3s into the stay, with the wait cut to 3s: %v, want open", got)
	}
}

// TestStateChangePrintsReadably checks what %v makes of a change, its
// counts and the state and override types.
func TestStateChangePrintsReadably(t *testing.T) {
	at := time.Date(2024, 1, 1, 0, 0, 10, 0, time.UTC)
	for _, tc := range []struct {
		v    any
		want string
	}{
		{circuitbreaker.StateChange{
			Name: "db", From: circuitbreaker.Closed, To: circuitbreaker.Open, Reason: circuitbreaker.Tripped,
			Counts: circuitbreaker.Counts{Requests: 20, Successes: 9, Failures: 11}, OpenFor: 5 * time.Second, At: at, Generation: 3,
		}, "breaker db: closed -> open (tripped; requests 20, successes 9, failures 11), open for 5s, change 3 at 2024-01-01T00:00:10Z"},
		{circuitbreaker.StateChange{
			From: circuitbreaker.Closed, To: circuitbreaker.Open, Reason: circuitbreaker.ManualOpen, Detail: "incident 42",
			Override: circuitbreaker.ForcedOpen, Generation: 1,
		}, `breaker: closed -> open (manual-open; no calls), "incident 42", forced-open, change 1`},
		{circuitbreaker.Counts{ConsecutiveFailures: 3}, "consecutive failures 3"},
		{circuitbreaker.HalfOpen, "half-open"},
		{circuitbreaker.ForcedClosed, "forced-closed"},
		{breakerimpl.ReasonOpen, "open"},
	} {
		if got := fmt.Sprintf("%v", tc.v); got != tc.want {
			t.Errorf("%%v of %T:\n got %s\nwant %s", tc.v, got, tc.want)
		}
	}
}
