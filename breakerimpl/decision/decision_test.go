package decision_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/decision"
)

// Record hands each decision to the sink and to the span recorder, those
// installed, and to neither once they are removed.
func TestRecordReachesSinkAndSpanRecorder(t *testing.T) {
	var sunk, spanned []decision.Decision
	decision.SetSink(func(_ context.Context, d decision.Decision) { sunk = append(sunk, d) })
	decision.SetSpanRecorder(func(_ context.Context, d decision.Decision) { spanned = append(spanned, d) })
	t.Cleanup(func() { decision.SetSink(nil); decision.SetSpanRecorder(nil) })

	decision.Record(context.Background(), decision.Decision{Kind: decision.Retry, Reason: breakerimpl.ReasonError, Attempt: 2})
	decision.RecordError(context.Background(), fmt.Errorf("call: %w", bulkhead.ErrFull), "db")
	decision.RecordError(context.Background(), fmt.Errorf("not a policy's"), "db")
	if len(sunk) != 2 || len(spanned) != 2 {
		t.Fatalf("sink got %d, span recorder %d decisions, want 2 each", len(sunk), len(spanned))
	}
	if d := sunk[1]; d.Kind != decision.Bulkhead || d.Name != "db" || d.Reason != breakerimpl.ReasonOf(bulkhead.ErrFull) {
		t.Errorf("second decision %+v, want the bulkhead's refusal of db", d)
	}
	decision.SetSink(nil)
	decision.SetSpanRecorder(nil)
	decision.Record(context.Background(), decision.Decision{Kind: decision.Timeout})
	if len(sunk) != 2 || len(spanned) != 2 {
		t.Errorf("a decision reached a removed recorder")
	}
}
