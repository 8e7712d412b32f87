// Command chaoskit runs chaos scenarios against Go services and judges
// their degradation contracts. See README.md and docs/.
//
// The commands only parse flags and print: what they do is package
// harness's (runs, re-judging, fuzz campaigns), and every error carries its
// exit code (internal/exitcode).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/runner"
	// The PostgreSQL and Redis clients of the dependencies a run starts
	// itself (postgres:, setup steps): the CLI runs any scenario.
	_ "github.com/chaoskit/chaoskit/runner/depclients/pgredis"
)

// usageError marks bad flags or arguments (exit 2).
func usageError(format string, args ...any) error {
	return exitcode.New(exitcode.Invalid, format, args...)
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "chaoskit",
		Short: "Chaos and fault-injection tests for Go services, judged by degradation contracts",
		Long: `chaoskit starts a Go service, drives load at it, switches failpoint faults
inside it phase by phase, and judges whether it degrades the way its
degradation contracts promise.

Exit codes: 0 every contract passed, 1 a contract failed or was inconclusive,
2 invalid input, 3 infrastructure error, 130 interrupted (after rollback).

-o/--output names the format of what a command prints (text or json) in
every command; a file to write is a flag of its own (--output-file).

` + envHelp,
		Version:       readBuildInfo().Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("chaoskit {{.Version}}\n")
	root.PersistentFlags().BoolVar(&noColor, "no-color", false, "never colour the output (as NO_COLOR does)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError("%v%s (see %s --help)", err, flagHint(c, err), c.CommandPath())
	})
	root.AddCommand(newRunCmd(), newReportCmd(), newValidateCmd(), newDemoCmd(), newVersionCmd(), newRollbackCmd(), newPointsCmd(), newBuildCmd(), newFuzzCmd(), newExploreCmd(), newExportCmd(), newInitCmd(), newDiffCmd(), newSchemaCmd())
	return root
}

func main() {
	brokenPipe()
	ctx, stop := interruptible(context.Background(), os.Stderr, func(code int) { os.Exit(code) })
	root := newRoot()
	stdout, stderr := outputs()
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := execute(ctx, root)
	stop()
	os.Exit(report(stderr, err))
}

// interruptible returns a context that the first SIGINT or SIGTERM
// cancels: the run stops, rolls its faults back (for at most a few seconds
// when the control endpoint hangs) and exits 130. A second signal does not
// wait: it says which faults may still be on, with the command that
// switches them off, and exits 130 at once through exit. stop releases the
// signals.
func interruptible(parent context.Context, w io.Writer, exit func(int)) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel(fmt.Errorf("%v received", s))
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			fmt.Fprintf(w, "chaoskit: %v received again: exiting now, without waiting for rollback\n", s)
			for _, u := range runner.UnfinishedRuns() {
				fmt.Fprintf(w, "chaoskit: faults may still be on at %s: %s; switch them off with: chaoskit rollback %s\n", u.Control, strings.Join(u.Points, ", "), u.Dir)
			}
			exit(exitcode.Interrupted)
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
			cancel(nil)
		})
	}
}

// execute runs the command line. An error cobra returns before any
// command ran (an unknown command, a wrong number of arguments) is a
// usage error: cobra validates arguments before the pre-run hooks. Flags
// the command line left unset are read from the environment first.
func execute(ctx context.Context, root *cobra.Command) error {
	ran := false
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		ran = true
		noteOldSpellings(cmd, cmd.ErrOrStderr())
		return applyEnv(cmd, os.LookupEnv)
	}
	err := root.ExecuteContext(ctx)
	if err != nil && !ran {
		var c exitcode.Coder
		if !errors.As(err, &c) {
			err = exitcode.Wrap(exitcode.Invalid, err)
		}
	}
	return err
}

// report prints err (if any) on w and returns the process exit code it
// carries.
func report(w io.Writer, err error) int {
	code := exitcode.Of(err)
	var list plan.ErrorList
	switch {
	case err == nil:
	case errors.As(err, &list):
		// Each problem with the offending line, as compilers print them.
		fmt.Fprintln(w, list.Detail())
	case errors.Is(err, harness.ErrContractsFailed):
		// The table already said why.
	default:
		fmt.Fprintln(w, "chaoskit:", err)
	}
	return code
}

// isTerminal says whether w is a terminal, where progress is redrawn live.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// colorOK says whether to paint output: only on a terminal, never with
// --no-color or NO_COLOR set (https://no-color.org).
func colorOK(w io.Writer) bool {
	if _, set := os.LookupEnv("NO_COLOR"); set || noColor {
		return false
	}
	return isTerminal(w)
}
