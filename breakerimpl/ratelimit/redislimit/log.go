package redislimit

import (
	"context"
	"log/slog"
)

// LogEvents returns an OnEvent listener that logs every change of backend
// through logger: a FellBack at Warn level with the Redis error, a
// Recovered at Info with how long the limiter was in memory. The message
// is "rate limiter backend change", with the attributes limiter, kind,
// backend, and error or in_memory_for.
func LogEvents(logger *slog.Logger) func(Event) {
	return func(e Event) {
		switch e.Kind {
		case FellBack:
			logger.LogAttrs(context.Background(), slog.LevelWarn, "rate limiter backend change",
				slog.String("limiter", e.Name), slog.String("kind", string(e.Kind)),
				slog.String("backend", InMemory.String()), slog.Any("error", e.Err))
		case Recovered:
			logger.LogAttrs(context.Background(), slog.LevelInfo, "rate limiter backend change",
				slog.String("limiter", e.Name), slog.String("kind", string(e.Kind)),
				slog.String("backend", InRedis.String()), slog.Duration("in_memory_for", e.InMemoryFor))
		}
	}
}
