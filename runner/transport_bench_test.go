package runner

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/plan"
)

// BenchmarkLoadRequest measures one load request over loopback with the
// phase's client, with and without the stop context that cuts requests in
// flight short when a run stops (its connections are tracked and closed).
func BenchmarkLoadRequest(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	// A run's context, which can be cancelled, as the stop context is.
	running, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, bc := range []struct {
		name string
		stop context.Context
	}{{"without stop", nil}, {"with stop", running}} {
		b.Run(bc.name, func(b *testing.B) {
			c, done := newClient(bc.stop, plan.Load{Timeout: plan.Duration(time.Second), MaxWorkers: 4}, nil, nil)
			defer done()
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Get(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
