package httpx

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/decision"
	"github.com/chaoskit/chaoskit/breakerimpl/hedge"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// The client side composes like the server side, one concern per
// RoundTripper, outermost first as in the package breakerimpl order:
//
//	client := &http.Client{Transport: httpx.WithTimeout(
//		httpx.WithRetry(
//			httpx.WithHedge(http.DefaultTransport, h),
//			r, httpx.RetryOptions{}),
//		t)}

// WithTimeout returns a RoundTripper that bounds each request with t: the
// round trip and the reading of the response body share one deadline.
// A request that fails after its deadline fails with an error matching
// timeout.ErrTimeout (and context.DeadlineExceeded).
func WithTimeout(base http.RoundTripper, t *timeout.Timeout) http.RoundTripper {
	return policyTransport(func(req *http.Request) (*http.Response, error) {
		ctx := t.Begin(req.Context())
		resp, err := transportOrDefault(base).RoundTrip(req.WithContext(ctx))
		if err != nil {
			err = t.End(ctx, err)
			if errors.Is(err, timeout.ErrTimeout) {
				decision.Record(req.Context(), decision.Decision{Kind: decision.Timeout, Reason: breakerimpl.ReasonTimeout})
			}
			return nil, err
		}
		resp.Body = &timeoutBody{ReadCloser: resp.Body, ctx: ctx, t: t}
		return resp, nil
	})
}

// timeoutBody ends its request's timeout when the body is closed (the
// deadline goes on bounding the reads until then), and reports a read that
// failed past the deadline as a timeout.
type timeoutBody struct {
	io.ReadCloser
	ctx  context.Context
	t    *timeout.Timeout
	once sync.Once
	err  error
}

func (b *timeoutBody) end(err error) error {
	b.once.Do(func() { b.err = b.t.End(b.ctx, err) })
	if err != nil {
		return b.err
	}
	return nil
}

func (b *timeoutBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = b.end(err)
	}
	return n, err
}

func (b *timeoutBody) Close() error {
	err := b.ReadCloser.Close()
	b.end(nil)
	return err
}

// RetryOptions says which requests WithRetry retries.
//
// Methods lists the methods retried. Nil means the idempotent ones of RFC
// 9110: GET, HEAD, OPTIONS, TRACE, PUT and DELETE. Whatever the method, a
// request with an Idempotency-Key or X-Idempotency-Key header is retried
// (as net/http's Transport does), and a request whose body cannot be sent
// again (a body with no GetBody) is not.
//
// RetryOn decides which responses are failures worth retrying. Nil means
// 429, 502, 503 and 504. A response's Retry-After header is respected.
type RetryOptions struct {
	Methods []string
	RetryOn func(resp *http.Response) bool
}

var retryMethods = []string{http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete}

func (o RetryOptions) retryable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	if req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != "" {
		return true
	}
	methods := o.Methods
	if methods == nil {
		methods = retryMethods
	}
	for _, m := range methods {
		if strings.EqualFold(m, req.Method) {
			return true
		}
	}
	return false
}

