package main

import (
	"errors"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/demo"
	// The demo is a target profile: its failpoints, argument check and
	// headers (see plan.Profile).
	_ "github.com/chaoskit/chaoskit/demo/profile"
)

func newDemoCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "The bundled demo service the bundled scenarios attack",
	}
	var fl demo.Flags
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Run the demo shop service (SQLite or PostgreSQL, breaker, cache fallback)",
		Long: `Serve runs the demo shop on a loopback address and prints "listening on ADDR".
Start it with CHAOSKIT_FAILPOINTS_HTTP=127.0.0.1:PORT and a token in
CHAOSKIT_FAILPOINTS_TOKEN to switch its failpoints over HTTP (requests carry
"Authorization: Bearer TOKEN"); GO_FAILPOINTS_HTTP serves pingcap's endpoint,
open to every local user. The --no-* flags break its resilience on purpose.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			level := slog.LevelWarn
			if fl.Verbose {
				level = slog.LevelInfo
			}
			fl.Config.Log = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			err := demo.Serve(cmd.Context(), fl.Config, cmd.OutOrStdout())
			if errors.Is(err, demo.ErrInvalidConfig) {
				return usageError("%v", err)
			}
			return err
		},
	}
	fl.Register(serve.Flags())
	cmd.AddCommand(serve)
	return cmd
}
