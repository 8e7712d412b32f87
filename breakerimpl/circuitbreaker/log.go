package circuitbreaker

import (
	"context"
	"log/slog"
)

// LogStateChanges returns an OnStateChange listener that logs every change
// through logger: at Warn level when the breaker opens, at Info otherwise,
// with the message "circuit breaker state change" and the attributes
// breaker, from, to, reason, override, generation, the counts that caused
// the change (requests, successes, failures, rejected,
// consecutive_failures), open_for when it opens and detail when an
// operator gave one.
func LogStateChanges(logger *slog.Logger) func(StateChange) {
	return func(e StateChange) {
		level := slog.LevelInfo
		if e.To == Open {
			level = slog.LevelWarn
		}
		if !logger.Enabled(context.Background(), level) {
			return
		}
		attrs := make([]slog.Attr, 0, 14)
		attrs = append(attrs,
			slog.String("breaker", e.Name),
			slog.String("from", e.From.String()),
			slog.String("to", e.To.String()),
			slog.String("reason", string(e.Reason)),
			slog.String("override", e.Override.String()),
			slog.Uint64("generation", e.Generation),
			slog.Uint64("requests", e.Counts.Requests),
			slog.Uint64("successes", e.Counts.Successes),
			slog.Uint64("failures", e.Counts.Failures),
			slog.Uint64("rejected", e.Counts.Rejected),
			slog.Uint64("consecutive_failures", e.Counts.ConsecutiveFailures),
		)
		if e.OpenFor > 0 {
			attrs = append(attrs, slog.Duration("open_for", e.OpenFor))
		}
		if e.Detail != "" {
			attrs = append(attrs, slog.String("detail", e.Detail))
		}
		logger.LogAttrs(context.Background(), level, "circuit breaker state change", attrs...)
	}
}
