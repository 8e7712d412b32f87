package circuitbreaker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

func call(cb *circuitbreaker.Breaker, err error) error {
	_, got := circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) { return 0, err })
	return got
}

// openedForAMinute returns a breaker on a fake clock that one failure has
// just opened for a minute.
func openedForAMinute() (*circuitbreaker.Breaker, *clock.Fake) {
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, OpenDuration: time.Minute, Clock: clk})
	call(cb, errDown)
	return cb, clk
}

// sequence returns a Rand that plays back values, then repeats the last.
func sequence(values ...float64) func() float64 {
	i := 0
	return func() float64 {
		v := values[min(i, len(values)-1)]
		i++
		return v
	}
}

func TestOpenDurationBackoff(t *testing.T) {
	tests := []struct {
		name     string
		settings circuitbreaker.Settings
		want     []time.Duration // open durations: trip, then each failed probe
	}{
		{
			name:     "no backoff: every open lasts OpenDuration",
			settings: circuitbreaker.Settings{OpenDuration: time.Second},
			want:     []time.Duration{time.Second, time.Second, time.Second},
		},
		{
			name:     "doubling up to the cap",
			settings: circuitbreaker.Settings{OpenDuration: time.Second, MaxOpenDuration: 10 * time.Second},
			want:     []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second},
		},
		{
			name:     "factor 3",
			settings: circuitbreaker.Settings{OpenDuration: time.Second, MaxOpenDuration: time.Minute, OpenBackoffFactor: 3},
			want:     []time.Duration{1 * time.Second, 3 * time.Second, 9 * time.Second, 27 * time.Second, time.Minute},
		},
		{
			name: "jitter spreads each duration by up to ±OpenJitter, the cap holds",
			settings: circuitbreaker.Settings{
				OpenDuration: time.Second, MaxOpenDuration: 4 * time.Second, OpenJitter: 0.5,
				Rand: sequence(0, 1, 0.5, 0.75),
			},
			// factors 0.5, 1.5, 1, 1.25 on 1 s, 2 s, 4 s, 4 s
			want: []time.Duration{500 * time.Millisecond, 3 * time.Second, 4 * time.Second, 4 * time.Second},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Time{})
			var opens []time.Duration
			tc.settings.Clock = clk
			tc.settings.Rule = circuitbreaker.ConsecutiveFailures{Threshold: 1}
			tc.settings.OnStateChange = func(e circuitbreaker.StateChange) {
				if e.To == circuitbreaker.Open {
					opens = append(opens, e.OpenFor)
				}
			}
			cb := circuitbreaker.New(tc.settings)
			call(cb, errDown)
			for i, want := range tc.want {
				if len(opens) != i+1 || opens[i] != want {
					t.Fatalf("open %d: durations %v, want %v", i, opens, want)
				}
				clk.Advance(want - 1)
				if err := call(cb, nil); !errors.Is(err, circuitbreaker.ErrOpen) {
					t.Fatalf("open %d: 1ns before the end: %v, want ErrOpen", i, err)
				}
				if ra := cb.RetryAfter(); ra != 1 {
					t.Fatalf("open %d: RetryAfter %v, want 1ns", i, ra)
				}
				clk.Advance(1)
				if i < len(tc.want)-1 {
					call(cb, errDown) // the probe fails: open again, longer
				}
			}
			call(cb, nil) // the probe succeeds: closed, and the backoff is forgotten
			call(cb, errDown)
			if last := opens[len(opens)-1]; last != tc.want[0] && tc.settings.OpenJitter == 0 {
				t.Fatalf("after closing, open for %v, want %v again", last, tc.want[0])
			}
		})
	}
}

// events collects StateChanges.
type events struct {
	mu  sync.Mutex
	all []circuitbreaker.StateChange
}

func (e *events) add(c circuitbreaker.StateChange) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, c)
}

func (e *events) last() circuitbreaker.StateChange {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.all[len(e.all)-1]
}

