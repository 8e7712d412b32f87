package httpx

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/decision"
)

// StatusError is the error a breaker is told of for a response whose
// status counts as a failure. The response itself still reaches the caller
// (or the client) unchanged.
type StatusError struct {
	Code int
}

// Error implements error.
func (e *StatusError) Error() string {
	return fmt.Sprintf("httpx: status %d %s", e.Code, http.StatusText(e.Code))
}

// ServerOptions configures Breaker. The zero value is usable.
//
// IsFailure decides whether a response status counts as a failure. Nil
// means status >= 500.
//
// Rejected writes the response to a request the breaker refused; err is
// ErrOpen, ErrHalfOpenFull or ErrThrottled. Nil means RejectResponse.
type ServerOptions struct {
	IsFailure func(status int) bool
	Rejected  func(w http.ResponseWriter, r *http.Request, cb *circuitbreaker.Breaker, err error)
}

// Breaker returns middleware that runs each request through cb. Wrap each
// route in its own breaker so that one failing route does not close the
// others. A panic in the handler counts as a failure and goes on up to the
// server.
func Breaker(cb *circuitbreaker.Breaker, o ServerOptions) func(http.Handler) http.Handler {
	isFailure := o.IsFailure
	if isFailure == nil {
		isFailure = func(status int) bool { return status >= 500 }
	}
	rejected := o.Rejected
	if rejected == nil {
		rejected = RejectResponse
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sw := &statusWriter{ResponseWriter: w}
			_, err := breakerimpl.Run(r.Context(), cb, func(context.Context) (struct{}, error) {
				next.ServeHTTP(sw, r)
				if status := sw.Status(); isFailure(status) {
					return struct{}{}, &StatusError{Code: status}
				}
				return struct{}{}, nil
			})
			var refused *StatusError
			if err != nil && !errors.As(err, &refused) {
				decision.RecordError(r.Context(), err, cb.Name())
				rejected(w, r, cb, err)
			}
		})
	}
}

// RejectResponse is the default answer to a refused request: 503 Service
// Unavailable, a Retry-After header (the rest of the open duration,
// rounded up to a whole second, or 1 s when that is not known, as when
// half-open or forced open), and a one-line text body naming the breaker
// and why.
func RejectResponse(w http.ResponseWriter, _ *http.Request, cb *circuitbreaker.Breaker, err error) {
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(RetryAfterSeconds(cb.RetryAfter())))
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintf(w, "service unavailable: circuit breaker %q refused the request (%s)\n", cb.Name(), breakerimpl.ReasonOf(err))
}

// RetryAfterSeconds rounds d up to whole seconds for a Retry-After header,
// with 1 for zero or less.
func RetryAfterSeconds(d time.Duration) int {
	if d <= 0 {
		return 1
	}
	return int(math.Ceil(d.Seconds()))
}

// statusWriter records the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Status returns the status written, 200 if the handler wrote nothing.
func (w *statusWriter) Status() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// Flush passes a flush on, for handlers that stream.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// BreakerTransport is an http.RoundTripper that runs each request through
// Breaker. Transport errors and timeouts count as failures (a request the
// caller cancelled is ignored, as breakerimpl.DefaultClassifier does), and
// so do responses IsFailure picks, by default any 5xx; such responses
// still reach the caller as they are. The call ends, for the breaker, when
// the response headers arrive: reading the body is not timed.
//
// While the breaker refuses calls, RoundTrip returns its error (ErrOpen,
// ErrHalfOpenFull or ErrThrottled) at once, without touching the network;
// with Fallback set, it serves Fallback's response instead, and also in
// place of a failed call.
type BreakerTransport struct {
	// Breaker guards the calls; required.
	Breaker *circuitbreaker.Breaker
	// Base makes the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
	// IsFailure decides whether a response counts as a failure; nil means
	// status >= 500.
	IsFailure func(*http.Response) bool
	// Fallback, if set, answers in place of a refused or failed call; err
	// is the breaker's refusal, the transport error or a *StatusError. It
	// may return an error to let the failure through.
	Fallback func(req *http.Request, err error) (*http.Response, error)
}

// RoundTrip implements http.RoundTripper.
func (t *BreakerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	var resp *http.Response
	_, err := circuitbreaker.Execute(req.Context(), t.Breaker, func(context.Context) (struct{}, error) {
		var err error
		resp, err = base.RoundTrip(req)
		switch {
		case err != nil:
			return struct{}{}, timeoutAsDeadline(err)
		case t.IsFailure != nil && t.IsFailure(resp), t.IsFailure == nil && resp.StatusCode >= 500:
			return struct{}{}, &StatusError{Code: resp.StatusCode}
		}
		return struct{}{}, nil
	})
	if err == nil {
		return resp, nil
	}
	ctx := req.Context()
	var status *StatusError
	if !errors.As(err, &status) {
		decision.RecordError(ctx, err, t.Breaker.Name())
	}
	if t.Fallback == nil {
		if errors.As(err, &status) {
			return resp, nil
		}
		return nil, err
	}
	fresp, ferr := t.Fallback(req, err)
	if ferr != nil {
		if errors.As(err, &status) {
			return resp, nil
		}
		return nil, errors.Join(err, ferr)
	}
	if resp != nil {
		resp.Body.Close()
	}
	decision.Record(ctx, decision.Decision{Kind: decision.Fallback, Reason: breakerimpl.ReasonOf(err), Source: "fallback", Name: t.Breaker.Name()})
	return fresp, nil
}

// timeoutAsDeadline makes a transport timeout (a net.Error whose Timeout
// is true, such as http.Client.Timeout or a dial timeout) match
// context.DeadlineExceeded, so that the breaker's classifier and
// breakerimpl.ReasonOf see a timeout.
func timeoutAsDeadline(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
	}
	return err
}
