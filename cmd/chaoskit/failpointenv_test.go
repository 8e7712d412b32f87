package main

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// TestExportedFailpointAddressesOpenNothing runs chaoskit with the
// failpoint control variables of a user's shell exported: chaoskit itself
// must not listen on them (the failpoint libraries it links serve them
// from their init functions), nor may the demo it starts inherit them; the
// run's own control endpoint still works (its fault switches on).
func TestExportedFailpointAddressesOpenNothing(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	guarded, open := freeAddr(t), freeAddr(t)
	env := []string{"CHAOSKIT_FAILPOINTS_HTTP=" + guarded, "CHAOSKIT_FAILPOINTS_TOKEN=exported-token", "GO_FAILPOINTS_HTTP=" + open}
	cmd, buf := startChaoskitEnv(t, env, bin, scenarioFile, t.TempDir(), "db-timeout-serves-cache", func(e timeline.Event) bool { return e.Kind == timeline.FaultOn })
	for _, addr := range []string{guarded, open} {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			c.Close()
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("something listens on %s, the address exported to chaoskit\n%s", addr, buf.String())
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial %s: %v, want connection refused", addr, err)
		}
	}
	interrupt(t, cmd, buf)
}
