package reload_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/reload"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// live is one of each policy, registered.
type live struct {
	t       *reload.Targets
	db      *circuitbreaker.Breaker
	orders  *circuitbreaker.Breaker
	recs    *retry.Retry
	limiter *ratelimit.TokenBucket
}

func newLive() *live {
	clk := clock.NewFake(time.Time{})
	l := &live{
		t:       &reload.Targets{},
		db:      circuitbreaker.New(circuitbreaker.Settings{Name: "db", Rule: circuitbreaker.ErrorRate{Window: time.Second, Buckets: 10, MinRequests: 20, Percent: 50}, OpenDuration: time.Second, Clock: clk}),
		orders:  circuitbreaker.New(circuitbreaker.Settings{Name: "orders-db", Rule: circuitbreaker.ConsecutiveFailures{Threshold: 3}, Clock: clk}),
		recs:    retry.New(retry.Settings{Name: "recs", MaxAttempts: 3, Backoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Clock: clock.NewInstant(time.Time{})}),
		limiter: ratelimit.NewTokenBucket(ratelimit.TokenSettings{Name: "search", Rate: 100, Burst: 10, Clock: clk}),
	}
	l.t.AddBreaker(l.db, l.orders)
	l.t.AddRetry("recommendations", l.recs)
	l.t.AddLimiter("search", l.limiter)
	return l
}

const good = `breakers:
  db:
    error_rate: {min_requests: 5, percent: 30}
    open_duration: 2s
  orders-db:
    consecutive_failures: 5
retries:
  recommendations:
    max_retries: 1
    base_delay: 10ms
    jitter: 0
limiters:
  search:
    rate: 50
    burst: 5
`

func TestApplyKeepsCounts(t *testing.T) {
	l := newLive()
	ctx := context.Background()
	for range 3 {
		circuitbreaker.Execute(ctx, l.db, func(context.Context) (int, error) { return 0, errors.New("down") })
	}
	retry.Execute(ctx, l.recs, func(context.Context) (int, error) { return 0, errors.New("503") })
	p, err := reload.Parse("policies.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.t.Apply("policies.yaml", []byte(good), p); err != nil {
		t.Fatal(err)
	}
	want := circuitbreaker.ErrorRate{Window: time.Second, Buckets: 10, MinRequests: 5, Percent: 30}
	if s := l.db.Settings(); s.Rule != want || s.OpenDuration != 2*time.Second {
		t.Errorf("db settings %+v, want rule %+v and 2s open", s, want)
	}
	if c := l.db.Counts(); c.Failures != 3 {
		t.Errorf("db counts %+v: the 3 failures were not kept", c)
	}
	if s := l.orders.Settings(); s.Rule != (circuitbreaker.ConsecutiveFailures{Threshold: 5}) {
		t.Errorf("orders-db rule %+v", s.Rule)
	}
	if s := l.recs.Settings(); s.MaxAttempts != 2 || s.Backoff != 10*time.Millisecond || s.MaxBackoff != 20*time.Millisecond || s.Jitter != -1 {
		t.Errorf("retry settings %+v, want 2 attempts, 10ms base, 20ms kept, no jitter", s)
	}
	if s := l.recs.Snapshot(); s.Retries != 2 {
		t.Errorf("retry counts %+v: the 2 retries were not kept", s)
	}
	if s := l.limiter.Snapshot(); s.Limit != 50 || l.limiter.Limiter().Burst() != 5 {
		t.Errorf("limiter %+v burst %d", s, l.limiter.Limiter().Burst())
	}
}

