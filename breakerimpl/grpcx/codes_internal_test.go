package grpcx

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
)

// TestJudge checks what the default policies make of each code, as the
// interceptor hands it to them: the breaker's outcome under
// breakerimpl.DefaultClassifier, the retry's decision under
// retry.DefaultRetryable, the wait, and the Reason a fallback reports.
func TestJudge(t *testing.T) {
	pushback := func(v string) metadata.MD { return metadata.Pairs(PushbackKey, v) }
	for _, tc := range []struct {
		code    codes.Code
		trailer metadata.MD
		outcome breakerimpl.Outcome
		retried bool
		wait    time.Duration
		reason  breakerimpl.Reason
	}{
		{codes.Canceled, nil, breakerimpl.Ignored, false, 0, breakerimpl.ReasonError},
		{codes.Unknown, nil, breakerimpl.Failure, false, 0, breakerimpl.ReasonError},
		{codes.InvalidArgument, nil, breakerimpl.Success, false, 0, breakerimpl.ReasonNone},
		{codes.DeadlineExceeded, nil, breakerimpl.Failure, true, 0, breakerimpl.ReasonTimeout},
		{codes.NotFound, nil, breakerimpl.Success, false, 0, breakerimpl.ReasonNone},
		{codes.AlreadyExists, nil, breakerimpl.Success, false, 0, breakerimpl.ReasonNone},
		{codes.PermissionDenied, nil, breakerimpl.Success, false, 0, breakerimpl.ReasonNone},
		{codes.ResourceExhausted, nil, breakerimpl.Failure, false, 0, breakerimpl.ReasonRejected},
		{codes.ResourceExhausted, pushback("1500"), breakerimpl.Failure, true, 1500 * time.Millisecond, breakerimpl.ReasonRejected},
		{codes.ResourceExhausted, metadata.Pairs(RetryAfterKey, "3"), breakerimpl.Failure, true, 3 * time.Second, breakerimpl.ReasonRejected},
		{codes.FailedPrecondition, nil, breakerimpl.Success, false, 0, breakerimpl.ReasonNone},
		{codes.Aborted, nil, breakerimpl.Success, false, 0, breakerimpl.ReasonNone},
		{codes.OutOfRange, nil, breakerimpl.Success, false, 0, breakerimpl.ReasonNone},
		{codes.Unimplemented, nil, breakerimpl.Failure, false, 0, breakerimpl.ReasonError},
		{codes.Internal, nil, breakerimpl.Failure, false, 0, breakerimpl.ReasonError},
		{codes.Unavailable, nil, breakerimpl.Failure, true, 0, breakerimpl.ReasonError},
		{codes.Unavailable, pushback("250"), breakerimpl.Failure, true, 250 * time.Millisecond, breakerimpl.ReasonError},
		{codes.Unavailable, pushback("-1"), breakerimpl.Failure, false, 0, breakerimpl.ReasonError}, // gRFC A6: do not retry
		{codes.Unavailable, pushback("soon"), breakerimpl.Failure, false, 0, breakerimpl.ReasonError},
		{codes.DataLoss, nil, breakerimpl.Failure, false, 0, breakerimpl.ReasonError},
		{codes.Unauthenticated, nil, breakerimpl.Success, false, 0, breakerimpl.ReasonNone},
		{codes.Code(42), nil, breakerimpl.Failure, false, 0, breakerimpl.ReasonError},
	} {
		t.Run(tc.code.String(), func(t *testing.T) {
			perr, class := newTable(nil).judge(status.Error(tc.code, "x"), tc.trailer)
			outcome := breakerimpl.Success
			if perr != nil {
				outcome = breakerimpl.DefaultClassifier(perr)
			}
			retried := perr != nil && retry.DefaultRetryable(perr)
			wait, _ := retry.RetryAfter(perr)
			reason := breakerimpl.ReasonNone
			if perr != nil {
				reason = reasonOf(perr, class)
			}
			if outcome != tc.outcome || retried != tc.retried || wait != tc.wait || reason != tc.reason {
				t.Fatalf("outcome %v, retried %v, wait %v, reason %v; want %v, %v, %v, %v", outcome, retried, wait, reason, tc.outcome, tc.retried, tc.wait, tc.reason)
			}
			if perr != nil && status.Code(statusError(perr)) != tc.code {
				t.Fatalf("the caller would get %v, want the server's %v", statusError(perr), tc.code)
			}
		})
	}
}

func TestCodesOverride(t *testing.T) {
	tb := newTable(Codes{codes.Internal: {Class: Failure, Retry: true}, codes.NotFound: {Class: Ignored}})
	perr, _ := tb.judge(status.Error(codes.Internal, "flaky"), nil)
	if !retry.DefaultRetryable(perr) {
		t.Fatal("INTERNAL overridden as retried is not retried")
	}
	perr, _ = tb.judge(status.Error(codes.NotFound, "gone"), nil)
	if breakerimpl.DefaultClassifier(perr) != breakerimpl.Ignored {
		t.Fatal("NOT_FOUND overridden as ignored is counted")
	}
	if perr, _ = tb.judge(status.Error(codes.Unavailable, "down"), nil); !retry.DefaultRetryable(perr) {
		t.Fatal("a code the override does not name lost its default")
	}
}

// coded is an error carrying a code without importing grpc, as inject's
// faults do.
type coded struct{}

func (coded) Error() string       { return "injected grpc status UNAVAILABLE: down" }
func (coded) GRPCCode() uint32    { return 14 }
func (coded) GRPCMessage() string { return "down" }

func TestStatusOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		code codes.Code
		msg  string
	}{
		{"nil", nil, codes.OK, ""},
		{"status", status.Error(codes.NotFound, "no such item"), codes.NotFound, "no such item"},
		{"coded", coded{}, codes.Unavailable, "down"},
		{"wrapped coded", errors.Join(errors.New("recommend"), coded{}), codes.Unavailable, "down"},
		{"breaker open", breakerimpl.ErrOpen, codes.Unavailable, breakerimpl.ErrOpen.Error()},
		{"half-open full", breakerimpl.ErrHalfOpenFull, codes.Unavailable, breakerimpl.ErrHalfOpenFull.Error()},
		{"rejected", breakerimpl.ErrRejected, codes.ResourceExhausted, breakerimpl.ErrRejected.Error()},
		{"timeout", context.DeadlineExceeded, codes.DeadlineExceeded, context.DeadlineExceeded.Error()},
		{"cancelled", context.Canceled, codes.Canceled, context.Canceled.Error()},
		{"plain", errors.New("boom"), codes.Unknown, "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := StatusOf(tc.err)
			if st.Code() != tc.code || st.Message() != tc.msg {
				t.Fatalf("StatusOf = %v %q, want %v %q", st.Code(), st.Message(), tc.code, tc.msg)
			}
		})
	}
}

func TestTimeoutHeader(t *testing.T) {
	for _, d := range []time.Duration{time.Nanosecond, 250 * time.Millisecond, 3 * time.Second, 2 * time.Hour, 1500 * time.Microsecond} {
		got, ok := decodeTimeout(encodeTimeout(d))
		if !ok || got < d || got > d+d/100+time.Microsecond {
			t.Errorf("%v → %q → %v, %v", d, encodeTimeout(d), got, ok)
		}
	}
	for _, bad := range []string{"", "5", "5x", "-1m", "123456789m"} {
		if _, ok := decodeTimeout(bad); ok {
			t.Errorf("decodeTimeout(%q) accepted", bad)
		}
	}
}
