package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chaoskit/chaoskit/internal/suggest"
)

// The conventions every command shares: the environment as flags, hints
// for misspelled flags, --no-color, and output that survives a reader
// leaving (run … | head).

// envPrefix starts the environment variable of every flag: --report-dir
// is CHAOSKIT_REPORT_DIR, --rate-scale CHAOSKIT_RATE_SCALE.
const envPrefix = "CHAOSKIT_"

// envName is the environment variable that sets flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// noEnv are the flags the environment never sets: help and version are
// actions, not settings.
var noEnv = map[string]bool{"help": true, "version": true}

// applyEnv sets every flag of cmd that the command line left unset from
// its CHAOSKIT_* variable, so that a flag given on the command line wins
// over the environment and the environment over the default. Deprecated
// and hidden spellings are left to the command line. A value the flag
// refuses is a usage error naming the variable.
func applyEnv(cmd *cobra.Command, getenv func(string) (string, bool)) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || noEnv[f.Name] || f.Deprecated != "" || f.Hidden {
			return
		}
		v, ok := getenv(envName(f.Name))
		if !ok {
			return
		}
		if serr := cmd.Flags().Set(f.Name, v); serr != nil {
			err = usageError("%s=%q: %v (it sets --%s)", envName(f.Name), v, serr, f.Name)
		}
	})
	return err
}

// unknownFlag finds the flag name in pflag's "unknown flag: --name" and
// "unknown shorthand flag: 'x' in -x" errors.
var unknownFlag = regexp.MustCompile(`^unknown flag: --([^ =]+)`)

// flagHint returns " (did you mean --report-dir?)" for an unknown flag
// near one cmd has, else "".
func flagHint(cmd *cobra.Command, err error) string {
	m := unknownFlag.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Deprecated == "" {
			names = append(names, f.Name)
		}
	})
	best, ok := suggest.Closest(m[1], names)
	if !ok {
		return ""
	}
	return " (did you mean --" + best + "?)"
}

// noColor is --no-color: never paint output, as NO_COLOR says too.
var noColor bool

// brokenPipe ends the default action of SIGPIPE: when the reader of
// stdout leaves (chaoskit run … | head -2), a write there fails with
// EPIPE instead of killing chaoskit, which so finishes the run, writes its
// report files, rolls its faults back and exits with the verdict's code.
func brokenPipe() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// pipeWriter writes to a pipe or file and, once the reader has gone,
// drops what is written: the output was for a reader no longer there,
// and what the command does besides printing must go on.
type pipeWriter struct {
	w    io.Writer
	gone atomic.Bool
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	if p.gone.Load() {
		return len(b), nil
	}
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.gone.Store(true)
		return len(b), nil
	}
	return n, err
}

// outputs returns where the root command prints: the process's stdout and
// stderr, each through a pipeWriter unless it is a terminal (a terminal
// does not go away, and it keeps its *os.File, which says it is one).
func outputs() (stdout, stderr io.Writer) {
	wrap := func(f *os.File) io.Writer {
		if isTerminal(f) {
			return f
		}
		return &pipeWriter{w: f}
	}
	return wrap(os.Stdout), wrap(os.Stderr)
}

// envHelp is the paragraph of chaoskit --help on the environment.
var envHelp = fmt.Sprintf(`Every flag can be set in the environment too: %sFLAG_NAME, the flag's
name in capitals with - as _ (CHAOSKIT_REPORT_DIR=out, CHAOSKIT_RATE_SCALE=0.5,
CHAOSKIT_OUTPUT=json). A flag on the command line wins over the environment.
NO_COLOR (any value) or --no-color turns colour off.`, envPrefix)

// oldSpelling is the annotation of a flag kept only so that old command
// lines still work; its value says what to write now.
const oldSpelling = "chaoskit-old-spelling"

// markOld hides flag name of cmd from help and the environment, and makes
// its use print a note saying what to write instead.
func markOld(cmd *cobra.Command, name, instead string) {
	f := cmd.Flags().Lookup(name)
	f.Hidden = true
	_ = cmd.Flags().SetAnnotation(name, oldSpelling, []string{instead})
}

// noteOldSpellings prints, on w, a note for each old spelling the command
// line used. It goes to stderr, where it cannot spoil a JSON stdout.
func noteOldSpellings(cmd *cobra.Command, w io.Writer) {
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if instead := f.Annotations[oldSpelling]; len(instead) > 0 {
			fmt.Fprintf(w, "chaoskit: --%s is an old spelling and may go away: %s\n", f.Name, instead[0])
		}
	})
}

// formatFlag registers -o/--output, the format of what cmd prints, one of
// formats (the first the default).
func formatFlag(cmd *cobra.Command, p *string, formats ...string) {
	cmd.Flags().StringVarP(p, "output", "o", formats[0], "the format of what stdout holds: "+strings.Join(formats, " or "))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
}

// checkFormat refuses a format not among formats.
func checkFormat(got string, formats ...string) error {
	for _, f := range formats {
		if got == f {
			return nil
		}
	}
	return usageError("-o %s: write -o %s", got, strings.Join(formats, " or -o "))
}

// printJSON prints v on w as one indented JSON document.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
