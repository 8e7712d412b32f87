package runner_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/runner"
	"github.com/chaoskit/chaoskit/timeline"
)

// verifyScenario verifies every order the orders service acknowledged by
// reading it with a request of its own after the run (%[2]s adds to the
// rule, indented by four spaces).
const verifyScenario = `name: orders-verify
target:
  url: %[1]s
load:
  rate: 100/s
  requests:
    - method: POST
      path: /orders
      body: '{"product_id":7,"quantity":2}'
phases:
  - name: writes
    duration: 300ms
verify:
  - name: orders stay readable
    requests: {method: POST, path: /orders}
    status: [201]
    request: GET /orders/{json.id}
    expect: [200]
    body_contains: '"quantity":2'
%[2]s
contracts:
  - name: orders verified
    min_samples: 5
    expect: [violated_verifications == 0]
`

func runVerify(t *testing.T, o *orders, rule string) (*timeline.Timeline, contract.CheckResult) {
	t.Helper()
	o.stored, o.reads = map[string]map[string]any{}, map[string]int{}
	srv := httptest.NewServer(o.handler())
	defer srv.Close()
	sc, err := plan.Parse("orders.yaml", []byte(fmt.Sprintf(verifyScenario, srv.URL, rule)), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(context.Background(), sc, runner.Options{Dir: t.TempDir(), Self: "unused"})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := timeline.Load(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return tl, sc.Contracts[0].Compiled().Evaluate(tl).Checks[0]
}

// TestVerifyRetriesWithinItsBound: a verification request made from the
// selected request's answer ({json.id}) is recorded once per acknowledged
// order, with its headers; 503s are retried until an answer decides;
// a service that stays unavailable past within, or refuses the request
// for want of a token, leaves every verification unknown (inconclusive,
// never violated), within the bound; orders lost by the service are
// violations.
func TestVerifyRetriesWithinItsBound(t *testing.T) {
	tl, ch := runVerify(t, &orders{flaky: 2, token: "t0k"}, `    headers: {Authorization: "Bearer t0k"}`)
	if ch.Outcome != contract.Pass || ch.Verified == nil || ch.Verified.OK == 0 || ch.Verified.OK != ch.Verified.Verified {
		t.Fatalf("check %s %q (%s), want pass with every order verified", ch.Outcome, ch.Measured, ch.Reason)
	}
	n := 0
	for _, e := range tl.Events {
		if e.Kind == timeline.Verify {
			n++
			if e.Verified.Attempts != 3 || e.Verified.Status != 200 {
				t.Errorf("verification %s: %d attempts, status %d; want 3 and 200", e.Verified.Target, e.Verified.Attempts, e.Verified.Status)
			}
		}
	}
	if n != ch.Verified.Verified {
		t.Errorf("%d verify events, %d verified", n, ch.Verified.Verified)
	}

	start := time.Now()
	_, ch = runVerify(t, &orders{flaky: 1 << 20}, "    within: 300ms")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the run took %v: within 300ms does not bound the verification", took)
	}
	if ch.Outcome != contract.Inconclusive || ch.Verified.Unknown != ch.Verified.Verified || ch.Verified.Causes["answered 503"] != ch.Verified.Unknown {
		t.Errorf("unavailable: check %s %q (%s), want inconclusive with every verification unknown", ch.Outcome, ch.Measured, ch.Reason)
	}

	_, ch = runVerify(t, &orders{token: "t0k"}, "")
	if ch.Outcome != contract.Inconclusive || ch.Verified.Causes["answered 401"] != ch.Verified.Verified {
		t.Errorf("no token: check %s %q (%s), want inconclusive with every verification refused", ch.Outcome, ch.Measured, ch.Reason)
	}

	_, ch = runVerify(t, &orders{lose: true}, "")
	if ch.Outcome != contract.Fail || ch.Verified.Violated == 0 {
		t.Errorf("lost orders: check %s %q (%s), want fail", ch.Outcome, ch.Measured, ch.Reason)
	}
}