func TestManualOverride(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	var ev events
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Name: "db", Rule: circuitbreaker.ConsecutiveFailures{Threshold: 2}, OpenDuration: time.Second,
		Clock: clk, OnStateChange: ev.add,
	})
	check := func(step string, state circuitbreaker.State, ov circuitbreaker.Override, reason circuitbreaker.Transition, detail string) {
		t.Helper()
		e := ev.last()
		if got := cb.State(); got != state {
			t.Fatalf("%s: state %v, want %v", step, got, state)
		}
		if e.To != state || e.Override != ov || e.Reason != reason || e.Detail != detail {
			t.Fatalf("%s: event %+v, want to %v, override %v, reason %v, detail %q", step, e, state, ov, reason, detail)
		}
		s := cb.Snapshot()
		wantReason := detail
		if ov == circuitbreaker.Automatic {
			wantReason = ""
		}
		if s.Override != ov || s.OverrideReason != wantReason {
			t.Fatalf("%s: snapshot override %v %q, want %v %q", step, s.Override, s.OverrideReason, ov, wantReason)
		}
	}

	call(cb, errDown) // one failure counted before the override
	cb.ForceOpen("INC-42: database failover")
	check("force open", circuitbreaker.Open, circuitbreaker.ForcedOpen, circuitbreaker.ManualOpen, "INC-42: database failover")
	if e := ev.last(); e.From != circuitbreaker.Closed || e.Counts.ConsecutiveFailures != 1 {
		t.Fatalf("force open event %+v, want from closed with the counts", e)
	}
	clk.Advance(time.Hour)
	if err := call(cb, nil); !errors.Is(err, circuitbreaker.ErrOpen) {
		t.Fatalf("forced open an hour later: %v, want ErrOpen", err)
	}
	if cb.RetryAfter() != 0 || cb.Snapshot().RetryAfter != 0 {
		t.Fatal("forced open: RetryAfter should be unknown (0)")
	}

	cb.ResumeAutomatic("failover done")
	check("resume from forced open", circuitbreaker.HalfOpen, circuitbreaker.Automatic, circuitbreaker.ManualResume, "failover done")
	call(cb, nil)
	if got := cb.State(); got != circuitbreaker.Closed {
		t.Fatalf("after a good probe: %v, want closed", got)
	}

	cb.ForceClosed("trust me")
	check("force closed", circuitbreaker.Closed, circuitbreaker.ForcedClosed, circuitbreaker.ManualClose, "trust me")
	for range 5 {
		if err := call(cb, errDown); !errors.Is(err, errDown) {
			t.Fatalf("forced closed: %v, want the call to run", err)
		}
	}
	check("failures while forced closed", circuitbreaker.Closed, circuitbreaker.ForcedClosed, circuitbreaker.ManualClose, "trust me")
	if c := cb.Counts(); c.ConsecutiveFailures != 5 {
		t.Fatalf("forced closed counts %+v, want 5 consecutive failures kept", c)
	}

	cb.ResumeAutomatic("")
	check("resume from forced closed", circuitbreaker.Closed, circuitbreaker.Automatic, circuitbreaker.ManualResume, "")
	call(cb, errDown) // 6 ≥ 2: the counts kept while forced closed trip it now
	if got := cb.State(); got != circuitbreaker.Open {
		t.Fatalf("first failure after resuming: %v, want open", got)
	}

	cb.ForceClosed("from open")
	check("force closed from open", circuitbreaker.Closed, circuitbreaker.ForcedClosed, circuitbreaker.ManualClose, "from open")
	if c := cb.Counts(); c.ConsecutiveFailures != 0 {
		t.Fatalf("forced closed from open: counts %+v, want fresh", c)
	}
}

