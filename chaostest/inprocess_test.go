package chaostest

import (
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/demo"
	// The bundled scenarios' target is the demo: its profile names its
	// failpoints and headers.
	_ "github.com/chaoskit/chaoskit/demo/profile"
	"github.com/chaoskit/chaoskit/demo/store"
	"github.com/chaoskit/chaoskit/inject"
)

// A handler served in the test with the test binary's own failpoints,
// switched through inject's guarded control handler on loopback: in a
// fault-injection build of the test the bundled scenario runs and passes
// against the demo served in process; in a plain build the demo says its
// markers are inert and the run is refused, never passed.
func TestInProcessFailpoints(t *testing.T) {
	s, err := demo.New(t.Context(), demo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const token = "in-process-test-token"
	t.Setenv(inject.TokenEnv, token)
	ctrl := httptest.NewServer(inject.ControlHandler(token))
	defer ctrl.Close()
	r := &recorder{TB: t}
	rep := Run(r, "../scenarios/db-timeout-serves-cache.yaml", Target{Handler: s.Handler(), Failpoints: ctrl.URL}, RateScale(0.5))
	if len(r.fatals) > 0 || rep == nil {
		t.Fatalf("Run failed before the run: %q", r.fatals)
	}
	if store.FaultInjectionLive() {
		if len(r.errors) > 0 {
			t.Errorf("live markers: t.Errorf %q", r.errors)
		}
		if f := rep.Scenarios[0].Faults; len(f) != 1 || f[0].Hits == nil || *f[0].Hits == 0 {
			t.Errorf("the fault did not fire in process: %+v", f)
		}
		return
	}
	if os.Getenv("CHAOSKIT_REQUIRE_LIVE") != "" {
		t.Fatal("failpoint markers are inert, and CHAOSKIT_REQUIRE_LIVE is set (make test builds this package with failpoint-toolexec)")
	}
	// The run stopped before its fault phase, whose contract is then
	// inconclusive.
	if len(r.errors) != 2 || !strings.Contains(r.errors[0], "db-timeout-serves-cache: the run did not complete: the target's failpoint markers are inert") ||
		!strings.Contains(r.errors[1], `on DB timeout return cached data: inconclusive: phase "db-timeout" did not run`) {
		t.Errorf("inert markers: t.Errorf %q, want the markers inert and the contract inconclusive", r.errors)
	}
}
