package demo

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// Flags are the command-line flags of `chaoskit demo serve`: the service's
// Config and how much it logs. They are defined here, not in the command,
// so that a scenario's target.demo.args can be checked when it loads
// (CheckArgs) against the very flags the demo will parse.
type Flags struct {
	Config Config
	// Verbose logs every degradation, not only failures.
	Verbose bool
}

// Register defines the flags on fs, writing into f.
func (f *Flags) Register(fs *pflag.FlagSet) {
	cfg := &f.Config
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8080", "loopback address to listen on (port 0 picks a free one)")
	fs.StringVar(&cfg.DB, "db", "", "SQLite database file to use (default: a temporary one)")
	fs.StringVar(&cfg.Postgres, "postgres", "", "PostgreSQL DSN on loopback to use instead of SQLite, e.g. postgres://postgres:{password:db}@127.0.0.1:5432/shop?sslmode=disable ({password:NAME} is read from $"+PasswordEnvPrefix+"NAME)")
	fs.StringVar(&cfg.RedisPassword, "redis-password", "", "password Redis requires; {password:NAME} is read from $"+PasswordEnvPrefix+"NAME, where chaoskit puts a dependency's password")
	fs.StringVar(&cfg.Redis, "redis", "", "Redis address on loopback that keeps the search rate limit (in-memory fallback while it is away), e.g. 127.0.0.1:6379")
	fs.DurationVar(&cfg.DBTimeout, "db-timeout", 0, "bound on each database call (default 100ms)")
	fs.StringVar(&cfg.Policies, "policies", "", "YAML policy file tuning the breakers (db, orders-db, recommendations), the recommendations retry, timeout and bulkhead, the search limiter, the fallbacks (product-cache, recommendations-default), the health scores (db, recommendations-grpc) and the degrade switch (db-p95), re-applied when it changes")
	fs.StringVar(&cfg.RecommendationsGRPCListen, "recommendations-grpc-listen", "", "loopback address the recommendations dependency serves gRPC on (default a free port)")
	fs.StringVar(&cfg.RecommendationsGRPCDial, "recommendations-grpc-dial", "", "loopback address the demo dials for recommendations over gRPC (default the one it serves on; a proxy in front of it, say)")
	fs.DurationVar(&cfg.MaxStaleness, "max-staleness", 0, "oldest cache copy served (default 30s)")
	fs.BoolVar(&cfg.NoFallback, "no-fallback", false, "broken variant: serve no fallback (no cache copy, no default recommendations)")
	fs.BoolVar(&cfg.StaleUnbounded, "stale-unbounded", false, "broken variant: serve cache copies of any age, past --max-staleness")
	fs.BoolVar(&cfg.StaleDisguised, "stale-disguised", false, "broken variant: serve cache copies of any age, as --stale-unbounded does, and state each at most half of --max-staleness old")
	fs.BoolVar(&cfg.NoBreaker, "no-breaker", false, "broken variant: keep calling the database while it fails")
	fs.BoolVar(&cfg.NoDeadline, "no-deadline", false, "broken variant: read products from the database with no deadline (--db-timeout not applied)")
	fs.BoolVar(&cfg.NoBulkhead, "no-bulkhead", false, "broken variant: let every recommendations call wait on the dependency")
	fs.BoolVar(&cfg.SharedBulkhead, "shared-bulkhead", false, "broken variant: product reads wait in the recommendations bulkhead too")
	fs.BoolVar(&cfg.LeakPermits, "leak-permits", false, "broken variant: a failed recommendations call keeps its bulkhead slot")
	fs.BoolVar(&cfg.ConsecutiveBreaker, "consecutive-breaker", false, "broken variant: the database breaker trips on 3 failures in a row, not on the error rate")
	fs.BoolVar(&cfg.NoDegrade, "no-degrade", false, "broken variant: never force product reads to the cache while the database is slow")
	fs.BoolVar(&cfg.DegradeLatched, "degrade-latched", false, "broken variant: the product reads' degrade switch never releases once engaged")
	fs.BoolVar(&cfg.NoShedder, "no-shedder", false, "broken variant: never shed search load")
	fs.BoolVar(&cfg.UnboundedRetries, "unbounded-retries", false, "broken variant: retry recommendations without a retry budget")
	fs.BoolVar(&cfg.NoHTTPFallback, "no-http-fallback", false, "broken variant: call recommendations over gRPC only, with no HTTP path while gRPC is down")
	fs.BoolVar(&cfg.StickyHTTPFallback, "sticky-http-fallback", false, "broken variant: once recommendations went over HTTP, never come back to gRPC")
	fs.DurationVar(&cfg.SearchCost, "search-cost", 0, "CPU each search burns (default 2ms)")
	fs.Float64Var(&cfg.SearchRate, "search-rate", 0, "searches a second the rate limiter admits, bursts of a tenth of it (default 2000)")
	fs.BoolVar(&cfg.FallbackEmpty, "fallback-empty", false, "broken variant: a fallback answers 200 with an empty body")
	fs.BoolVar(&cfg.AckBeforeCommit, "ack-before-commit", false, "broken variant: acknowledge orders before committing them")
	fs.StringVar(&cfg.AdminToken, "admin-token", "", "serve the admin endpoint (breakers, policies, reload, rollback) under "+AdminPath+" to requests with this bearer token")
	fs.BoolVar(&cfg.WriteBehind, "write-behind", false, "accept orders the database refuses into a local queue file (202) and write them when it is back")
	fs.StringVar(&cfg.WriteBehindDir, "write-behind-dir", "", "directory of the write-behind queue file (default a temporary directory, removed at exit once empty)")
	fs.BoolVar(&cfg.WriteBehindLossy, "write-behind-lossy", false, "broken variant: with --write-behind, drop a queued order whose first replay fails")
	fs.BoolVar(&cfg.IdempotencyBroken, "idempotency-broken", false, "broken variant: answer a replayed order with a new id instead of the first order")
	fs.BoolVar(&cfg.RedisFallbackOpen, "redis-fallback-open", false, "broken variant: while Redis is away, admit every search instead of limiting in memory")
	fs.StringVar(&cfg.Lie, "lie", "", "broken variant that misreports itself as well ("+strings.Join(slices.Sorted(maps.Keys(Lies)), ", ")+"; see docs/scenarios.md)")
	fs.StringVar(&cfg.Bug, "bug", "", "plant a named bug for fault-schedule fuzzing to find ("+strings.Join(slices.Sorted(maps.Keys(Bugs)), ", ")+")")
	fs.BoolVarP(&f.Verbose, "verbose", "v", false, "log every degradation, not only failures")
}

