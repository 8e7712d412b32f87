package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/internal/exitcode"
)

func newPointsCmd() *cobra.Command {
	var dir string
	var asJSON bool
	var format string
	cmd := &cobra.Command{
		Use:   "points [PACKAGES]",
		Short: "List the failpoint markers in Go source",
		Long: `Points scans the Go packages (as go list takes them; default ./...) for
pingcap/failpoint markers and prints each failpoint's full path, the name a
scenario's fault point must resolve to, with where the marker is.`,
		Example: `  chaoskit points ./demo/...
  chaoskit points -C ../myservice ./...
  chaoskit points -o json ./...`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			asJSON = asJSON || format == "json"
			cat, err := inject.ScanSource(cmd.Context(), dir, args...)
			if err != nil {
				return exitcode.Wrap(exitcode.Invalid, err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				pts := cat.Points
				if pts == nil {
					pts = []inject.Point{}
				}
				return enc.Encode(pts)
			}
			if len(cat.Points) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "no failpoint markers found")
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			for _, p := range cat.Points {
				file := p.File
				if rel, err := filepath.Rel(absDir(dir), p.File); err == nil {
					file = rel
				}
				fmt.Fprintf(tw, "%s\t%s:%d\t%s\n", p.Path, file, p.Line, p.Marker)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&dir, "dir", "C", "", "run in this directory (the service's module)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the points as JSON")
	markOld(cmd, "json", "write -o json")
	formatFlag(cmd, &format, "text", "json")
	return cmd
}

func absDir(dir string) string {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	return abs
}
