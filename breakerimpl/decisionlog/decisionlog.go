// Package decisionlog writes breakerimpl's degradation decisions to a
// structured log (log/slog): one line per decision, with its kind, the
// reason code (as in the X-…-Reason headers and the span events), the
// policy's name, the fallback that served, the retry number, and when the
// calls were switched to the fallback (the moment a gRPC path's breaker
// opened, for an answer over HTTP).
//
// Under load a line per decision would cost more than the decisions:
// fallbacks, retries and timeouts are sampled (one in Settings.Sample),
// and refusals (an open breaker, a full bulkhead, a limiter, a shedder) are
// logged at most Settings.RefusalsPerSecond a second; the refusals left
// out are counted, and the next refusal logged says how many
// ("suppressed").
//
//	decisionlog.New(decisionlog.Settings{Logger: logger, Sample: 10}).Install()
//
// Install hands the log every decision decision.Record sees, which is every
// decision of the httpx and grpcx adapters.
package decisionlog

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"golang.org/x/time/rate"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/decision"
)

// DefaultRefusalsPerSecond is the RefusalsPerSecond of Settings that leave
// it zero.
const DefaultRefusalsPerSecond = 10

// Settings configures a Log.
type Settings struct {
	// Logger gets the lines; nil means slog.Default().
	Logger *slog.Logger
	// Sample logs one fallback, retry or timeout decision in Sample (the
	// first, then every Sample-th). Zero or one logs every one.
	Sample int
	// RefusalsPerSecond bounds the refusals logged, with bursts of as
	// many. Zero means DefaultRefusalsPerSecond; below zero, no bound.
	RefusalsPerSecond float64
	// Clock is the time source of the bound; nil means clock.Default().
	Clock clock.Clock
}

// Snapshot counts a Log's decisions since creation.
type Snapshot struct {
	Logged     uint64 // lines written
	SampledOut uint64 // fallbacks, retries and timeouts left out by sampling
	Suppressed uint64 // refusals left out by the bound
}

// Log is a decision log. Make one with New; it is safe for concurrent use.
type Log struct {
	log    *slog.Logger
	sample uint64
	clock  clock.Clock

	seen       atomic.Uint64 // sampled decisions seen
	logged     atomic.Uint64
	sampledOut atomic.Uint64

	mu          sync.Mutex
	refusals    *rate.Limiter // nil: no bound
	suppressed  uint64        // since the last refusal logged
	suppressedT uint64        // since creation
}

// New returns a Log with the given settings.
func New(s Settings) *Log {
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	if s.Sample < 1 {
		s.Sample = 1
	}
	if s.Clock == nil {
		s.Clock = clock.Default()
	}
	l := &Log{log: s.Logger, sample: uint64(s.Sample), clock: s.Clock}
	switch {
	case s.RefusalsPerSecond == 0:
		s.RefusalsPerSecond = DefaultRefusalsPerSecond
		fallthrough
	case s.RefusalsPerSecond > 0:
		burst := max(int(s.RefusalsPerSecond), 1)
		l.refusals = rate.NewLimiter(rate.Limit(s.RefusalsPerSecond), burst)
	}
	return l
}

// Install makes l the sink of decision.Record (see decision.SetSink).
func (l *Log) Install() { decision.SetSink(l.Record) }

// Snapshot returns l's counts.
func (l *Log) Snapshot() Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Snapshot{Logged: l.logged.Load(), SampledOut: l.sampledOut.Load(), Suppressed: l.suppressedT}
}

// refusal reports whether decisions of kind k are refusals.
func refusal(k decision.Kind) bool {
	switch k {
	case decision.Breaker, decision.Bulkhead, decision.RateLimit, decision.Shed, decision.Rejected:
		return true
	}
	return false
}

// Record logs d, subject to sampling and the bound of refusals.
func (l *Log) Record(ctx context.Context, d decision.Decision) {
	attrs := make([]slog.Attr, 0, 8)
	level := slog.LevelInfo
	if refusal(d.Kind) {
		level = slog.LevelWarn
		if l.refusals != nil {
			l.mu.Lock()
			if !l.refusals.AllowN(l.clock.Now(), 1) {
				l.suppressed++
				l.suppressedT++
				l.mu.Unlock()
				return
			}
			if l.suppressed > 0 {
				attrs = append(attrs, slog.Uint64("suppressed", l.suppressed))
				l.suppressed = 0
			}
			l.mu.Unlock()
		}
	} else if l.sample > 1 {
		if (l.seen.Add(1)-1)%l.sample != 0 {
			l.sampledOut.Add(1)
			return
		}
		attrs = append(attrs, slog.Uint64("sample", l.sample))
	}
	attrs = append(attrs, slog.String("kind", string(d.Kind)), slog.String("reason", d.Reason.String()))
	if d.Name != "" {
		attrs = append(attrs, slog.String("name", d.Name))
	}
	if d.Source != "" {
		attrs = append(attrs, slog.String("source", d.Source))
	}
	if d.Attempt > 0 {
		attrs = append(attrs, slog.Int("retry", d.Attempt-1), slog.Int("attempt", d.Attempt))
	}
	if !d.SwitchedAt.IsZero() {
		attrs = append(attrs, slog.Time("switched_at", d.SwitchedAt))
	}
	l.logged.Add(1)
	l.log.LogAttrs(ctx, level, "breakerimpl decision", attrs...)
}
