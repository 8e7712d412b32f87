package grpcx

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
)

// Class is what a gRPC status code means to the policies of a client: the
// breaker, the retry, the fallback.
type Class uint8

const (
	// Failure: the dependency failed. The breaker counts a failure, the
	// retry tries again if the code's Rule says so, the fallback serves.
	Failure Class = iota
	// Refusal: the server turned the call away to protect itself (a rate
	// limit, a quota, shedding). The breaker counts a failure, as it does
	// for an overloaded dependency; the retry tries again only when the
	// server said when (a retry hint in its trailers), and not before; the
	// fallback serves with Reason "rejected".
	Refusal
	// CallerFault: the call was wrong, the dependency worked (it answered
	// not found, invalid argument, permission denied, …). The breaker
	// counts a success, nothing is retried, the fallback does not serve:
	// the caller gets the error as it is.
	CallerFault
	// Ignored: the answer says nothing about the dependency (the caller
	// cancelled). Counted nowhere, never retried, no fallback.
	Ignored
)

var classNames = [...]string{"failure", "refusal", "caller-fault", "ignored"}

// String returns "failure", "refusal", "caller-fault" or "ignored".
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", uint8(c))
}

// Rule is what a client's policies do with one status code.
type Rule struct {
	Class Class
	// Retry says whether the code is worth another attempt (when a Retry
	// policy is set). A Refusal is retried only after a retry hint.
	Retry bool
}

// Codes maps status codes to the Rule a client applies to them. In
// ClientOptions it overrides DefaultCodes for the codes it names.
type Codes map[codes.Code]Rule

// DefaultCodes is the table a client uses for the codes ClientOptions.Codes
// does not name. A code outside it (above 16) is a Failure, not retried.
//
//	code                 class         retried
//	CANCELED             ignored       no     the caller gave up
//	UNKNOWN              failure       no
//	INVALID_ARGUMENT     caller-fault  no
//	DEADLINE_EXCEEDED    failure       yes    within the call's own deadline
//	NOT_FOUND            caller-fault  no
//	ALREADY_EXISTS       caller-fault  no
//	PERMISSION_DENIED    caller-fault  no
//	RESOURCE_EXHAUSTED   refusal       yes    only after the server's retry hint
//	FAILED_PRECONDITION  caller-fault  no
//	ABORTED              caller-fault  no     a conflict: retry the read-modify-write, not the call
//	OUT_OF_RANGE         caller-fault  no
//	UNIMPLEMENTED        failure       no
//	INTERNAL             failure       no     a bug may repeat; set Retry for a flaky server
//	UNAVAILABLE          failure       yes    the transient failure of gRPC's guide
//	DATA_LOSS            failure       no
//	UNAUTHENTICATED      caller-fault  no
//
// The retried codes follow gRPC's retry design (gRFC A6), which retries
// UNAVAILABLE by default and asks servers to say when to come back.
func DefaultCodes() Codes {
	return Codes{
		codes.Canceled:           {Class: Ignored},
		codes.Unknown:            {Class: Failure},
		codes.InvalidArgument:    {Class: CallerFault},
		codes.DeadlineExceeded:   {Class: Failure, Retry: true},
		codes.NotFound:           {Class: CallerFault},
		codes.AlreadyExists:      {Class: CallerFault},
		codes.PermissionDenied:   {Class: CallerFault},
		codes.ResourceExhausted:  {Class: Refusal, Retry: true},
		codes.FailedPrecondition: {Class: CallerFault},
		codes.Aborted:            {Class: CallerFault},
		codes.OutOfRange:         {Class: CallerFault},
		codes.Unimplemented:      {Class: Failure},
		codes.Internal:           {Class: Failure},
		codes.Unavailable:        {Class: Failure, Retry: true},
		codes.DataLoss:           {Class: Failure},
		codes.Unauthenticated:    {Class: CallerFault},
	}
}

// numCodes is how many codes gRPC defines (OK to UNAUTHENTICATED).
const numCodes = 17

// table is Codes as an array, for a lookup without hashing.
type table [numCodes]Rule

// newTable returns DefaultCodes with overrides applied.
func newTable(overrides Codes) *table {
	t := new(table)
	for c, r := range DefaultCodes() {
		t[c] = r
	}
	for c, r := range overrides {
		if c < numCodes {
			t[c] = r
		}
	}
	return t
}

