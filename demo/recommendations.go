package demo

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/grpcx"
	"github.com/chaoskit/chaoskit/breakerimpl/health"
	"github.com/chaoskit/chaoskit/breakerimpl/prompolicy"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
	"github.com/chaoskit/chaoskit/demo/recommend"
	"github.com/chaoskit/chaoskit/demo/recommend/recommendpb"
)

// bestsellers is the default list served when the recommendations service
// cannot answer: functional degradation, said so in X-Chaoskit-Source.
var bestsellers = []int64{1, 2, 3, 4}

// defaultSource is the X-Chaoskit-Source of the default list.
const defaultSource = "default"

// recommendations is the client side of the demo's downstream dependency,
// which it calls over gRPC, and over HTTP while the gRPC path is down.
type recommendations struct {
	upstream *recommend.Upstream
	stop     func()
	conn     *grpc.ClientConn
	client   recommendpb.RecommendationsClient
	overHTTP *grpcx.HTTPFallback // nil with NoHTTPFallback
	// grpcHealth scores the gRPC path from its attempts (nil with
	// NoHTTPFallback or StickyHTTPFallback).
	grpcHealth *health.Score
	breaker    *circuitbreaker.Breaker
	bulkhead   *bulkhead.Bulkhead
	// isolation is the guard calls wait in: the bulkhead, a leaky one, or
	// none.
	isolation breakerimpl.Guard
	timeout   *timeout.Timeout
	retry     *retry.Retry
	budget    *retry.Budget
	// unbounded is set for the broken variant without a budget.
	unbounded bool
	// uncountedRetries is the LieCounters variant: the reported upstream
	// calls leave the retries out. reported is the highest count reported,
	// so that the count never goes back.
	uncountedRetries bool
	reported         atomic.Int64
	// defaultOn turns the default list off and on (a policy file's
	// fallbacks.recommendations-default).
	defaultOn fallback.Toggle
}