func TestUpdateKeepsCounts(t *testing.T) {
	t.Run("a lower threshold applies to the failures already counted", func(t *testing.T) {
		cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 5}, Clock: clock.NewFake(time.Time{})})
		for range 3 {
			call(cb, errDown)
		}
		cb.Update(func(s *circuitbreaker.Settings) { s.Rule = circuitbreaker.ConsecutiveFailures{Threshold: 4} })
		if c := cb.Counts(); c.ConsecutiveFailures != 3 {
			t.Fatalf("counts after Update %+v, want 3 failures kept", c)
		}
		call(cb, errDown)
		if got := cb.State(); got != circuitbreaker.Open {
			t.Fatalf("4th failure with threshold 4: %v, want open", got)
		}
	})
	t.Run("error rate thresholds", func(t *testing.T) {
		cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ErrorRate{MinRequests: 100}, Clock: clock.NewFake(time.Time{})})
		for range 10 {
			call(cb, errDown)
		}
		cb.Update(func(s *circuitbreaker.Settings) { s.Rule = circuitbreaker.ErrorRate{MinRequests: 11} })
		if c := cb.Counts(); c.Failures != 10 {
			t.Fatalf("counts after Update %+v, want 10 failures kept", c)
		}
		call(cb, errDown)
		if got := cb.State(); got != circuitbreaker.Open {
			t.Fatalf("11th failure with MinRequests 11: %v, want open", got)
		}
	})
	t.Run("a new window shape starts afresh and says so", func(t *testing.T) {
		var ev events
		cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ErrorRate{}, Clock: clock.NewFake(time.Time{}), OnStateChange: ev.add})
		call(cb, errDown)
		cb.Update(func(s *circuitbreaker.Settings) { s.Rule = circuitbreaker.ErrorRate{Buckets: 20} })
		if c := cb.Counts(); c.Requests != 0 {
			t.Fatalf("counts %+v, want fresh", c)
		}
		if e := ev.last(); e.Reason != circuitbreaker.Reconfigured || e.Counts.Failures != 1 {
			t.Fatalf("event %+v, want reconfigured with the old counts", e)
		}
	})
	t.Run("a new open duration applies to the current stay", func(t *testing.T) {
		cb, clk := openedForAMinute()
		clk.Advance(10 * time.Second)
		cb.Update(func(s *circuitbreaker.Settings) { s.OpenDuration = 15 * time.Second })
		if ra := cb.RetryAfter(); ra != 5*time.Second {
			t.Fatalf("RetryAfter %v, want 5s", ra)
		}
		if err := call(cb, nil); !errors.Is(err, circuitbreaker.ErrOpen) {
			t.Fatalf("call 5s before the new end: %v, want ErrOpen", err)
		}
		clk.Advance(5 * time.Second)
		if err := call(cb, nil); err != nil {
			t.Fatalf("call at the new end: %v, want a probe that runs", err)
		}
		if got := cb.State(); got != circuitbreaker.Closed {
			t.Fatalf("%v after a good probe, want closed", got)
		}
	})
	t.Run("an open duration shortened to one already over admits a probe at once", func(t *testing.T) {
		cb, clk := openedForAMinute()
		clk.Advance(10 * time.Second)
		cb.Update(func(s *circuitbreaker.Settings) { s.OpenDuration = 5 * time.Second })
		if err := call(cb, nil); err != nil {
			t.Fatalf("call: %v, want a probe that runs", err)
		}
	})
	t.Run("a lengthened open duration goes on refusing", func(t *testing.T) {
		cb, clk := openedForAMinute()
		cb.Update(func(s *circuitbreaker.Settings) { s.OpenDuration = 2 * time.Minute })
		clk.Advance(time.Minute)
		if err := call(cb, nil); !errors.Is(err, circuitbreaker.ErrOpen) {
			t.Fatalf("call after the old end: %v, want ErrOpen", err)
		}
		clk.Advance(time.Minute)
		if err := call(cb, nil); err != nil {
			t.Fatalf("call at the new end: %v, want a probe that runs", err)
		}
	})
	t.Run("probes", func(t *testing.T) {
		clk := clock.NewFake(time.Time{})
		cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, OpenDuration: time.Second, HalfOpenSuccesses: 3, Clock: clk})
		call(cb, errDown)
		clk.Advance(time.Second)
		call(cb, nil)
		cb.Update(func(s *circuitbreaker.Settings) { s.HalfOpenSuccesses = 2 })
		call(cb, nil)
		if got := cb.State(); got != circuitbreaker.Closed {
			t.Fatalf("2 good probes, M lowered to 2: %v, want closed", got)
		}
	})
	t.Run("name and clock stay", func(t *testing.T) {
		clk := clock.NewFake(time.Time{})
		cb := circuitbreaker.New(circuitbreaker.Settings{Name: "a", Clock: clk})
		cb.Update(func(s *circuitbreaker.Settings) { s.Name, s.Clock, s.OpenDuration = "b", nil, time.Minute })
		if s := cb.Settings(); s.Name != "a" || s.Clock != clk || s.OpenDuration != time.Minute {
			t.Fatalf("settings %+v", s)
		}
	})
}

