// Package exitcode holds chaoskit's exit codes and lets an error carry its
// own, as k6's errext.HasExitCode does: the code is decided where the error
// is made, not by matching message text at the top.
package exitcode

import (
	"context"
	"errors"
	"fmt"
)

// The exit codes; CI depends on them (README, docs/scenarios.md).
const (
	// Pass: every contract passed.
	Pass = 0
	// Fail: a contract failed or was inconclusive.
	Fail = 1
	// Invalid: invalid input (a scenario, a flag).
	Invalid = 2
	// Infra: the harness or the target failed (the service did not start,
	// the control endpoint is unreachable, a report could not be written).
	Infra = 3
	// Interrupted: the run was interrupted, after rollback.
	Interrupted = 130
)

// Coder is an error that knows its exit code.
type Coder interface {
	error
	ExitCode() int
}

// Error is an error with an exit code.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }
func (e *Error) ExitCode() int { return e.Code }

// New returns an error with code and a formatted message.
func New(code int, format string, args ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// Wrap gives err the exit code; a nil err stays nil.
func Wrap(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Of returns the exit code err carries: the outermost Coder in its chain,
// Interrupted for a cancelled context, Infra for any other error (an
// error without a code of its own means chaoskit failed, never that a
// contract did), Pass for nil.
func Of(err error) int {
	if err == nil {
		return Pass
	}
	var c Coder
	if errors.As(err, &c) {
		return c.ExitCode()
	}
	if errors.Is(err, context.Canceled) {
		return Interrupted
	}
	return Infra
}
