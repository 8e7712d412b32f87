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
	var format string
	cmd := &cobra.Command{
		Use:   "build [--output-file OUT] PACKAGE",
		Short: "Make a fault-injection build of a Go main package",
		Long: `Build compiles a Go main package with its failpoint markers live: the
markers are rewritten at compile time by failpoint-toolexec (go build
-toolexec), so the source tree stays clean. Fault-injection builds get a Go
build cache of their own, so normal and rewritten objects are never swapped.

Keep failpoint markers out of package main: failpoint-toolexec rewrites the
files of every main package in one shared scratch folder.

-o json prints what was built as one JSON document ({"binary": PATH}).
-o with a path, go build's spelling, still names the binary, with a note.`,
		Example: `  chaoskit build --output-file bin/server-fi ./cmd/server
  chaoskit build -C ../myservice --output-file /tmp/svc ./cmd/svc`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" && !cmd.Flags().Changed("output-file") {
				// go build -o OUT, the spelling of earlier versions.
				fmt.Fprintf(cmd.ErrOrStderr(), "chaoskit: build -o %s names a file, an old spelling that may go away: write --output-file %s (-o names the output format)\n", format, format)
				o.Output, format = format, "text"
			}
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
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
			if format == "json" {
				return printJSON(cmd.OutOrStdout(), map[string]any{"binary": o.Output, "fault_injection": true})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "built %s (fault injection: markers rewritten)\n", o.Output)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Output, "output-file", "", "the binary to write (default: the package's directory name)")
	formatFlag(cmd, &format, "text", "json")
	f.StringVarP(&o.Dir, "dir", "C", "", "run go build in this directory (inside the module whose markers are rewritten)")
	f.StringVar(&o.CacheDir, "cache", "", "directory for the isolated build cache and the failpoint-toolexec tool (default: the user cache dir's chaoskit/faultbuild)")
	f.StringVar(&o.Toolexec, "toolexec", "", "failpoint-toolexec binary to use (default: the pinned version, installed on first use)")
	f.StringArrayVar(&flags, "flag", nil, "extra go build flag, e.g. --flag=-race (repeatable)")
	return cmd
}
