package breakerimpl_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/hedge"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/shed"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// TestEventsPrintReadably checks what %v makes of every policy's event:
// one line that names the policy and says what happened.
func TestEventsPrintReadably(t *testing.T) {
	eof := errors.New("EOF")
	for _, tc := range []struct {
		event any
		want  string
	}{
		{circuitbreaker.StateChange{
			Name: "db", From: circuitbreaker.HalfOpen, To: circuitbreaker.Open, Reason: circuitbreaker.ProbesTimedOut,
			OpenFor: 10 * time.Second, Generation: 4,
		}, "breaker db: half-open -> open (probes-timed-out; no calls), open for 10s, change 4"},
		{timeout.Event{Name: "recs", Err: fmt.Errorf("%w after 1s: %w", timeout.ErrTimeout, eof), Snapshot: timeout.Snapshot{TimedOut: 3}},
			"timeout recs: timeout: call ran past its deadline after 1s: EOF (3 timed out)"},
		{retry.Event{Name: "recs", Kind: retry.Retrying, Attempt: 1, Err: eof, Wait: 150 * time.Millisecond},
			"retry recs: attempt 1 failed (EOF); retrying in 150ms"},
		{retry.Event{Kind: retry.GaveUp, Attempt: 3, Err: eof, Why: retry.WhyAttempts},
			"retry: attempt 3 failed (EOF); gave up: max-attempts"},
		{shed.Event{Name: "search", Kind: shed.Started, Snapshot: shed.Snapshot{CPU: 0.95, InFlight: 12, Limit: 8.5}},
			"shedder search: started dropping (cpu 0.95, in flight 12, limit 8.5)"},
		{bulkhead.Event{Name: "recs", Kind: bulkhead.Rejected, Snapshot: bulkhead.Snapshot{MaxConcurrent: 10, InFlight: 10, Waiting: 3}},
			"bulkhead recs: rejected (10 of 10 slots taken, 3 waiting)"},
		{ratelimit.Event{Name: "search", Kind: ratelimit.Rejected}, "limiter search: rejected"},
		{hedge.Event{Name: "recs", Attempt: 1}, "hedge recs: hedge 1 sent"},
	} {
		if got := fmt.Sprintf("%v", tc.event); got != tc.want {
			t.Errorf("%%v of a %T:\n got %s\nwant %s", tc.event, got, tc.want)
		}
	}
}
