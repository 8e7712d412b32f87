package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/demo/store"
)

// version is set at link time (-ldflags "-X main.version=...").
var version = "dev"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and whether this is a fault-injection build",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := version
			if bi, ok := debug.ReadBuildInfo(); ok && v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
				v = bi.Main.Version
			}
			fi := "no (plain build: failpoint markers are inert; build with `make build`)"
			if store.FaultInjectionLive() {
				fi = "yes (failpoint markers rewritten)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "chaoskit %s (%s %s/%s)\nfault injection: %s\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH, fi)
			return nil
		},
	}
}