// A bad file is refused whole, with every problem at its line and column,
// and nothing changes.
func TestBadFilesAreRefusedWhole(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []string
	}{
		{"unknown field", "breakers:\n  db:\n    open_durration: 2s\n", []string{`policies.yaml:3:5: unknown field "open_durration"`}},
		{"wrong type", "retries:\n  recommendations:\n    max_retries: many\n", []string{"policies.yaml:3:18:"}},
		{"unknown policy", "breakers:\n  dbb:\n    open_duration: 2s\n", []string{`policies.yaml:2:3: unknown breaker "dbb" (known: db, orders-db)`}},
		{"out of range, and a good entry beside it", "limiters:\n  search:\n    rate: 50\nbreakers:\n  db:\n    error_rate:\n      percent: 150\n  orders-db:\n    consecutive_failures: 0\n",
			[]string{"policies.yaml:7:16: percent 150: want 0 < percent <= 100", "policies.yaml:9:27: consecutive_failures 0: want 1 or more"}},
		{"two rules", "breakers:\n  db:\n    error_rate: {percent: 20}\n    consecutive_failures: 2\n", []string{"policies.yaml:4:27: error_rate and consecutive_failures both given"}},
		{"delays", "retries:\n  recommendations:\n    base_delay: 50ms\n", []string{"policies.yaml:3:17: max_delay 20ms is under base_delay 50ms"}},
		{"jitter", "retries:\n  recommendations:\n    jitter: 2\n", []string{"policies.yaml:3:13: jitter 2: want the share"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLive()
			before := l.db.Settings().Rule
			p, err := reload.Parse("policies.yaml", []byte(tt.file))
			if err == nil {
				err = l.t.Apply("policies.yaml", []byte(tt.file), p)
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if l.db.Settings().Rule != before || l.limiter.Snapshot().Limit != 100 {
				t.Error("a refused file changed a policy")
			}
		})
	}
}

