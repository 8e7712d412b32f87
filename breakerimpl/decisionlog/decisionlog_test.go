package decisionlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/decision"
	"github.com/chaoskit/chaoskit/breakerimpl/decisionlog"
)

func lines(buf *bytes.Buffer) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		json.Unmarshal([]byte(l), &m)
		out = append(out, m)
	}
	return out
}

// Fallbacks are sampled one in Sample; refusals are bounded by a rate and
// the next one logged says how many were left out; each line has the
// reason, the retry number and the switch time.
func TestSamplingAndBound(t *testing.T) {
	var buf bytes.Buffer
	clk := clock.NewFake(time.Time{})
	l := decisionlog.New(decisionlog.Settings{Logger: slog.New(slog.NewJSONHandler(&buf, nil)), Sample: 3, RefusalsPerSecond: 2, Clock: clk})
	ctx := context.Background()
	switched := time.Date(2026, 12, 5, 5, 0, 0, 0, time.UTC)
	for range 10 {
		l.Record(ctx, decision.Decision{Kind: decision.Fallback, Reason: breakerimpl.ReasonOpen, Source: "http", Name: "recs", SwitchedAt: switched})
	}
	l.Record(ctx, decision.Decision{Kind: decision.Retry, Reason: breakerimpl.ReasonError, Attempt: 3, Name: "recs"}) // 11th: sampled out
	l.Record(ctx, decision.Decision{Kind: decision.Retry, Reason: breakerimpl.ReasonError, Attempt: 2, Name: "recs"}) // 12th: out
	l.Record(ctx, decision.Decision{Kind: decision.Retry, Reason: breakerimpl.ReasonError, Attempt: 4, Name: "recs"}) // 13th: logged
	for range 5 {
		l.Record(ctx, decision.Decision{Kind: decision.Breaker, Reason: breakerimpl.ReasonOpen, Name: "db"})
	}
	clk.Advance(time.Second)
	l.Record(ctx, decision.Decision{Kind: decision.Breaker, Reason: breakerimpl.ReasonOpen, Name: "db"})
	got := lines(&buf)
	if len(got) != 4+1+2+1 {
		t.Fatalf("%d lines, want 4 fallbacks, 1 retry, 3 refusals:\n%s", len(got), buf.String())
	}
	if f := got[0]; f["kind"] != "fallback" || f["reason"] != "open" || f["source"] != "http" || f["switched_at"] != "2026-12-05T05:00:00Z" || f["sample"] != 3.0 || f["level"] != "INFO" {
		t.Errorf("fallback line %v", f)
	}
	if r := got[4]; r["kind"] != "retry" || r["retry"] != 3.0 || r["attempt"] != 4.0 {
		t.Errorf("retry line %v", r)
	}
	if r := got[7]; r["kind"] != "breaker" || r["level"] != "WARN" || r["suppressed"] != 3.0 {
		t.Errorf("refusal after the bound %v, want suppressed 3", r)
	}
	if s := l.Snapshot(); s.Logged != 8 || s.SampledOut != 8 || s.Suppressed != 3 {
		t.Errorf("snapshot %+v", s)
	}
}
