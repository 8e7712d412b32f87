package inject

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/inject/dist"
)

// ErrInjected is the error every injected error wraps, so a service (and a
// test) can tell an injected failure from a real one.
var ErrInjected = errors.New("injected fault")

// StatusError is returned by Fire for a status fault: the caller should
// answer with Code.
type StatusError struct{ Code int }

func (e *StatusError) Error() string { return "injected status " + strconv.Itoa(e.Code) }

// Unwrap makes a StatusError match ErrInjected.
func (e *StatusError) Unwrap() error { return ErrInjected }

// GRPCStatusError is returned by Fire for a grpc fault: the caller should
// fail the call with the gRPC status Code (the number of a
// google.golang.org/grpc/codes.Code) and Message. inject does not import
// grpc: breakerimpl/grpcx.StatusOf (and its UnaryStatusInterceptor) turn
// any error with the GRPCCode and GRPCMessage methods into that status.
type GRPCStatusError struct {
	Code    uint32
	Message string
}

func (e *GRPCStatusError) Error() string {
	return "injected grpc status " + GRPCCodeName(e.Code) + ": " + e.Message
}

// Unwrap makes a GRPCStatusError match ErrInjected.
func (e *GRPCStatusError) Unwrap() error { return ErrInjected }

// GRPCCode returns Code, for grpcx.StatusOf.
func (e *GRPCStatusError) GRPCCode() uint32 { return e.Code }

// GRPCMessage returns Message, for grpcx.StatusOf.
func (e *GRPCStatusError) GRPCMessage() string { return e.Message }

type injectedError struct{ msg string }

func (e *injectedError) Error() string { return e.msg }
func (e *injectedError) Unwrap() error { return ErrInjected }

// Fire carries out the fault a failpoint marker received and counts the hit.
// A fault meant for some requests (Fault.Match) is carried out only when
// ctx carries such a request (see Middleware); for any other Fire returns
// nil and counts nothing.
// Call it first thing in a marker body:
//
//	failpoint.Inject("productQuery", func(v failpoint.Value) {
//		if err := inject.Fire(ctx, v); err != nil {
//			failpoint.Return(Product{}, err)
//		}
//	})
//
// A nil error means "go on normally" (a latency fault after its delay, or a
// term that carried no chaoskit value, such as sleep). Timeout waits for ctx
// to end and returns its error; a ctx without deadline or cancellation would
// wait for ever, so Fire then waits at most MaxTimeoutWait.
func Fire(ctx context.Context, v any) error {
	s, ok := v.(string)
	if !ok {
		countHit(callerPackage())
		if v == nil {
			return nil
		}
		return &injectedError{msg: fmt.Sprintf("injected fault (value %v)", v)}
	}
	point, body, found := strings.Cut(s, pointSep)
	if !found || strings.HasPrefix(point, prefixWhen) {
		point, body = "", s
	}
	match, body := cutWhen(body)
	if match != "" && !matches(ctx, match) {
		return nil
	}
	if point != "" {
		countHit(point)
	} else {
		countHit(callerPackage())
	}
	s = body
	switch {
	case s == valueTimeout:
		wait := time.NewTimer(MaxTimeoutWait)
		defer wait.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wait.C:
			return context.DeadlineExceeded
		}
	case strings.HasPrefix(s, prefixError):
		return &injectedError{msg: strings.TrimPrefix(s, prefixError)}
	case strings.HasPrefix(s, prefixDelay):
		dl, err := delayOf(strings.TrimPrefix(s, prefixDelay))
		if err != nil {
			return &injectedError{msg: "injected fault with bad latency " + s}
		}
		d := dl.dist.Sample()
		dl.applied.Record(d)
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		}
	case strings.HasPrefix(s, prefixPanic):
		panic(strings.TrimPrefix(s, prefixPanic))
	case strings.HasPrefix(s, prefixStatus):
		code, err := strconv.Atoi(strings.TrimPrefix(s, prefixStatus))
		if err != nil {
			return &injectedError{msg: "injected fault with bad status " + s}
		}
		return &StatusError{Code: code}
	case strings.HasPrefix(s, prefixGRPC):
		num, msg, _ := strings.Cut(strings.TrimPrefix(s, prefixGRPC), ":")
		code, err := strconv.ParseUint(num, 10, 32)
		if err != nil || code > maxGRPCCode {
			return &injectedError{msg: "injected fault with bad grpc status " + s}
		}
		return &GRPCStatusError{Code: uint32(code), Message: msg}
	default:
		return &injectedError{msg: s}
	}
}

// delay is a latency fault's distribution, parsed once, and the delays
// drawn from it.
type delay struct {
	dist    dist.Dist
	applied *dist.Recorder
}

// delays holds the delay of each latency value a marker received, so a
// value is parsed once and the delays drawn from it are counted together;
// see Delays. Its size is bounded by the faults a process is given.
var delays sync.Map // string -> *delay

func delayOf(value string) (*delay, error) {
	if d, ok := delays.Load(value); ok {
		return d.(*delay), nil
	}
	parsed, err := dist.Parse(value)
	if err != nil {
		return nil, err
	}
	d, _ := delays.LoadOrStore(value, &delay{dist: parsed, applied: new(dist.Recorder)})
	return d.(*delay), nil
}

// Delays returns the recorder of the delays Fire applied for a latency
// value (such as "lognormal/20ms/200ms", as Decode gives it in a Fault's
// Value), or nil when no marker received that value: the delays a fault
// really applied, whose quantiles can be checked against the distribution
// it was given.
func Delays(value string) *dist.Recorder {
	if d, ok := delays.Load(value); ok {
		return d.(*delay).applied
	}
	return nil
}

// MaxTimeoutWait bounds how long a timeout fault blocks a call whose context
// never ends.
var MaxTimeoutWait = 30 * time.Second

// hits counts marker hits per failpoint path (or, for a value that names no
// failpoint, per package import path); see Hits.
var hits sync.Map // string -> *atomic.Int64

func countHit(pkg string) {
	c, ok := hits.Load(pkg)
	if !ok {
		c, _ = hits.LoadOrStore(pkg, new(atomic.Int64))
	}
	c.(*atomic.Int64).Add(1)
}

// callerPackage returns the import path of the package whose marker body
// called Fire: Fire's caller is the rewritten marker, inlined in the
// function that holds it.
func callerPackage() string {
	pc, _, _, ok := runtime.Caller(2)
	if !ok {
		return "unknown"
	}
	return packageOf(runtime.FuncForPC(pc).Name())
}

// packageOf extracts the import path from a function's full name, such as
// "github.com/a/b/store.(*Store).Product.func1" -> "github.com/a/b/store".
func packageOf(fn string) string {
	slash := strings.LastIndex(fn, "/")
	dot := strings.Index(fn[slash+1:], ".")
	if dot < 0 {
		return fn
	}
	return fn[:slash+1+dot]
}
