package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/timeline"
)

func newExportCmd() *cobra.Command {
	var output, format string
	var jsonl bool
	cmd := &cobra.Command{
		Use:   "export RUN_DIR",
		Short: "Write a run's timeline as JSON lines",
		Long: `Export writes the timeline of a run directory as JSON lines: the meta,
every request (with its kept headers and body) and every event, one JSON
object a line. A run keeps its requests in a compact binary stream
(requests.cbor.zst: CBOR blocks in zstd frames); this is the form for jq, a
notebook or another tool. chaoskit report reads the output too, as the
timeline.jsonl of a run directory.

-o names the format (jsonl, the one; json means the same); --output-file
a file to write instead of stdout. -o with a path, the spelling of earlier
versions, still names the file, with a note.`,
		Example: `  chaoskit export out/db-timeout-serves-cache --output-file timeline.jsonl
  chaoskit export out/db-timeout-serves-cache | jq -c 'select(.request.status == 503)'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "jsonl" && format != "json" && !cmd.Flags().Changed("output-file") {
				fmt.Fprintf(cmd.ErrOrStderr(), "chaoskit: export -o %s names a file, an old spelling that may go away: write --output-file %s (-o names the output format)\n", format, format)
				output, format = format, "jsonl"
			}
			if err := checkFormat(format, "jsonl", "json"); err != nil {
				return err
			}
			if !jsonl {
				return usageError("--jsonl=false: JSON lines is the one export format")
			}
			src, err := timeline.OpenDir(args[0])
			if err != nil {
				return exitcode.Wrap(exitcode.Invalid, err)
			}
			w := cmd.OutOrStdout()
			if output != "" {
				f, err := os.Create(output)
				if err != nil {
					return exitcode.Wrap(exitcode.Invalid, err)
				}
				defer f.Close()
				w = f
			}
			buf := bufio.NewWriterSize(w, 256<<10)
			if err := timeline.Export(src, buf); err != nil {
				return exitcode.Wrap(exitcode.Invalid, err)
			}
			return buf.Flush()
		},
	}
	cmd.Flags().BoolVar(&jsonl, "jsonl", true, "write JSON lines (the one format)")
	cmd.Flags().StringVar(&output, "output-file", "", "write to this file instead of standard output")
	formatFlag(cmd, &format, "jsonl", "json")
	markOld(cmd, "jsonl", "JSON lines is the one format (-o jsonl)")
	return cmd
}