func (o RetryOptions) retryOn(resp *http.Response) bool {
	if o.RetryOn != nil {
		return o.RetryOn(resp)
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// WithRetry returns a RoundTripper that retries failed requests with r:
// transport errors, and responses RetryOptions.RetryOn calls failures
// (their Retry-After header is respected, their bodies drained and
// closed). When r gives up, the last response is returned as it is, or the
// last error. Only the requests RetryOptions allows are retried; the rest
// go through once.
//
// For a timeout per attempt, put WithTimeout inside WithRetry rather than
// setting retry.Settings.AttemptTimeout, which would end an attempt's
// context before its body is read.
func WithRetry(base http.RoundTripper, r *retry.Retry, opts RetryOptions) http.RoundTripper {
	return policyTransport(func(req *http.Request) (*http.Response, error) {
		if !opts.retryable(req) {
			return transportOrDefault(base).RoundTrip(req)
		}
		var failed *http.Response // the last failed response, kept in case it is the answer
		var lastErr error         // why the last attempt failed
		attempt := 0
		resp, err := retry.Execute(req.Context(), r, func(ctx context.Context) (*http.Response, error) {
			if failed != nil {
				discardResponse(failed)
				failed = nil
			}
			areq, err := rewindBody(req.WithContext(ctx), attempt)
			if attempt++; attempt > 1 {
				decision.Record(ctx, decision.Decision{Kind: decision.Retry, Reason: breakerimpl.ReasonOf(lastErr), Attempt: attempt})
			}
			if err != nil {
				return nil, retry.Permanent(err)
			}
			resp, err := transportOrDefault(base).RoundTrip(areq)
			if err != nil {
				lastErr = err
				return nil, err
			}
			if opts.retryOn(resp) {
				failed = resp
				lastErr = responseFailure(resp)
				return resp, lastErr
			}
			return resp, nil
		})
		if resp != nil {
			return resp, nil
		}
		return nil, err
	})
}

// WithHedge returns a RoundTripper that hedges idempotent requests with h
// (the methods of RetryOptions' default, or any with an Idempotency-Key):
// when a request has no response after the hedge's delay, a copy is sent,
// and the first response that is not a 5xx wins. The others are cancelled
// and their bodies closed before RoundTrip returns; the winner's body stays
// readable until closed. When every copy fails, the first failure is
// returned (a 5xx response as it is). Other requests go through once.
func WithHedge(base http.RoundTripper, h *hedge.Hedge) http.RoundTripper {
	return policyTransport(func(req *http.Request) (*http.Response, error) {
		if !(RetryOptions{}).retryable(req) {
			return transportOrDefault(base).RoundTrip(req)
		}
		parent := req.Context()
		type answer struct {
			resp   *http.Response
			cancel context.CancelFunc
		}
		answers := make([]answer, h.MaxAttempts())
		winner, err := h.Do(parent, func(hctx context.Context, i int) error {
			// Each copy runs with a context of its own, cancelled when the
			// hedge cancels the losers, but not when the winner is chosen:
			// the winner's body is read after RoundTrip returns.
			ctx, cancel := context.WithCancel(parent)
			stop := context.AfterFunc(hctx, cancel)
			areq, err := rewindBody(req.WithContext(ctx), i)
			if err != nil {
				stop()
				cancel()
				return err
			}
			resp, err := transportOrDefault(base).RoundTrip(areq)
			if !stop() { // cancelled: another copy won
				if resp != nil {
					discardResponse(resp)
				}
				cancel()
				if err == nil {
					err = context.Canceled
				}
				return err
			}
			if err != nil {
				cancel()
				return err
			}
			answers[i] = answer{resp, cancel}
			if resp.StatusCode >= 500 {
				return &hedgeCopyError{i, responseFailure(resp)}
			}
			return nil
		})
		keep := -1
		if err == nil {
			keep = winner
		} else if ie, ok := err.(*hedgeCopyError); ok {
			keep, err = ie.i, nil
		}
		for i, a := range answers {
			if a.resp != nil && i != keep {
				discardResponse(a.resp)
				a.cancel()
			}
		}
		if keep < 0 {
			return nil, err
		}
		a := answers[keep]
		a.resp.Body = &hedgeBody{ReadCloser: a.resp.Body, cancel: a.cancel}
		return a.resp, nil
	})
}

// hedgeCopyError is a failed copy's error with the copy it came from.
type hedgeCopyError struct {
	i   int
	err error
}

func (e *hedgeCopyError) Error() string { return e.err.Error() }
func (e *hedgeCopyError) Unwrap() error { return e.err }

// hedgeBody cancels its request's context when closed.
type hedgeBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *hedgeBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// rewindBody returns req ready for attempt n (from 0): the first sends the
// body as it is, later ones a fresh copy from GetBody.
func rewindBody(req *http.Request, n int) (*http.Request, error) {
	if n == 0 || req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	req.Body = body
	return req, nil
}

// discardResponse drains a little of a response body and closes it, so that its
// connection can be used again.
func discardResponse(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
}

// responseFailure is the error of a failed response, with its Retry-After.
func responseFailure(resp *http.Response) error {
	err := &retryableResponse{status: resp.Status}
	if v := resp.Header.Get("Retry-After"); v != "" {
		if secs, perr := strconv.Atoi(v); perr == nil && secs >= 0 {
			err.after = time.Duration(secs) * time.Second
		} else if at, perr := http.ParseTime(v); perr == nil {
			err.after = max(time.Until(at), 0)
		}
	}
	return err
}

// retryableResponse is a response RetryOptions.RetryOn or WithHedge called a
// failure. Its RetryAfter method is what retry.RetryAfter looks for.
type retryableResponse struct {
	status string
	after  time.Duration
}

func (e *retryableResponse) Error() string             { return "httpx: response " + e.status }
func (e *retryableResponse) RetryAfter() time.Duration { return e.after }

type policyTransport func(*http.Request) (*http.Response, error)

func (f policyTransport) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func transportOrDefault(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		return http.DefaultTransport
	}
	return rt
}
