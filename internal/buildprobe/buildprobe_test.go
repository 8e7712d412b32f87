package buildprobe

import (
	"os"
	"testing"
)

// A plain test build leaves the markers inert, and the probe says so.
func TestPlainBuildIsNotLive(t *testing.T) {
	if os.Getenv("CHAOSKIT_PROBE_LIVE") != "" {
		t.Skip("built with rewritten markers")
	}
	if Live() {
		t.Fatal("Live() in a plain build")
	}
}

// TestLiveWhenRewritten is run by hand with the markers rewritten
// (CHAOSKIT_PROBE_LIVE=1 go test -toolexec=bin/failpoint-toolexec
// ./internal/buildprobe), with a GOCACHE of its own.
func TestLiveWhenRewritten(t *testing.T) {
	if os.Getenv("CHAOSKIT_PROBE_LIVE") == "" {
		t.Skip("CHAOSKIT_PROBE_LIVE not set")
	}
	if !Live() {
		t.Fatal("Live() false in a build with rewritten markers")
	}
}
