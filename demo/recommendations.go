package demo

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/prompolicy"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
	"github.com/chaoskit/chaoskit/demo/recommend"
)

// bestsellers is the default list served when the recommendations service
// cannot answer: functional degradation, said so in X-Chaoskit-Source.
var bestsellers = []int{1, 2, 3, 4}

// recommendations is the client side of the demo's downstream dependency.
type recommendations struct {
	upstream *recommend.Upstream
	stop     func()
	client   *recommend.Client
	breaker  *circuitbreaker.Breaker
	bulkhead *bulkhead.Bulkhead
	timeout  *timeout.Timeout
	retry    *retry.Retry
	budget   *retry.Budget
	pipe     breakerimpl.Pipeline[int, recommend.List]
	// unbounded is set for the broken variant without a budget.
	unbounded bool
}

// newRecommendations starts the upstream on its own loopback port and
// builds the client: timeout, retry with a budget, bulkhead and breaker,
// with the bestsellers as the fallback.
func newRecommendations(ctx context.Context, cfg Config) (*recommendations, error) {
	r := &recommendations{upstream: recommend.NewUpstream(cfg.Products)}
	base, stop, err := recommend.Start(ctx, r.upstream)
	if err != nil {
		return nil, err
	}
	r.stop = stop
	r.client = &recommend.Client{Base: base, HTTP: &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
	}}}
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
	rs := retry.Settings{Name: "recommendations", MaxAttempts: 3, Backoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Budget: r.budget, Retryable: retryable}
	if cfg.UnboundedRetries {
		rs.Budget, rs.MaxAttempts = nil, 5 // broken on purpose: a retry storm
		r.unbounded = true
	}
	r.retry = retry.New(rs)
	r.pipe = breakerimpl.Pipeline[int, recommend.List]{
		Breaker: r.breaker,
		Timeout: r.timeout,
		Retry:   r.retry,
	}
	if !cfg.NoFallback {
		r.pipe.Fallback = fallback.Func[int, recommend.List]{Name: "default", Fn: func(_ context.Context, id int, _ error) (recommend.List, error) {
			return recommend.List{ProductID: id, Items: bestsellers}, nil
		}}
	}
	switch {
	case cfg.NoBulkhead:
	case cfg.LeakPermits:
		r.pipe.Bulkhead = leakyBulkhead{r.bulkhead}
	default:
		r.pipe.Bulkhead = r.bulkhead
	}
	return r, nil
}

// leakyBulkhead is the LeakPermits variant, broken on purpose: a call that
// fails never gives its slot back, so each failure shrinks the capacity
// until no call gets through and every answer is the default list.
type leakyBulkhead struct{ b *bulkhead.Bulkhead }

func (l leakyBulkhead) Allow(ctx context.Context) (breakerimpl.Permit, error) {
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

// retryable retries transport errors, timeouts and 5xx answers, never 4xx.
func retryable(err error) bool {
	var se *recommend.StatusError
	if errors.As(err, &se) {
		if se.Code < 500 {
			return false
		}
		if se.RetryAfter > 0 {
			return true
		}
	}
	return retry.DefaultRetryable(err)
}

func (r *recommendations) close() { r.stop() }

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
	res, err := rec.pipe.Execute(req.Context(), id, func(ctx context.Context) (recommend.List, error) {
		l, err := rec.client.Get(ctx, id)
		var se *recommend.StatusError
		if errors.As(err, &se) && se.RetryAfter > 0 {
			err = retry.After(err, se.RetryAfter)
		}
		return l, err
	})
	prompolicy.Observe(s.metrics.results, "recommendations", res, err)
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
	writeJSON(w, res.Value)
}
