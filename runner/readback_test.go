package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/runner"
	"github.com/chaoskit/chaoskit/timeline"
)

// orders is a small order service. With lose set it acknowledges every
// third order without storing it, as a service that acknowledges before
// committing does when the commit fails; with alter set it stores a
// different quantity for every fifth.
//
// With token set, a read needs "Authorization: Bearer TOKEN" and gets 401
// without it; with flaky set, the first flaky reads of each order answer
// 503, as a service still recovering does.
type orders struct {
	mu          sync.Mutex
	n           int
	stored      map[string]map[string]any
	lose, alter bool
	token       string
	flaky       int
	reads       map[string]int
}

func (o *orders) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {})
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		var in map[string]any
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		o.mu.Lock()
		o.n++
		id := fmt.Sprintf("o-%d", o.n)
		ack := map[string]any{"id": id, "product_id": in["product_id"], "quantity": in["quantity"]}
		stored := map[string]any{"id": id, "product_id": in["product_id"], "quantity": in["quantity"]}
		if o.alter && o.n%5 == 0 {
			stored["quantity"] = 99.0
		}
		if !o.lose || o.n%3 != 0 {
			o.stored[id] = stored
		}
		o.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(ack)
	})
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		if o.token != "" && r.Header.Get("Authorization") != "Bearer "+o.token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		o.mu.Lock()
		o.reads[r.PathValue("id")]++
		n := o.reads[r.PathValue("id")]
		v, ok := o.stored[r.PathValue("id")]
		o.mu.Unlock()
		if n <= o.flaky {
			http.Error(w, "recovering", http.StatusServiceUnavailable)
			return
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	})
	return mux
}

const ordersScenario = `name: orders
target:
  url: %s
load:
  rate: 100/s
  requests:
    - method: POST
      path: /orders
      body: '{"product_id":7,"quantity":2}'
    - method: GET
      path: /healthz
phases:
  - name: writes
    duration: 300ms
writes:
  - requests: {method: POST, path: /orders}
    ack: [201]
    read: GET /orders/{json.id}
    compare: [product_id, quantity]
%s
contracts:
  - name: no acknowledged write lost
    min_samples: 5
    expect: [lost_writes == 0]
`

func runOrders(t *testing.T, o *orders) (*timeline.Timeline, contract.Verdict) {
	return runOrdersWith(t, o, "")
}