func (t *table) rule(c codes.Code) Rule {
	if c < numCodes {
		return t[c]
	}
	return Rule{Class: Failure}
}

// The metadata keys of a retry hint. A server that refuses a call puts both
// in its trailers; a client reads the first it finds.
const (
	// PushbackKey is gRPC's own hint (gRFC A6): the milliseconds to wait
	// before a retry, or a negative number for "do not retry".
	PushbackKey = "grpc-retry-pushback-ms"
	// RetryAfterKey is HTTP's Retry-After as metadata: whole seconds.
	RetryAfterKey = "retry-after"
)

// hint reads a retry hint from trailers: the wait, and whether there was
// one. A pushback that is negative or does not parse means "do not retry"
// (gRFC A6), reported as a wait below zero.
func hint(md metadata.MD) (time.Duration, bool) {
	if v := md.Get(PushbackKey); len(v) > 0 {
		ms, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil || ms < 0 {
			return -1, true
		}
		return time.Duration(ms) * time.Millisecond, true
	}
	if v := md.Get(RetryAfterKey); len(v) > 0 {
		if s, err := strconv.ParseInt(v[0], 10, 64); err == nil && s >= 0 {
			return time.Duration(s) * time.Second, true
		}
	}
	return 0, false
}

// hintTrailer is the trailer of a refusal that asks for a wait of d.
func hintTrailer(d time.Duration) metadata.MD {
	return metadata.Pairs(
		PushbackKey, strconv.FormatInt(max(d, 0).Milliseconds(), 10),
		RetryAfterKey, strconv.FormatInt(int64((max(d, time.Second)+time.Second-1)/time.Second), 10),
	)
}

// callError is a failed call's status as the policies see it: it matches
// context.Canceled when its class is Ignored (breakerimpl's default
// classifier ignores that error, and no retry retries it) and
// context.DeadlineExceeded for DEADLINE_EXCEEDED (so that a breaker and
// breakerimpl.ReasonOf see a timeout), and carries the server's retry
// hint for retry.RetryAfter.
type callError struct {
	err   error // the status error as the server (or the HTTP path) gave it
	code  codes.Code
	class Class
	after time.Duration
}

func (e *callError) Error() string { return e.err.Error() }
func (e *callError) Unwrap() error { return e.err }

// RetryAfter is the server's retry hint, zero if none; retry.RetryAfter
// finds it.
func (e *callError) RetryAfter() time.Duration { return e.after }

func (e *callError) Is(target error) bool {
	switch target {
	case context.Canceled:
		return e.class == Ignored
	case context.DeadlineExceeded:
		return e.code == codes.DeadlineExceeded
	}
	return false
}

// judge turns the error of one attempt into what the policies are told
// (nil for a caller's fault: the dependency worked) and the class. trailer
// holds the attempt's trailers, for the retry hint.
func (t *table) judge(err error, trailer metadata.MD) (policyErr error, class Class) {
	st, ok := status.FromError(err)
	if !ok {
		// Not a status: an error of an interceptor further in. A breaker
		// refusal or a timeout keeps its meaning; anything else fails.
		return err, Failure
	}
	rule := t.rule(st.Code())
	if rule.Class == CallerFault {
		return nil, CallerFault
	}
	ce := &callError{err: err, code: st.Code(), class: rule.Class}
	wait, hinted := hint(trailer)
	if hinted && wait >= 0 {
		ce.after = wait
	}
	retryable := rule.Retry && !(hinted && wait < 0) && (rule.Class != Refusal || hinted)
	if !retryable {
		return retry.Permanent(ce), rule.Class
	}
	return ce, rule.Class
}

// reasonOf is breakerimpl.ReasonOf, with a server's refusal reported as
// ReasonRejected.
func reasonOf(err error, class Class) breakerimpl.Reason {
	if class == Refusal {
		return breakerimpl.ReasonRejected
	}
	return breakerimpl.ReasonOf(err)
}

