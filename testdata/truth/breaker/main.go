// Command breaker reads items from its upstream through a circuit breaker:
// five failures in a row open it, it refuses calls with a fast 503 for
// 500ms, then lets one probe through and closes when the probe succeeds.
// GET /state says the breaker's state and how many upstream calls were
// made. The broken variant has no breaker: it calls the upstream every time.
package main

import (
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
	"sync"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:8081", "the upstream's address")
	variant := flag.String("variant", "correct", "correct or broken")
	flag.Parse()
	client := &http.Client{Timeout: 200 * time.Millisecond}
	var (
		mu       sync.Mutex
		failures int
		openedAt time.Time
		state    = "closed"
		calls    int
	)
	http.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if state == "open" && time.Since(openedAt) >= 500*time.Millisecond {
			state = "half-open"
		} else if state != "closed" {
			mu.Unlock()
			http.Error(w, "breaker open", http.StatusServiceUnavailable)
			return
		}
		calls++
		mu.Unlock()
		resp, err := client.Get("http://" + *upstream + "/item/" + r.PathValue("id"))
		if err == nil && resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			err = io.ErrUnexpectedEOF
		}
		mu.Lock()
		if err != nil {
			failures++
			if *variant != "broken" && (state == "half-open" || failures >= 5) {
				state, openedAt = "open", time.Now()
			}
		} else {
			failures, state = 0, "closed"
		}
		mu.Unlock()
		if err != nil {
			http.Error(w, "upstream failed", http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		io.Copy(w, resp.Body)
	})
	http.HandleFunc("GET /state", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{
			"breakers": map[string]any{"up": map[string]string{"state": state}},
			"calls":    calls,
		})
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