// newRecommendations starts the upstream on loopback ports of its own and
// builds the client: timeout, retry with a budget, bulkhead and breaker,
// with the bestsellers as the fallback, on a gRPC connection whose calls
// go over HTTP while the gRPC path is down.
func newRecommendations(ctx context.Context, cfg Config) (*recommendations, error) {
	if err := cfg.checkRecommendationsAddrs(); err != nil {
		return nil, err
	}
	r := &recommendations{upstream: recommend.NewUpstream(cfg.Products)}
	addrs, stop, err := recommend.Start(ctx, r.upstream, cfg.RecommendationsGRPCListen)
	if err != nil {
		return nil, err
	}
	if cfg.RecommendationsGRPCDial != "" {
		addrs.GRPC = cfg.RecommendationsGRPCDial
	}
	r.stop = sync.OnceFunc(stop)
	// The breaker trips when half the calls of the last second fail.
	// Rejections by our own bulkhead say nothing about the dependency's
	// health, so the breaker ignores them.
	r.breaker = circuitbreaker.New(circuitbreaker.Settings{
		Name:         "recommendations",
		Rule:         circuitbreaker.ErrorRate{Window: time.Second, Buckets: 10, MinRequests: 20, Percent: 50},
		OpenDuration: time.Second,
		Classify: func(err error) breakerimpl.Outcome {
			if errors.Is(err, breakerimpl.ErrRejected) {
				return breakerimpl.Ignored
			}
			return breakerimpl.DefaultClassifier(err)
		},
	})
	// At most 8 calls wait on the dependency at once; the others get the
	// default list at once instead of queueing behind a slow dependency.
	r.bulkhead = bulkhead.New(bulkhead.Settings{Name: "recommendations", MaxConcurrent: 8})
	r.timeout = timeout.New(timeout.Settings{Name: "recommendations", Timeout: 250 * time.Millisecond})
	// Retries may add at most 10% to the dependency's traffic, so that a
	// failing dependency never sees a retry storm.
	r.budget = retry.NewBudget(retry.BudgetSettings{Ratio: 0.1, MinRetries: -1, Window: time.Second})
	rs := retry.Settings{Name: "recommendations", MaxAttempts: 3, Backoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Budget: r.budget}
	if cfg.UnboundedRetries {
		rs.Budget, rs.MaxAttempts = nil, 5 // broken on purpose: a retry storm
		r.unbounded = true
	}
	r.retry = retry.New(rs)
	r.uncountedRetries = cfg.Lie == LieCounters
	switch {
	case cfg.NoBulkhead:
	case cfg.LeakPermits:
		r.isolation = leakyBulkhead{b: r.bulkhead}
	case cfg.Lie == LieBulkhead:
		r.isolation = leakyBulkhead{b: r.bulkhead, uncounted: true}
	default:
		r.isolation = r.bulkhead
	}
	opts := grpcx.ClientOptions{
		Name: "recommendations", Breaker: r.breaker, Bulkhead: r.isolation, Timeout: r.timeout, Retry: r.retry,
		// The service's 5xx answers are worth another attempt, as they
		// were over HTTP.
		Codes: grpcx.Codes{codes.Internal: {Class: grpcx.Failure, Retry: true}},
	}
	if !cfg.NoFallback {
		opts.Fallback = &grpcx.Fallback{Name: defaultSource, Fn: func(_ context.Context, _ string, req, reply any, _ error) error {
			if !r.defaultOn.Enabled() {
				return fallback.ErrDisabled
			}
			l := reply.(*recommendpb.List)
			l.ProductId, l.Items = req.(*recommendpb.GetRequest).GetProductId(), bestsellers
			return nil
		}}
	}
	chain := []grpc.UnaryClientInterceptor{grpcx.TraceUnaryClient(nil), grpcx.UnaryClientInterceptor(opts)}
	if !cfg.NoHTTPFallback {
		// The gRPC path has a breaker of its own: three unavailable
		// answers, or three attempts that ran out of time, in a row send
		// calls over HTTP for half a second, then a probe tries gRPC
		// again.
		grpcPath := circuitbreaker.New(circuitbreaker.Settings{
			Name: "recommendations-grpc", Rule: circuitbreaker.ConsecutiveFailures{Threshold: 3}, OpenDuration: 500 * time.Millisecond,
		})
		fs := grpcx.HTTPFallbackSettings{BaseURL: addrs.HTTP, Breaker: grpcPath, Name: "recommendations", ConsecutiveTimeouts: 3}
		if cfg.StickyHTTPFallback {
			fs.Health = &stickyHealth{cb: grpcPath} // broken on purpose: never back to gRPC
		} else {
			// And a health score of it, from every gRPC attempt of the
			// last second: a path slow at its 95th percentile, or failing
			// a share of its calls (not in a row), sends calls over HTTP
			// too, until the window has slid past the bad calls.
			r.grpcHealth = health.New(health.Settings{
				Name: "recommendations-grpc", LatencyTarget: 50 * time.Millisecond, LatencyLimit: 200 * time.Millisecond,
				MaxErrorRate: 0.3, Window: time.Second, Buckets: 10,
			})
			fs.Health = r.grpcHealth
		}
		r.overHTTP = grpcx.NewHTTPFallback(fs)
		chain = append(chain, r.overHTTP.Unary)
	}
	// The dependency is on this machine: a lost connection is tried again
	// within a quarter second, not after grpc-go's default backoff, which
	// grows past a minute, so that the breaker's probes find it back.
	reconnect := grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 250 * time.Millisecond},
		MinConnectTimeout: time.Second}
	r.conn, err = grpc.NewClient(addrs.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithConnectParams(reconnect),
		grpc.WithChainUnaryInterceptor(chain...))
	if err != nil {
		r.stop()
		return nil, err
	}
	r.client = recommendpb.NewRecommendationsClient(r.conn)
	return r, nil
}

// stickyHealth is the StickyHTTPFallback variant, broken on purpose: once
// the gRPC path's breaker has opened, it says unhealthy for good, so calls
// never come back to gRPC.
type stickyHealth struct {
	cb   *circuitbreaker.Breaker
	fell atomic.Bool
}

