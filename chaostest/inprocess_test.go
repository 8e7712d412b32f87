package chaostest

import (
	"net/http/httptest"
	"testing"

	"github.com/chaoskit/chaoskit/demo"
	// The bundled scenarios' target is the demo: its profile names its
	// failpoints and headers.
	_ "github.com/chaoskit/chaoskit/demo/profile"
	"github.com/chaoskit/chaoskit/inject"
)

// A handler served in the test with the test binary's own fault points,
// switched through inject's guarded control handler on loopback: the
// demo's points are switches, live in any build of the test, so the bundled
// scenario runs and passes against the demo served in process.
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
	if len(r.errors) > 0 {
		t.Errorf("t.Errorf %q", r.errors)
	}
	if f := rep.Scenarios[0].Faults; len(f) != 1 || f[0].Hits == nil || *f[0].Hits == 0 {
		t.Errorf("the fault did not fire in process: %+v", f)
	}
}
