// Package breakerimpl is a resilience library: policies that keep a failing
// or slow dependency from taking a service down, each usable alone and all
// composed in one documented order.
//
// # Layout
//
// One package per policy, as in failsafe-go; this root package holds only
// what they share.
//
//	breakerimpl                 outcome and reason codes, sentinel errors, Guard and
//	                            Permit (the two-step form), Fallback, Result, Pipeline
//	breakerimpl/clock           Clock: Default (coarse, cheap), Real, Fake and Instant (tests)
//	breakerimpl/circuitbreaker  closed/open/half-open; rules ErrorRate (hystrix),
//	                            ConsecutiveFailures (gobreaker), Adaptive (Google SRE
//	                            throttling); backoff, overrides, run-time settings,
//	                            events, Snapshot, slog logging
//	breakerimpl/fallback        Static, Cache (last known good), Func, Chain
//	breakerimpl/bulkhead        semaphore and bounded queue with a maximum wait
//	breakerimpl/timeout         per-call deadline through the context, on shared timers
//	breakerimpl/retry           full-jitter backoff, Retry-After, a retry Budget
//	breakerimpl/hedge           one more attempt after a delay; losers cancelled
//	breakerimpl/ratelimit       TokenBucket (x/time/rate), SlidingWindow, Concurrency
//	breakerimpl/shed            adaptive load shedding on CPU (cgroup-aware) and
//	                            in-flight requests
//	breakerimpl/httpx           server middleware (Breaker, Bulkhead, RateLimit, Shed)
//	                            and client transports (BreakerTransport, WithTimeout,
//	                            WithRetry, WithHedge)
//	breakerimpl/health          a dependency's health score from p95 latency, error rate
//	                            and connection health; Healthy() for a fallback transport
//	breakerimpl/degrade         a switch that forces the fallback while a signal (p99,
//	                            error rate, health score) stays over a threshold, with
//	                            hysteresis
//	breakerimpl/reload          every policy's settings (breakers, retries, limiters,
//	                            timeouts, bulkheads, fallbacks on/off, health, degrade)
//	                            from a YAML file, re-applied when it changes (fsnotify),
//	                            counts kept, versions kept for a rollback
//	breakerimpl/command         hystrix-go's habits: named, configured commands, Do and
//	                            Go (a channel of errors)
//	breakerimpl/prombreaker     Prometheus collector of breakers (the core never imports
//	                            client_golang)
//	breakerimpl/prompolicy      Prometheus collectors of every other policy, and of a
//	                            Pipeline's results by source and reason
//
// # Guide
//
// Wrap a call in a breaker and a fallback:
//
//	reads := breakerimpl.Pipeline[string, Item]{
//		Breaker:  circuitbreaker.New(circuitbreaker.Settings{Name: "items-db"}),
//		Fallback: fallback.NewCache[string, Item](fallback.CacheSettings{MaxStaleness: time.Minute}),
//	}
//	res, err := reads.Execute(ctx, id, func(ctx context.Context) (Item, error) {
//		return db.GetItem(ctx, id)
//	})
//	// res.Value; res.Source ("primary", "cache"); res.Reason (none, open,
//	// half-open-full, rejected, timeout, error, panic); res.Age.
//
// A policy alone: circuitbreaker.Execute(ctx, cb, fn); or in two steps,
// permit, err := cb.Allow(ctx) ... permit.Done(err). The other policies
// go in the Pipeline fields Shedder, Limiter, Bulkhead, Timeout, Retry and
// Hedge (see ExamplePipeline_resilientClient).
//
// Choose the trip rule in Settings.Rule: ErrorRate{Window, Buckets,
// MinRequests, Percent} (the default), ConsecutiveFailures{Threshold},
// CountWindow{Calls, MinRequests, Percent, SlowPercent} (resilience4j's
// count-based window, with a slow-call rate judged apart), or
// Adaptive{K, Protection, MaxRejectRate}, which never opens but rejects
// calls with the probability of the SRE book's client-side throttling.
// SlowCallThreshold makes slow calls failures; MaxOpenDuration and
// OpenJitter make the open duration back off while the dependency stays
// down; MaxHalfOpenWait bounds a half-open stay whose probes do not answer.
//
// Operate it at run time: cb.ForceOpen(reason), cb.ForceClosed(reason),
// cb.ResumeAutomatic(reason); cb.Update(func(s *circuitbreaker.Settings)
// {...}) keeps the counts. Watch it: Settings.OnStateChange gets every
// change with the counts that caused it (circuitbreaker.LogStateChanges
// logs them with slog); cb.Snapshot() has the state and lifetime counters;
// prombreaker.NewCollector exports them.
//
// Degrade on measurements, not only on errors: a health.Score (p95
// latency, error rate, connection health, weighted) or a degrade.Switch on
// any signal goes in the Pipeline's Degrade field, and refuses with
// ErrDegraded (Reason "degraded") so that the fallback serves. The signal
// can come from outside: degrade.NewPromQL (a PromQL expression on a
// Prometheus server), degrade.Alerts (an Alertmanager webhook receiver),
// and degrade.Toggle (an operator's HTTP switch, loopback and token only).
//
// Keep writes while the store is down: writebehind.Open gives a durable
// local queue (an append-only file, fsynced per write) that accepts the
// writes a store refuses, bounded (ErrFull is back-pressure), and replays
// them in order, once each by key, when the store is back.
//
// Tune at run time from a file: reload.Watch(path, &targets, ...) applies
// a YAML policy file to the policies registered in targets (breakers,
// retries, token buckets, timeouts, bulkheads, fallback toggles, health
// scores and degrade switches), and again whenever it changes; a bad edit is refused with its
// file:line:column and the settings in force stay. Each file applied is a
// version (targets.Versions()); targets.Rollback("v2") restores one. The
// admin package is an http.Handler a service mounts where it wants: it
// lists breakers and policies with their state, forces a breaker open or
// closed, reloads the file and rolls back, behind an optional bearer token.
//
// Log every decision: decisionlog.New(settings).Install() writes one slog
// line per fallback, refusal, retry and timeout of the adapters, with the
// reason, the retry number and when calls were switched to the fallback;
// sampled, and refusals bounded by a rate.
//
// One budget for retries and hedges: give the same retry.Budget to a
// retry.Retry and to a hedge.Hedge (with CallsCounted), and together they
// add at most its Ratio to the calls a dependency sees. ratelimit.Adaptive
// is a concurrency limit that follows latency (Gradient2).
//
// Coming from hystrix-go: command.ConfigureCommand(name, command.Config{...})
// and command.Go(ctx, name, run, fallback), whose channel gets the error.
// As hystrix's, a command answers at its timeout even when run ignores its
// context (timeout mode Abandon: the late result is discarded, the breaker
// counts a timeout, the abandoned calls still running are bounded and
// exported); Config.Cooperative waits for run instead.
//
// Over HTTP: httpx.Breaker(cb, httpx.ServerOptions{}) is middleware for a
// route (503 and Retry-After while open); httpx.BreakerTransport is a
// RoundTripper for a client.
//
// # The order of composition
//
// Outermost first:
//
//	fallback ∘ shed ∘ ratelimit ∘ degrade ∘ breaker ∘ bulkhead ∘ timeout ∘ retry ∘ hedge ∘ fn
//
// The fallback is outermost so it can stand in for any refusal or failure
// below it. Shedding and rate limiting refuse excess load before it costs
// anything, and before the breaker counts it (a refusal says nothing about
// the dependency's health). A degrade switch or health score sits just
// outside the breaker: it keeps calls off a dependency that answers but
// too slowly, which a breaker counting errors never sees, and its refusals
// are not the breaker's to count. The breaker sees one outcome per logical call,
// after retries: transient errors that a retry hides do not trip it, and
// while it is open no attempt at all is made. The bulkhead holds one slot
// for the whole call, retries included, so the dependency never sees more
// than its limit. The timeout bounds the whole call, retries and backoff
// included (a per-attempt timeout is an option of retry). A timeout in
// mode Abandon answers at the deadline whatever the work does; the default,
// Cooperative, ends the context there and waits for the work. Pipeline applies
// the policies it has fields for; it is the one place that knows the order.
//
// # What composition costs
//
// Breakers, bulkheads, limiters and shedders are all Guards: Allow returns
// a Permit (a small value) and Permit.Done takes the call's error. Pipeline
// asks each guard in turn, runs fn itself, and reports back; it never wraps
// fn in closures handed to an interface, which is what makes composing
// executors allocate. Timeout derives the context from a deadline and a
// timer shared by the calls that start close together, so a call costs no
// timer, and no allocation but a small context of its own when its parent
// can be cancelled; retry loops around the inner call; hedge fans out, and
// allocates, only when used. A Fallback is told each success through
// Remember (a cache overwrites the entry it has) and asked through Recover
// only on failure.
//
// # Time
//
// Every policy takes a clock.Clock. The default, clock.Default(), is read
// with one atomic load, because one time.Now costs about 40 ns on some
// machines, more than a whole breaker call should. Tests use clock.Fake and
// never sleep.
//
// # Speed
//
// A closed breaker's success costs one atomic add and no allocation: no
// lock and no clock reading (a timer marks the end of the window's live
// bucket).
// go test -run '^$' -bench . -benchmem ./... in breakerimpl measures the hot
// paths (BenchmarkBreaker*, BenchmarkPipeline*); the repository's bench
// module compares them with sony/gobreaker, failsafe-go, go-zero and
// hystrix-go, and BENCHMARKS.md records the figures.
package breakerimpl
