package runner

import (
	"bufio"
	"io"
	"net/http"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// BenchmarkRecordResult is the recorder's work per request: results.bin,
// the compact timeline, the class. It runs off the request path; its cost
// bounds the rate one recorder keeps up with.
func BenchmarkRecordResult(b *testing.B) {
	r := &run{sc: &plan.Scenario{}, keep: headerFilter(nil, false), tgt: &target{baseURL: "http://127.0.0.1:8080"}}
	r.resBuf = bufio.NewWriterSize(io.Discard, 64<<10)
	r.resEnc = vegeta.NewEncoder(r.resBuf)
	r.rw = timeline.NewRequestWriter(io.Discard, "http://127.0.0.1:8080")
	body := []byte(`{"id":7,"name":"widget","price_cents":1299}`)
	h := http.Header{"Content-Type": {"application/json"}, "Date": {"Tue, 01 Dec 2026 21:00:00 GMT"}, "Content-Length": {"43"}}
	t0 := time.Now()
	var q timeline.Request
	b.ReportAllocs()
	for i := range b.N {
		res := &vegeta.Result{Attack: "bench", Seq: uint64(i), Code: 200, Timestamp: t0.Add(time.Duration(i) * 100 * time.Microsecond),
			Latency: 250 * time.Microsecond, BytesIn: uint64(len(body)), Method: "GET", URL: "http://127.0.0.1:8080/products/7", Body: body, Headers: h}
		r.recordResult("steady", res, &q)
	}
}