// syncBuffer is a log sink safe for the watcher's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Watch applies the file when it is written in place and when an editor
// renames a new one over it; a bad file is logged with its file:line and
// the settings in force stay.
func TestWatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policies.yaml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("breakers:\n  db:\n    open_duration: 2s\n")
	l := newLive()
	var logs syncBuffer
	results := make(chan error, 16)
	w, err := reload.Watch(path, l.t, reload.WatchSettings{
		Log:      slog.New(slog.NewTextHandler(&logs, nil)),
		Debounce: 20 * time.Millisecond,
		OnReload: func(err error) { results <- err },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if d := l.db.Settings().OpenDuration; d != 2*time.Second {
		t.Fatalf("open duration %v after Watch, want the file's 2s", d)
	}
	next := func() error {
		t.Helper()
		select {
		case err := <-results:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("no reload within 10s")
			return nil
		}
	}

	write("breakers:\n  db:\n    open_duration: 3s\n")
	if err := next(); err != nil || l.db.Settings().OpenDuration != 3*time.Second {
		t.Fatalf("in-place write: %v, open duration %v", err, l.db.Settings().OpenDuration)
	}

	tmp := filepath.Join(dir, ".policies.yaml.swp")
	if err := os.WriteFile(tmp, []byte("breakers:\n  db:\n    open_duration: 4s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if err := next(); err != nil || l.db.Settings().OpenDuration != 4*time.Second {
		t.Fatalf("rename over the file: %v, open duration %v", err, l.db.Settings().OpenDuration)
	}

	write("breakers:\n  db:\n    open_duration: -1s\n")
	err = next()
	if err == nil || !strings.Contains(err.Error(), path+":3:20: open_duration -1s") {
		t.Fatalf("bad file: %v", err)
	}
	if l.db.Settings().OpenDuration != 4*time.Second {
		t.Fatal("a refused file changed the breaker")
	}
	if log := logs.String(); !strings.Contains(log, "policy file refused; the settings in force stay") || !strings.Contains(log, path+":3:20") {
		t.Fatalf("log lacks the refusal with its position:\n%s", log)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestWatchRefusesABadFileAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policies.yaml")
	os.WriteFile(path, []byte("breakers: {nope: {}}\n"), 0o644)
	if _, err := reload.Watch(path, newLive().t, reload.WatchSettings{}); err == nil || !strings.Contains(err.Error(), `unknown breaker "nope"`) {
		t.Fatalf("Watch on a bad file: %v", err)
	}
	if _, err := reload.Watch(filepath.Join(t.TempDir(), "missing.yaml"), newLive().t, reload.WatchSettings{}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Watch on a missing file: %v", err)
	}
}

// Every applied file is a version holding every setting; a rollback to a
// named version restores them all (those the later file changed and the
// file did not name alike), keeps the counts, and is a version itself.
func TestVersionsAndRollback(t *testing.T) {
	l := newLive()
	apply := func(name, src string) {
		t.Helper()
		p, err := reload.Parse(name, []byte(src))
		if err == nil {
			err = l.t.Apply(name, []byte(src), p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	apply("one.yaml", "breakers:\n  db:\n    open_duration: 3s\nlimiters:\n  search:\n    rate: 10\n")
	apply("two.yaml", "breakers:\n  db:\n    open_duration: 5s\n    error_rate: {percent: 20}\nretries:\n  recommendations:\n    max_retries: 7\n")
	circuitbreaker.Execute(context.Background(), l.db, func(context.Context) (int, error) { return 0, nil })
	names := func() (s []string) {
		for _, v := range l.t.Versions() {
			s = append(s, v.Name+" "+v.Source)
		}
		return s
	}
	if got := strings.Join(names(), ", "); got != "initial the settings the policies were made with, v1 one.yaml, v2 two.yaml" {
		t.Fatalf("versions: %s", got)
	}
	if err := l.t.Rollback("v1"); err != nil {
		t.Fatal(err)
	}
	if s := l.db.Settings(); s.OpenDuration != 3*time.Second || s.Rule.(circuitbreaker.ErrorRate).Percent != 50 {
		t.Fatalf("db after rollback to v1: %v %+v; want 3s and the initial rule", s.OpenDuration, s.Rule)
	}
	if got := l.recs.Settings().MaxAttempts; got != 3 {
		t.Fatalf("retry attempts after rollback to v1: %d, want 3", got)
	}
	if l.limiter.Limiter().Limit() != 10 || l.db.Counts().Successes != 1 {
		t.Fatalf("limit %v, db counts %+v; want 10 and the success kept", l.limiter.Limiter().Limit(), l.db.Counts())
	}
	if err := l.t.Rollback("initial"); err != nil {
		t.Fatal(err)
	}
	if l.db.Settings().OpenDuration != time.Second || l.limiter.Limiter().Limit() != 100 {
		t.Fatalf("after rollback to initial: %v, %v", l.db.Settings().OpenDuration, l.limiter.Limiter().Limit())
	}
	if got := names(); len(got) != 5 || got[4] != "v4 rollback to initial" {
		t.Fatalf("versions: %v", got)
	}
	if err := l.t.Rollback("v9"); err == nil || !strings.Contains(err.Error(), `no version "v9"`) {
		t.Fatalf("unknown version: %v", err)
	}
}

// A file switches a breaker to the count-based window with a slow-call
// rate, and refuses a count_window beside another rule.
func TestCountWindowEntry(t *testing.T) {
	l := newLive()
	src := "breakers:\n  orders-db:\n    count_window: {calls: 50, percent: 40, slow_percent: 30}\n    slow_call_threshold: 250ms\n"
	p, err := reload.Parse("p.yaml", []byte(src))
	if err == nil {
		err = l.t.Apply("p.yaml", []byte(src), p)
	}
	if err != nil {
		t.Fatal(err)
	}
	s := l.orders.Settings()
	if cw, ok := s.Rule.(circuitbreaker.CountWindow); !ok || cw.Calls != 50 || cw.Percent != 40 || cw.SlowPercent != 30 || s.SlowCallThreshold != 250*time.Millisecond {
		t.Fatalf("settings %+v", s)
	}
	bad := "breakers:\n  db:\n    consecutive_failures: 3\n    count_window: {calls: 0}\n"
	p, err = reload.Parse("bad.yaml", []byte(bad))
	if err == nil {
		err = l.t.Apply("bad.yaml", []byte(bad), p)
	}
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:4:19: count_window and another trip rule given") || !strings.Contains(err.Error(), "bad.yaml:4:27: calls 0: want 1 or more") {
		t.Fatalf("err %v", err)
	}
}
