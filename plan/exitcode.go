package plan

import "github.com/chaoskit/chaoskit/internal/exitcode"

// ExitCode is exitcode.Invalid: a scenario with a problem is invalid input.
func (e *Error) ExitCode() int { return exitcode.Invalid }

// ExitCode is exitcode.Invalid.
func (l ErrorList) ExitCode() int { return exitcode.Invalid }