// StatusOf returns the gRPC status that err stands for, so that a server
// answers a policy's refusal, or an error that carries a code, with the
// right code:
//
//   - a status error (or an error wrapping one): its status;
//   - an error carrying a code without importing grpc, such as inject's
//     faults: a method GRPCCode() uint32, and GRPCMessage() string for the
//     message (else Error()), found with errors.As;
//   - breakerimpl.ErrOpen and ErrHalfOpenFull: UNAVAILABLE (the circuit is
//     open; come back later);
//   - breakerimpl.ErrRejected (a bulkhead, limiter or throttle): RESOURCE_EXHAUSTED;
//   - context.DeadlineExceeded, a timeout: DEADLINE_EXCEEDED;
//   - context.Canceled: CANCELED;
//   - anything else: UNKNOWN, as grpc-go answers a plain error.
//
// A nil err is OK.
func StatusOf(err error) *status.Status {
	if err == nil {
		return status.New(codes.OK, "")
	}
	var ce *callError
	if errors.As(err, &ce) {
		return status.Convert(ce.err)
	}
	if st, ok := status.FromError(err); ok {
		return st
	}
	var coded interface{ GRPCCode() uint32 }
	if errors.As(err, &coded) {
		msg := err.Error()
		if m, ok := coded.(interface{ GRPCMessage() string }); ok {
			msg = m.GRPCMessage()
		}
		return status.New(codes.Code(coded.GRPCCode()), msg)
	}
	switch {
	case errors.Is(err, breakerimpl.ErrOpen), errors.Is(err, breakerimpl.ErrHalfOpenFull):
		return status.New(codes.Unavailable, err.Error())
	case errors.Is(err, breakerimpl.ErrRejected):
		return status.New(codes.ResourceExhausted, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.New(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.New(codes.Canceled, err.Error())
	}
	return status.New(codes.Unknown, err.Error())
}

// statusError is StatusOf(err) as an error, nil for nil.
func statusError(err error) error {
	if err == nil {
		return nil
	}
	var ce *callError
	if errors.As(err, &ce) {
		return ce.err // the server's own error, details and all
	}
	if _, ok := err.(interface{ GRPCStatus() *status.Status }); ok {
		return err
	}
	return StatusOf(err).Err()
}

// HTTPStatus is the HTTP status the HTTP path answers a code with: the
// mapping of google.rpc.Code (the table in docs/grpc.md). The answer's body
// holds the google.rpc.Status itself, so the code survives the trip
// exactly even where two codes share a status.
//
//	OK 200  CANCELED 499  UNKNOWN 500  INVALID_ARGUMENT 400
//	DEADLINE_EXCEEDED 504  NOT_FOUND 404  ALREADY_EXISTS 409
//	PERMISSION_DENIED 403  RESOURCE_EXHAUSTED 429  FAILED_PRECONDITION 400
//	ABORTED 409  OUT_OF_RANGE 400  UNIMPLEMENTED 501  INTERNAL 500
//	UNAVAILABLE 503  DATA_LOSS 500  UNAUTHENTICATED 401
func HTTPStatus(c codes.Code) int {
	switch c {
	case codes.OK:
		return http.StatusOK
	case codes.Canceled:
		return 499 // nginx's "client closed request", google.rpc's choice
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return http.StatusBadRequest
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.NotFound:
		return http.StatusNotFound
	case codes.AlreadyExists, codes.Aborted:
		return http.StatusConflict
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError // UNKNOWN, INTERNAL, DATA_LOSS, and codes above 16
}

// CodeOfHTTP is the code of an HTTP answer that carries no google.rpc.Status
// body (a proxy's or a load balancer's page), as gRPC maps HTTP statuses
// (doc/http-grpc-status-mapping.md of grpc/grpc), with a 2xx that is not
// 200 and a 499 added:
//
//	200 OK  400 INTERNAL  401 UNAUTHENTICATED  403 PERMISSION_DENIED
//	404 UNIMPLEMENTED  429 UNAVAILABLE  499 CANCELED
//	502 UNAVAILABLE  503 UNAVAILABLE  504 UNAVAILABLE  any other UNKNOWN
func CodeOfHTTP(status int) codes.Code {
	switch status {
	case http.StatusOK:
		return codes.OK
	case http.StatusBadRequest:
		return codes.Internal
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound:
		return codes.Unimplemented
	case 499:
		return codes.Canceled
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return codes.Unavailable
	}
	return codes.Unknown
}
