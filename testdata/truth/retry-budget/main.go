// Command retry-budget reads items from its upstream and retries a call
// that failed (no answer, or not 200). The correct service retries within
// a budget: each request earns a twentieth of a retry, a retry spends a
// whole one (at most five saved up), and a request makes at most three
// calls; when the upstream fails often, the calls stay near one per
// request. The unbounded variant retries every failure up to five calls,
// a retry storm; the lying one does the same, but its own counter on
// /metrics, retry_upstream_calls_total, counts first calls only.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:8081", "the upstream's address")
	variant := flag.String("variant", "correct", "correct, unbounded or lying")
	flag.Parse()
	// A connection per call, as a client behind a load balancer gets.
	client := &http.Client{Timeout: 200 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	var (
		mu     sync.Mutex
		tokens float64 // retries the budget holds
		calls  atomic.Int64
	)
	retry := func() bool {
		if *variant != "correct" {
			return true
		}
		mu.Lock()
		defer mu.Unlock()
		if tokens < 1 {
			return false
		}
		tokens--
		return true
	}
	maxCalls := 3
	if *variant != "correct" {
		maxCalls = 5
	}
	http.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tokens = min(tokens+0.05, 5)
		mu.Unlock()
		for n := 1; ; n++ {
			if n == 1 || *variant != "lying" {
				calls.Add(1)
			}
			resp, err := client.Get("http://" + *upstream + "/item/" + r.PathValue("id"))
			if err == nil && resp.StatusCode == http.StatusOK {
				defer resp.Body.Close()
				io.Copy(w, resp.Body)
				return
			}
			if err == nil {
				resp.Body.Close()
			}
			if n == maxCalls || !retry() {
				http.Error(w, "upstream failed", http.StatusBadGateway)
				return
			}
		}
	})
	http.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE retry_upstream_calls_total counter\nretry_upstream_calls_total %d\n", calls.Load())
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
