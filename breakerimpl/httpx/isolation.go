package httpx

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/decision"
	"github.com/chaoskit/chaoskit/breakerimpl/shed"
)

// IsolationOptions says how Isolate answers a refused request and what it
// tells the guard about the others.
//
// Status is the status of a refusal. Zero means 503 Service Unavailable.
//
// RetryAfter is the Retry-After of a refusal, rounded up to whole seconds.
// Zero means what the guard's RetryAfter() time.Duration method says, if it
// has one (the ratelimit limiters do), or else one second.
//
// Failed decides from a response's status whether the guard is told the
// request failed. Nil means 500 and above.
type IsolationOptions struct {
	Status     int
	RetryAfter time.Duration
	Failed     func(status int) bool

	ignoreStatus bool // the guard does not care how requests end
}

// errIsolatedFailure is what the guard is told of a request answered with a
// status IsolationOptions.Failed calls a failure.
var errIsolatedFailure = errors.New("httpx: handler answered with a failure status")

// Isolate returns middleware that asks g before each request: a refused
// request is answered at once with opts.Status and a Retry-After header and
// never reaches next; an admitted one is served by next, and g is told how
// it ended (a panic in next is reported as a failure and goes on).
func Isolate(g breakerimpl.Guard, opts IsolationOptions) func(http.Handler) http.Handler {
	if opts.Status == 0 {
		opts.Status = http.StatusServiceUnavailable
	}
	if opts.Failed == nil {
		opts.Failed = func(status int) bool { return status >= 500 }
	}
	retryAfter := func() string {
		d := opts.RetryAfter
		if d <= 0 {
			if ra, ok := g.(interface{ RetryAfter() time.Duration }); ok {
				d = ra.RetryAfter()
			}
		}
		return strconv.FormatInt(int64(max((d+time.Second-1)/time.Second, 1)), 10)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			permit, err := g.Allow(r.Context())
			if err != nil {
				decision.RecordError(r.Context(), err, "")
				w.Header().Set("Retry-After", retryAfter())
				http.Error(w, http.StatusText(opts.Status), opts.Status)
				return
			}
			finished := false
			defer func() {
				if !finished {
					v := recover()
					permit.Done(breakerimpl.NewPanicError(v))
					panic(v)
				}
			}()
			if opts.ignoreStatus {
				next.ServeHTTP(w, r)
				finished = true
				permit.Done(nil)
				return
			}
			sw := &isolatedWriter{ResponseWriter: w, status: http.StatusOK}
			next.ServeHTTP(sw, r)
			finished = true
			if opts.Failed(sw.status) {
				permit.Done(errIsolatedFailure)
				return
			}
			permit.Done(nil)
		})
	}
}

// Bulkhead returns middleware that caps the requests next serves at once
// with b: a request b refuses gets 503 with Retry-After: 1.
func Bulkhead(b *bulkhead.Bulkhead) func(http.Handler) http.Handler {
	return Isolate(b, IsolationOptions{ignoreStatus: true})
}

// RateLimit returns middleware that limits the requests next serves with
// g, usually a ratelimit limiter: a request g refuses gets 429 Too Many
// Requests with the Retry-After the limiter computes.
func RateLimit(g breakerimpl.Guard) func(http.Handler) http.Handler {
	return Isolate(g, IsolationOptions{Status: http.StatusTooManyRequests, ignoreStatus: true})
}

// Shed returns middleware that drops requests with s while the service is
// overloaded: a dropped request gets 503 with Retry-After: 1. Responses
// with status 500 and above count as failures, as in go-zero (they give s
// no latency figure).
func Shed(s *shed.Shedder) func(http.Handler) http.Handler {
	return Isolate(s, IsolationOptions{})
}

// isolatedWriter remembers the status a handler answered with.
type isolatedWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (w *isolatedWriter) WriteHeader(code int) {
	if !w.wroteHeader && code >= 200 {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *isolatedWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true
	return w.ResponseWriter.Write(b)
}

// Flush passes a flush on, for streaming handlers.
func (w *isolatedWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		w.wroteHeader = true
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the ResponseWriter underneath.
func (w *isolatedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
