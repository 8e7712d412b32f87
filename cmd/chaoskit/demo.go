package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/pingcap/failpoint"
	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/demo"
	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/internal/failpointenv"
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
open to every local user. No other chaoskit command serves either variable:
they are taken out of chaoskit's environment when it starts. The --no-*
flags break its resilience on purpose.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			level := slog.LevelWarn
			if fl.Verbose {
				level = slog.LevelInfo
			}
			fl.Config.Log = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			if err := serveFailpoints(failpointenv.Taken()); err != nil {
				return err
			}
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

// serveFailpoints serves the failpoint control endpoints the demo was
// started with, which package failpointenv took out of the environment
// before pingcap/failpoint and inject could serve them at start-up: the
// guarded one of inject on CHAOSKIT_FAILPOINTS_HTTP (with the token of
// CHAOSKIT_FAILPOINTS_TOKEN) and pingcap's open one on GO_FAILPOINTS_HTTP.
func serveFailpoints(a failpointenv.Addresses) error {
	if a.Chaoskit != "" {
		if _, err := inject.ServeControl(a.Chaoskit, os.Getenv(inject.TokenEnv)); err != nil {
			return fmt.Errorf("failpoint control endpoint: %w", err)
		}
		inject.Arm()
	}
	if a.Pingcap != "" {
		ln, err := net.Listen("tcp", a.Pingcap)
		if err != nil {
			return fmt.Errorf("failpoint control endpoint (GO_FAILPOINTS_HTTP): %w", err)
		}
		go func() { _ = http.Serve(ln, &failpoint.HttpHandler{}) }()
		inject.Arm()
	}
	return nil
}
