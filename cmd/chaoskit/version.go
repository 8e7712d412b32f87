package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/internal/buildprobe"
)

// version is set at link time (-ldflags "-X main.version=...").
var version = "dev"

// buildInfo is what `chaoskit version` reports: the module version and the
// VCS data the go command stamps into every binary it builds from a
// repository (debug.ReadBuildInfo), and whether failpoint markers are live.
type buildInfo struct {
	Version  string `json:"version"`
	Module   string `json:"module,omitempty"`
	Go       string `json:"go"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Revision string `json:"vcs_revision,omitempty"`
	Time     string `json:"vcs_time,omitempty"`
	Modified bool   `json:"vcs_modified,omitempty"`
	// FaultInjection says whether the bundled demo's faults fire in this
	// binary: always, since its fault points are switches (inject.Switch),
	// live in a plain go build or go install.
	FaultInjection bool `json:"fault_injection"`
	// MarkersRewritten says whether this binary's own failpoint markers
	// were rewritten (a build with failpoint-toolexec): the demo needs it
	// no longer; make check-build reads it to prove that rewritten and
	// plain objects never swap in the build cache.
	MarkersRewritten bool `json:"markers_rewritten"`
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, FaultInjection: true, MarkersRewritten: buildprobe.Live()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.Module = bi.Main.Path
	if b.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	var format string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, the build's VCS data and whether its failpoint markers were rewritten",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			asJSON = asJSON || format == "json"
			b := readBuildInfo()
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(b)
			}
			fmt.Fprintf(out, "chaoskit %s (%s %s/%s)\n", b.Version, b.Go, b.OS, b.Arch)
			if b.Revision != "" {
				dirty := ""
				if b.Modified {
					dirty = ", with uncommitted changes"
				}
				fmt.Fprintf(out, "built from %s at %s (%s%s)\n", b.Module, b.Revision, b.Time, dirty)
			}
			fmt.Fprintln(out, "fault injection: yes (the demo's fault points are switches, live in any build; a service of yours with failpoint markers needs `chaoskit build`)")
			if b.MarkersRewritten {
				fmt.Fprintln(out, "failpoint markers: rewritten (a fault-injection build)")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the version as JSON")
	markOld(cmd, "json", "write -o json")
	formatFlag(cmd, &format, "text", "json")
	return cmd
}
