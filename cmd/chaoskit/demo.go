package main

import (
	"errors"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/demo"
)

func newDemoCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "The bundled demo service the bundled scenarios attack",
	}
	var cfg demo.Config
	var verbose bool
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Run the demo shop service (SQLite or PostgreSQL, breaker, cache fallback)",
		Long: `Serve runs the demo shop on a loopback address and prints "listening on ADDR".
Start it with GO_FAILPOINTS_HTTP=127.0.0.1:PORT to switch its failpoints over
HTTP. The --no-* flags break its resilience on purpose.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			level := slog.LevelWarn
			if verbose {
				level = slog.LevelInfo
			}
			cfg.Log = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			err := demo.Serve(cmd.Context(), cfg, cmd.OutOrStdout())
			if errors.Is(err, demo.ErrInvalidConfig) {
				return usageError("%v", err)
			}
			return err
		},
	}
	f := serve.Flags()
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:8080", "loopback address to listen on (port 0 picks a free one)")
	f.StringVar(&cfg.DB, "db", "", "SQLite database file to use (default: a temporary one)")
	f.StringVar(&cfg.Postgres, "postgres", "", "PostgreSQL DSN on loopback to use instead of SQLite, e.g. postgres://postgres@127.0.0.1:5432/shop?sslmode=disable")
	f.StringVar(&cfg.Redis, "redis", "", "Redis address on loopback that keeps the search rate limit (in-memory fallback while it is away), e.g. 127.0.0.1:6379")
	f.DurationVar(&cfg.DBTimeout, "db-timeout", 0, "bound on each database call (default 100ms)")
	f.DurationVar(&cfg.MaxStaleness, "max-staleness", 0, "oldest cache copy served (default 30s)")
	f.BoolVar(&cfg.NoFallback, "no-fallback", false, "broken variant: serve no fallback (no cache copy, no default recommendations)")
	f.BoolVar(&cfg.StaleUnbounded, "stale-unbounded", false, "broken variant: serve cache copies of any age, past --max-staleness")
	f.BoolVar(&cfg.NoBreaker, "no-breaker", false, "broken variant: keep calling the database while it fails")
	f.BoolVar(&cfg.NoBulkhead, "no-bulkhead", false, "broken variant: let every recommendations call wait on the dependency")
	f.BoolVar(&cfg.SharedBulkhead, "shared-bulkhead", false, "broken variant: product reads wait in the recommendations bulkhead too")
	f.BoolVar(&cfg.LeakPermits, "leak-permits", false, "broken variant: a failed recommendations call keeps its bulkhead slot")
	f.BoolVar(&cfg.ConsecutiveBreaker, "consecutive-breaker", false, "broken variant: the database breaker trips on 3 failures in a row, not on the error rate")
	f.BoolVar(&cfg.NoShedder, "no-shedder", false, "broken variant: never shed search load")
	f.BoolVar(&cfg.UnboundedRetries, "unbounded-retries", false, "broken variant: retry recommendations without a retry budget")
	f.DurationVar(&cfg.SearchCost, "search-cost", 0, "CPU each search burns (default 2ms)")
	f.Float64Var(&cfg.SearchRate, "search-rate", 0, "searches a second the rate limiter admits, bursts of a tenth of it (default 2000)")
	f.BoolVar(&cfg.FallbackEmpty, "fallback-empty", false, "broken variant: a fallback answers 200 with an empty body")
	f.BoolVar(&cfg.AckBeforeCommit, "ack-before-commit", false, "broken variant: acknowledge orders before committing them")
	f.BoolVar(&cfg.IdempotencyBroken, "idempotency-broken", false, "broken variant: answer a replayed order with a new id instead of the first order")
	f.StringVar(&cfg.Bug, "bug", "", "plant a named bug for fault-schedule fuzzing to find (stale-after-recovery)")
	f.BoolVarP(&verbose, "verbose", "v", false, "log every degradation, not only failures")
	cmd.AddCommand(serve)
	return cmd
}
