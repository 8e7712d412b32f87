// Command promql-server answers GET /items/N and calls a backend for each
// request (counted, not made: the count is what the case is about). It
// exports app_requests_total and app_backend_calls_total on /metrics, in
// the text format a Prometheus server scrapes. The broken variant retries
// every call twice more, a retry storm that no response shows: only the
// ratio of the two counters, which a Prometheus server computes, tells.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"sync/atomic"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	variant := flag.String("variant", "correct", "correct or broken")
	flag.Parse()
	var requests, calls atomic.Int64
	http.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		calls.Add(1)
		if *variant != "correct" {
			calls.Add(2) // two retries of a call that had succeeded
		}
		fmt.Fprintf(w, `{"id":%q}`, r.PathValue("id"))
	})
	http.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE app_requests_total counter\napp_requests_total %d\n# TYPE app_backend_calls_total counter\napp_backend_calls_total %d\n",
			requests.Load(), calls.Load())
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