// CheckArgs says whether args are arguments `chaoskit demo serve` accepts
// after the --listen chaoskit gives it: known flags with values of their
// type, no positional arguments, a known --bug and --lie, and a --listen (which
// overrides chaoskit's) on a loopback address. The error names the
// argument and what would be right.
func CheckArgs(args []string) error {
	var f Flags
	fs := pflag.NewFlagSet("chaoskit demo serve", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs)
	switch err := fs.Parse(args); {
	case errors.Is(err, pflag.ErrHelp):
		return errors.New("--help makes the demo print its help and exit instead of serving")
	case err != nil:
		return fmt.Errorf("%v; the demo's flags are %s", err, flagNames(fs))
	case fs.NArg() > 0:
		return fmt.Errorf("the demo takes flags only, not %q", fs.Arg(0))
	}
	if fs.Changed("listen") {
		if err := checkListen(f.Config.Listen); err != nil {
			return err
		}
	}
	if err := f.Config.checkRecommendationsAddrs(); err != nil {
		return err
	}
	if b := f.Config.Bug; b != "" && Bugs[b] == "" {
		return fmt.Errorf("unknown --bug %q (known: %s)", b, strings.Join(slices.Sorted(maps.Keys(Bugs)), ", "))
	}
	if l := f.Config.Lie; l != "" && Lies[l] == "" {
		return fmt.Errorf("unknown --lie %q (known: %s)", l, strings.Join(slices.Sorted(maps.Keys(Lies)), ", "))
	}
	return nil
}

func flagNames(fs *pflag.FlagSet) string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, "--"+f.Name) })
	return strings.Join(names, ", ")
}