// TestUpdateUnderLoad changes the settings over and over while goroutines
// call the breaker, and checks that every call is counted once.
func TestUpdateUnderLoad(t *testing.T) {
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ErrorRate{MinRequests: 1 << 30}, Clock: clock.NewFake(time.Time{}),
	})
	const workers, each = 4, 2000
	var wg sync.WaitGroup
	var ok, failed atomic.Uint64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				err := errDown
				if (w+i)%3 != 0 {
					err = nil
				}
				if got := call(cb, err); got == nil {
					ok.Add(1)
				} else {
					failed.Add(1)
				}
			}
		}()
	}
	for i := 0; ok.Load()+failed.Load() < workers*each; i++ {
		cb.Update(func(s *circuitbreaker.Settings) {
			s.Rule = circuitbreaker.ErrorRate{MinRequests: 1<<30 + i%7, Percent: 10 + i%50}
			s.OpenDuration = time.Duration(1+i%5) * time.Second
			s.SlowCallThreshold = time.Duration(i%2) * time.Hour
		})
	}
	wg.Wait()
	s := cb.Snapshot()
	if s.Successes != ok.Load() || s.Failures != failed.Load() || s.Requests != workers*each {
		t.Fatalf("snapshot %d successes, %d failures, %d requests; callers saw %d, %d", s.Successes, s.Failures, s.Requests, ok.Load(), failed.Load())
	}
	if c := cb.Counts(); c.Successes != ok.Load() || c.Failures != failed.Load() {
		t.Fatalf("window %+v lost counts; callers saw %d successes, %d failures", c, ok.Load(), failed.Load())
	}
}

func TestSnapshotCounters(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Name: "db", Rule: circuitbreaker.ConsecutiveFailures{Threshold: 2}, OpenDuration: time.Second,
		SlowCallThreshold: 100 * time.Millisecond, Clock: clk,
	})
	ctx := context.Background()
	call(cb, nil)
	call(cb, context.Canceled)                                                                                      // ignored
	circuitbreaker.Execute(ctx, cb, func(context.Context) (int, error) { clk.Advance(time.Second); return 0, nil }) // slow
	call(cb, errDown)                                                                                               // trips
	call(cb, nil)                                                                                                   // rejected: open
	clk.Advance(500 * time.Millisecond)
	s := cb.Snapshot()
	want := circuitbreaker.Snapshot{
		Name: "db", State: circuitbreaker.Open, Since: clk.Now().Add(-500 * time.Millisecond),
		RetryAfter: 500 * time.Millisecond,
		Requests:   5, Successes: 1, Failures: 2, Ignored: 1, SlowCalls: 1, Rejections: 1, StateChanges: 1,
	}
	if s != want {
		t.Fatalf("snapshot\n%+v, want\n%+v", s, want)
	}
	clk.Advance(500 * time.Millisecond)
	probe, err := cb.Allow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Allow(ctx); !errors.Is(err, circuitbreaker.ErrHalfOpenFull) {
		t.Fatalf("second probe: %v", err)
	}
	s = cb.Snapshot()
	if s.State != circuitbreaker.HalfOpen || s.ProbesRunning != 1 || s.Rejections != 2 || s.StateChanges != 2 {
		t.Fatalf("half-open snapshot %+v", s)
	}
	probe.Done(nil)
	s = cb.Snapshot()
	if s.State != circuitbreaker.Closed || s.Successes != 2 || s.Requests != 7 || s.ProbesRunning != 0 {
		t.Fatalf("closed snapshot %+v", s)
	}
	b, err := json.Marshal(s)
	if err != nil || !strings.Contains(string(b), `"state":"closed"`) || !strings.Contains(string(b), `"override":"automatic"`) {
		t.Fatalf("JSON %s, %v", b, err)
	}
}

func TestLogStateChanges(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Name: "db", Rule: circuitbreaker.ConsecutiveFailures{Threshold: 2}, OpenDuration: time.Second,
		Clock: clk, OnStateChange: circuitbreaker.LogStateChanges(logger),
	})
	call(cb, errDown)
	call(cb, errDown)
	cb.ForceClosed("INC-7")
	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
	}
	want := []map[string]any{
		{"level": "WARN", "breaker": "db", "from": "closed", "to": "open", "reason": "tripped", "consecutive_failures": 2.0, "open_for": float64(time.Second), "generation": 1.0},
		{"level": "INFO", "from": "open", "to": "closed", "reason": "manual-close", "override": "forced-closed", "detail": "INC-7"},
	}
	for i, w := range want {
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("line %d: %s = %v, want %v", i, k, lines[i][k], v)
			}
		}
	}
}