// runOrdersWith runs the orders scenario with more fields of its write
// (indented by four spaces).
func runOrdersWith(t *testing.T, o *orders, write string) (*timeline.Timeline, contract.Verdict) {
	t.Helper()
	o.stored, o.reads = map[string]map[string]any{}, map[string]int{}
	srv := httptest.NewServer(o.handler())
	defer srv.Close()
	before := contract.Compilations()
	sc, err := plan.Parse("orders.yaml", []byte(fmt.Sprintf(ordersScenario, srv.URL, write)), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(context.Background(), sc, runner.Options{Dir: t.TempDir(), Self: "unused"})
	if err != nil {
		t.Fatal(err)
	}
	// Loading compiled the one contract; the run compiled none.
	if n := contract.Compilations() - before; n != 1 {
		t.Errorf("loading and running compiled %d contracts, want 1", n)
	}
	c := sc.Contracts[0].Compiled()
	// The tests judge the read-back check, not whether the short phase got
	// its load on a busy machine (the verdict's shortfall rule).
	tl, err := timeline.Load(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return tl, c.Evaluate(tl)
}

func TestReadBackFindsLostWrites(t *testing.T) {
	tl, v := runOrders(t, &orders{lose: true})
	var reads, acked int
	for _, e := range tl.Events {
		if e.Kind == timeline.ReadBack {
			reads++
			if !strings.HasPrefix(e.Read.Target, "GET /orders/o-") || e.Read.Compare[0] != "product_id" {
				t.Errorf("read = %+v", e.Read)
			}
		}
	}
	for _, r := range tl.Requests {
		if r.Target == "POST /orders" && r.Status == 201 {
			acked++
		}
	}
	if acked == 0 || reads != acked {
		t.Fatalf("%d acknowledged writes, %d read back", acked, reads)
	}
	if v.Checks[0].Outcome != contract.Fail {
		t.Fatalf("check %s %s, want fail", v.Checks[0].Outcome, v.Measured)
	}
	lost := v.Checks[0].Violations
	if len(lost) != acked/3 {
		t.Errorf("%d lost writes listed, want %d of %d", len(lost), acked/3, acked)
	}
	for _, l := range lost {
		if !strings.HasPrefix(l.Detail, "missing: GET /orders/o-") || !strings.HasSuffix(l.Detail, "-> 404") || l.Target != "POST /orders" {
			t.Errorf("lost write = %+v", l)
		}
	}
}

func TestReadBackFindsChangedWrites(t *testing.T) {
	_, v := runOrders(t, &orders{alter: true})
	if v.Checks[0].Outcome != contract.Fail || len(v.Checks[0].Violations) == 0 {
		t.Fatalf("check %s %s, want fail", v.Checks[0].Outcome, v.Measured)
	}
	if d := v.Checks[0].Violations[0].Detail; !strings.Contains(d, "quantity: acknowledged 2, read 99") {
		t.Errorf("detail = %q", d)
	}
}

func TestReadBackPassesAKeptPromise(t *testing.T) {
	_, v := runOrders(t, &orders{})
	if v.Checks[0].Outcome != contract.Pass {
		t.Fatalf("check %s %s, want pass", v.Checks[0].Outcome, v.Measured)
	}
}

func TestReadBackSendsItsHeaders(t *testing.T) {
	t.Setenv("CHAOSKIT_TEST_ORDERS_TOKEN", "s3cret")
	// Without the header, every read is refused: unknown, not lost.
	_, v := runOrders(t, &orders{token: "s3cret"})
	ch := v.Checks[0]
	if ch.Outcome != contract.Inconclusive || ch.Writes == nil || ch.Writes.Lost != 0 || ch.Writes.Unknown != ch.Writes.Acknowledged ||
		!strings.Contains(ch.Reason, "read_headers") {
		t.Fatalf("without read_headers: %s %q (%s)", ch.Outcome, ch.Measured, ch.Reason)
	}
	// With it, every write reads back.
	tl, v := runOrdersWith(t, &orders{token: "s3cret"}, `    read_headers: {Authorization: "Bearer {env.CHAOSKIT_TEST_ORDERS_TOKEN}"}`)
	if ch := v.Checks[0]; ch.Outcome != contract.Pass || ch.Writes.OK != ch.Writes.Acknowledged {
		t.Fatalf("with read_headers: %s %q (%s)", ch.Outcome, ch.Measured, ch.Reason)
	}
	// The secret is sent, never recorded.
	for _, e := range tl.Events {
		if e.Read != nil && (strings.Contains(e.Read.Target, "s3cret") || strings.Contains(e.Read.Body, "s3cret")) {
			t.Errorf("a read-back records the secret: %+v", e.Read)
		}
	}
}

func TestReadBackRetriesTransientFailures(t *testing.T) {
	// Two 503s per order, then the order: every write is there.
	tl, v := runOrders(t, &orders{flaky: 2})
	if ch := v.Checks[0]; ch.Outcome != contract.Pass {
		t.Fatalf("check %s %q (%s), want pass", ch.Outcome, ch.Measured, ch.Reason)
	}
	for _, e := range tl.Events {
		if e.Read != nil && e.Read.Attempts != 3 {
			t.Errorf("read %s took %d attempts, want 3", e.Read.Target, e.Read.Attempts)
		}
	}
	// A service that stays unavailable past read_within leaves every
	// write unknown: the verdict says so and is no fail.
	start := time.Now()
	_, v = runOrdersWith(t, &orders{flaky: 1 << 20}, "    read_within: 300ms")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the run took %v: read_within 300ms does not bound the read-back", took)
	}
	ch := v.Checks[0]
	if ch.Outcome != contract.Inconclusive || ch.Writes.Unknown != ch.Writes.Acknowledged || ch.Writes.Causes["answered 503"] != ch.Writes.Unknown {
		t.Fatalf("check %s %q (%s), want inconclusive with every write unknown", ch.Outcome, ch.Measured, ch.Reason)
	}
}
