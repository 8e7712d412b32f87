package chaostest_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/chaoskit/chaoskit/chaostest"
)

// newItems is the service under test: an http.Handler.
func newItems() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"id": %q}`, r.PathValue("id"))
	})
	return mux
}

// Check runs testdata/items.yaml (a second of reads at 100/s, halved
// here) against a handler it serves on loopback, and says what the
// contracts found.
func Example() {
	res, err := chaostest.Check(context.Background(), "testdata/items.yaml", chaostest.Target{Handler: newItems()}, chaostest.RateScale(0.5))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Report.Verdict, len(res.Report.Scenarios[0].Contracts), "contracts,", len(res.Failures), "failures")
	// Output: pass 2 contracts, 0 failures
}

// In a test, Run fails the test with one t.Errorf per failed check and
// logs the contract table.
func ExampleRun() {
	_ = func(t *testing.T) {
		chaostest.Run(t, "testdata/items.yaml", chaostest.Target{Handler: newItems()})
	}
}

// A service with failpoints runs as a process chaoskit starts: a
// fault-injection build (chaoskit build --output-file bin/items ./cmd/items), given
// a free port for {port} and GO_FAILPOINTS_HTTP for its faults.
func ExampleTarget_command() {
	_ = func(t *testing.T) {
		chaostest.Run(t, "testdata/items-faults.yaml", chaostest.Target{
			Command: []string{"../bin/items", "--listen", "127.0.0.1:{port}"},
			URL:     "http://127.0.0.1:{port}",
		}, chaostest.RateScale(0.5), chaostest.ReportDir("../out/items"))
	}
}
