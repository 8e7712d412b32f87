package runner

import (
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/inject"
)

// TestInheritedEnvDropsControlAddresses: a failpoint control address in
// chaoskit's environment (exported in a user's shell) reaches no process
// chaoskit starts; the rest of the environment does.
func TestInheritedEnvDropsControlAddresses(t *testing.T) {
	t.Setenv("GO_FAILPOINTS_HTTP", "127.0.0.1:1")
	t.Setenv(inject.ControlEnv, "127.0.0.1:2")
	t.Setenv("CHAOSKIT_INHERITED_PROBE", "kept")
	kept := false
	for _, kv := range inheritedEnv() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "GO_FAILPOINTS_HTTP" || name == inject.ControlEnv {
			t.Errorf("inherited %s", kv)
		}
		kept = kept || kv == "CHAOSKIT_INHERITED_PROBE=kept"
	}
	if !kept {
		t.Error("the rest of the environment was not inherited")
	}
}
