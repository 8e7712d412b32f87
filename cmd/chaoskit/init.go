package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/initscan"
	"github.com/chaoskit/chaoskit/initwrite"
	"github.com/chaoskit/chaoskit/internal/exitcode"
)

func newInitCmd() *cobra.Command {
	var (
		dir, out, reportDir string
		baseline, noBuild   bool
		force, asJSON       bool
		format              string
		phase, latency      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "init [PACKAGE]",
		Short: "Write a scenario for a Go service from its source, with contracts proposed from a baseline run",
		Long: `Init reads the service's main package (default .) and the packages of its
module it imports, with go/packages and their syntax trees; nothing of the
service runs while it reads. It finds the routes (net/http with Go 1.22
patterns, chi, gin, echo, gorilla/mux), the dependencies (database/sql with
its driver, pgx, go-redis, gRPC and HTTP clients) with the flag or environment
variable each address comes from, how the service is told where to listen,
its health route, its failpoint markers and its resilience calls.

It writes a scenario: PostgreSQL and Redis started by chaoskit with a proxy
in front of each, the service built (go build, into bin/ beside the
scenario) and started with its flags and environment pointed at the
proxies, load over the GET routes it can fill, and one phase per fault of
each dependency (latency, down, restart), each followed by a phase to
recover. Every guess, and everything it could not infer, is a comment in
the file with the service's line.

--baseline runs the no-fault phase first (and, for routes with path
parameters, a short run of their listing routes to take example values
from) and proposes contracts from what it measured: error shares and p99
bands per route, a time to recover per fault, each marked as a proposal
with the measured figures beside it; none that the baseline itself fails.

-o json prints what the scan found as JSON and writes nothing. -o with a
path, the spelling of earlier versions, still names the scenario file, with
a note: write --output-file.`,
		Example: `  chaoskit init --baseline ./cmd/server
  chaoskit init -C ../visits --baseline --output-file chaoskit/visits.yaml
  chaoskit run chaoskit/visits.yaml
  chaoskit init -o json ./...`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" && !cmd.Flags().Changed("output-file") {
				fmt.Fprintf(cmd.ErrOrStderr(), "chaoskit: init -o %s names a file, an old spelling that may go away: write --output-file %s (-o names the output format)\n", format, format)
				out, format = format, "text"
			}
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			asJSON = asJSON || format == "json"
			pkg := "."
			if len(args) == 1 {
				pkg = args[0]
			}
			svc, err := initscan.Scan(cmd.Context(), dir, pkg)
			if err != nil {
				return exitcode.Wrap(exitcode.Invalid, err)
			}
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(svc)
			}
			if out == "" {
				out = filepath.Join("chaoskit", svc.Name+".yaml")
			}
			if _, err := os.Lstat(out); err == nil && !force {
				return usageError("%s exists: init does not overwrite a scenario (give --output-file another file, or --force)", out)
			}
			fmt.Fprintf(stderr, "init: %s: %s, %s, %s, %s\n", svc.Package, counted(len(svc.Routes), "route", "routes"),
				counted(len(svc.Deps), "dependency", "dependencies"), counted(len(svc.Points), "failpoint", "failpoints"),
				counted(len(svc.Resilience), "resilience call", "resilience calls"))
			d, err := initwrite.Write(cmd.Context(), svc, initwrite.Config{
				Options: initwrite.Options{Phase: phase, Latency: latency}, Out: out, ReportDir: reportDir,
				Build: !noBuild, Baseline: baseline, Progress: stderr})
			if err != nil {
				return err
			}
			for _, n := range d.Notes {
				fmt.Fprintf(stderr, "init: %s\n", n)
			}
			if baseline {
				fmt.Fprintf(stderr, "init: proposed %d contracts from the baseline (%d left out: the baseline itself did not pass them)\n", len(d.Proposals), len(d.Dropped))
			}
			fmt.Fprintf(stdout, "wrote %s\nnext: chaoskit run %s\n", out, out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&dir, "dir", "C", "", "read the service from this directory (its module)")
	cmd.Flags().StringVar(&out, "output-file", "", "the scenario file to write (default chaoskit/NAME.yaml)")
	formatFlag(cmd, &format, "text", "json")
	cmd.Flags().StringVar(&reportDir, "report-dir", filepath.Join("out", "init"), "directory for the baseline's run directories")
	cmd.Flags().BoolVar(&baseline, "baseline", false, "run the no-fault phase first and propose contracts from what it measured")
	cmd.Flags().BoolVar(&noBuild, "no-build", false, "do not build the service (the scenario runs bin/NAME beside it)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite the scenario file if it exists")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what the scan found as JSON and write nothing")
	markOld(cmd, "json", "write -o json")
	cmd.Flags().DurationVar(&phase, "phase", 3*time.Second, "length of each phase")
	cmd.Flags().DurationVar(&latency, "latency", 300*time.Millisecond, "delay of each dependency's latency fault")
	return cmd
}

// counted is n with the noun in its number: "1 route", "2 routes".
func counted(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