func (s *stickyHealth) Healthy() bool {
	if s.fell.Load() {
		return false
	}
	if s.cb.State() == circuitbreaker.Open {
		s.fell.Store(true)
		return false
	}
	return true
}

// leakyBulkhead is the LeakPermits variant, broken on purpose: a call that
// fails never gives its slot back, so each failure shrinks the capacity
// until no call gets through and every answer is the default list.
//
// With uncounted, the LieBulkhead variant, it turns a call away itself
// while every slot is taken, so that the bulkhead's count of rejections
// (which its metrics and the state endpoint report) leaves it out.
type leakyBulkhead struct {
	b         *bulkhead.Bulkhead
	uncounted bool
}

func (l leakyBulkhead) Allow(ctx context.Context) (breakerimpl.Permit, error) {
	if st := l.b.Snapshot(); l.uncounted && st.InFlight >= st.MaxConcurrent {
		return breakerimpl.Permit{}, bulkhead.ErrFull
	}
	p, err := l.b.Allow(ctx)
	if err != nil {
		return p, err
	}
	return breakerimpl.NewPermit(l, p.ID(), p.Start()), nil
}

func (l leakyBulkhead) Done(p breakerimpl.Permit, err error) {
	if err == nil {
		l.b.Done(p, nil)
	}
}

func (r *recommendations) close() {
	r.conn.Close()
	if r.overHTTP != nil {
		r.overHTTP.Close()
	}
	r.stop()
}

// upstreamCalls is the number of calls that reached the dependency, as the
// demo reports it on its metrics and state endpoint: all of them, or, with
// the LieCounters variant (broken on purpose), all but the retries.
func (r *recommendations) upstreamCalls() int64 {
	n := r.upstream.Calls()
	if !r.uncountedRetries {
		return n
	}
	n -= int64(r.retry.Snapshot().Retries)
	for {
		old := r.reported.Load()
		if n <= old {
			return old
		}
		if r.reported.CompareAndSwap(old, n) {
			return n
		}
	}
}

func (r *recommendations) retryState() RetryState {
	st := RetryState{Retry: r.retry.Snapshot()}
	if !r.unbounded {
		b := r.budget.Snapshot()
		st.Budget = &b
	}
	return st
}

func (s *Server) recommendations(w http.ResponseWriter, req *http.Request) {
	id, err := strconv.Atoi(req.PathValue("id"))
	if err != nil || id <= 0 {
		http.Error(w, "product id must be a positive integer", http.StatusBadRequest)
		return
	}
	rec := s.rec
	res, err := grpcx.Call(req.Context(), rec.client.Get, &recommendpb.GetRequest{ProductId: int64(id)})
	prompolicy.Observe(s.metrics.results, "recommendations", res, err)
	if s.cfg.Lie == LieSource && err == nil && res.Source == defaultSource {
		// Broken on purpose: the default list named an answer over HTTP.
		res.Source = grpcx.SourceHTTP
	}
	h := w.Header()
	h.Set(HeaderBreaker, rec.breaker.State().String())
	setSource(h, res, err, "upstream", false)
	if err != nil {
		http.Error(w, "recommendations unavailable", http.StatusServiceUnavailable)
		return
	}
	if res.Source != breakerimpl.SourcePrimary {
		s.log.Info("recommendations degraded", "id", id, "source", res.Source, "reason", res.Reason.String())
		if s.cfg.FallbackEmpty {
			return
		}
	}
	writeJSON(w, recommend.FromProto(res.Value))
}

// checkRecommendationsAddrs refuses gRPC addresses off loopback.
func (cfg Config) checkRecommendationsAddrs() error {
	if a := cfg.RecommendationsGRPCListen; a != "" {
		if err := checkLoopback("--recommendations-grpc-listen", a, "listens on"); err != nil {
			return err
		}
	}
	if a := cfg.RecommendationsGRPCDial; a != "" {
		if err := checkLoopback("--recommendations-grpc-dial", a, "dials"); err != nil {
			return err
		}
	}
	return nil
}
