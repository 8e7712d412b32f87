// Command chaoskit runs chaos scenarios against Go services and judges
// their degradation contracts. See README.md and docs/.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/runner"
	"github.com/chaoskit/chaoskit/scenarios"
)

// Exit codes; CI depends on them.
const (
	exitPass        = 0
	exitFail        = 1
	exitInvalid     = 2
	exitInfra       = 3
	exitInterrupted = 130
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks bad flags or arguments (exit 2).
func usageError(format string, args ...any) error {
	return &exitError{code: exitInvalid, err: fmt.Errorf(format, args...)}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "chaoskit",
		Short: "Chaos and fault-injection tests for Go services, judged by degradation contracts",
		Long: `chaoskit starts a Go service, drives load at it, switches failpoint faults
inside it phase by phase, and judges whether it degrades the way its
degradation contracts promise.

Exit codes: 0 every contract passed, 1 a contract failed or was inconclusive,
2 invalid input, 3 infrastructure error, 130 interrupted (after rollback).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: exitInvalid, err: fmt.Errorf("%v (see %s --help)", err, c.CommandPath())}
	})
	root.AddCommand(newRunCmd(), newReportCmd(), newValidateCmd(), newDemoCmd(), newVersionCmd(), newRollbackCmd(), newPointsCmd(), newBuildCmd(), newFuzzCmd(), newExploreCmd())
	return root
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot()
	err := root.ExecuteContext(ctx)
	stop()
	os.Exit(exitCode(err))
}

// exitCode prints err (if any) and maps it to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return exitPass
	}
	var ee *exitError
	code := exitFail
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case errors.Is(err, runner.ErrInterrupted):
		code = exitInterrupted
	case scenarios.IsInvalid(err):
		code = exitInvalid
	default:
		var ie *runner.InfraError
		if errors.As(err, &ie) {
			code = exitInfra
		} else if isArgError(err) {
			code = exitInvalid
		}
	}
	var list scenarios.ErrorList
	switch {
	case errors.As(err, &list):
		// Each problem with the offending line, as compilers print them.
		fmt.Fprintln(os.Stderr, list.Detail())
	case code != exitFail || ee == nil || ee.err != errContractsFailed:
		fmt.Fprintln(os.Stderr, "chaoskit:", err)
	}
	return code
}

// errContractsFailed is returned by run when a verdict is not pass; the
// table already said why.
var errContractsFailed = errors.New("contracts did not pass")

// isArgError recognises cobra's argument-count and unknown-command errors.
func isArgError(err error) bool {
	msg := err.Error()
	for _, s := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "unknown flag", "invalid argument"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
