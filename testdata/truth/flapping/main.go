// Command flapping reads items from its upstream and serves the last copy
// of each while the upstream is down. The broken variant empties its cache
// when the upstream comes back and never fills it again, so it survives
// the first outage and not the second.
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
		cache             sync.Map
		failed, recovered atomic.Bool
	)
	http.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		resp, err := client.Get("http://" + *upstream + "/item/" + id)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				if *variant == "broken" && failed.Load() && !recovered.Swap(true) {
					cache.Clear()
				}
				if !recovered.Load() || *variant != "broken" {
					cache.Store(id, body)
				}
				w.Header().Set("X-Chaoskit-Source", "primary")
				w.Write(body)
				return
			}
		}
		failed.Store(true)
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
