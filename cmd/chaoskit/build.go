package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/faultbuild"
	"github.com/chaoskit/chaoskit/runner"
)

func newBuildCmd() *cobra.Command {
	var o faultbuild.Options
	var flags []string
	cmd := &cobra.Command{
		Use:   "build [-o OUT] PACKAGE",
		Short: "Make a fault-injection build of a Go main package",
		Long: `Build compiles a Go main package with its failpoint markers live: the
markers are rewritten at compile time by failpoint-toolexec (go build
-toolexec), so the source tree stays clean. Fault-injection builds get a Go
build cache of their own, so normal and rewritten objects are never swapped.

Keep failpoint markers out of package main: failpoint-toolexec rewrites the
files of every main package in one shared scratch folder.`,
		Example: `  chaoskit build -o bin/server-fi ./cmd/server
  chaoskit build -C ../myservice -o /tmp/svc ./cmd/svc`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Package = args[0]
			if o.Output == "" {
				o.Output = filepath.Base(strings.TrimSuffix(filepath.Clean(o.Package), "/..."))
				if o.Output == "." {
					abs, _ := filepath.Abs(o.Dir)
					o.Output = filepath.Base(abs)
				}
			}
			if o.Dir != "" && !filepath.IsAbs(o.Output) {
				// -o is relative to where chaoskit runs, not to -C.
				abs, err := filepath.Abs(o.Output)
				if err != nil {
					return err
				}
				o.Output = abs
			}
			o.Flags = flags
			o.Log = cmd.ErrOrStderr()
			if err := faultbuild.Build(cmd.Context(), o); err != nil {
				return &runner.InfraError{Msg: "fault-injection build failed", Err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "built %s (fault injection: markers rewritten)\n", o.Output)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Output, "output", "o", "", "the binary to write (default: the package's directory name)")
	f.StringVarP(&o.Dir, "dir", "C", "", "run go build in this directory (inside the module whose markers are rewritten)")
	f.StringVar(&o.CacheDir, "cache", "", "directory for the isolated build cache and the failpoint-toolexec tool (default: the user cache dir's chaoskit/faultbuild)")
	f.StringVar(&o.Toolexec, "toolexec", "", "failpoint-toolexec binary to use (default: the pinned version, installed on first use)")
	f.StringArrayVar(&flags, "flag", nil, "extra go build flag, e.g. --flag=-race (repeatable)")
	return cmd
}
