// Command sticky-fallback reads items from its upstream and serves the last
// copy of each while the upstream is down. The broken variant, once the
// upstream has failed, stays on its copies for good: it never recovers.
package main

import (
	"flag"
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
	variant := flag.String("variant", "correct", "correct or broken")
	flag.Parse()
	client := &http.Client{Timeout: 200 * time.Millisecond}
	var (
		cache  sync.Map
		sticky atomic.Bool
	)
	http.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if !sticky.Load() {
			resp, err := client.Get("http://" + *upstream + "/item/" + id)
			if err == nil {
				body, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				if rerr == nil && resp.StatusCode == http.StatusOK {
					cache.Store(id, body)
					w.Header().Set("X-Chaoskit-Source", "primary")
					w.Write(body)
					return
				}
			}
			sticky.Store(*variant == "broken")
		}
		copy, ok := cache.Load(id)
		if !ok {
			http.Error(w, "upstream failed", http.StatusBadGateway)
			return
		}
		w.Header().Set("X-Chaoskit-Source", "cache")
		w.Write(copy.([]byte))
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
