// Command error-baseline reads items from its upstream and keeps the last
// copy of each; one item in ten is always missing upstream and answers 500
// (a known, steady error rate). When the upstream is down the correct
// variant serves its copies; the broken one answers 500.
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"strings"
	"sync"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:8081", "the upstream's address")
	variant := flag.String("variant", "correct", "correct or broken")
	flag.Parse()
	client := &http.Client{Timeout: 200 * time.Millisecond}
	var cache sync.Map
	http.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if strings.HasSuffix(id, "0") {
			http.Error(w, "item broken for good", http.StatusInternalServerError)
			return
		}
		resp, err := client.Get("http://" + *upstream + "/item/" + id)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				cache.Store(id, body)
				w.Write(body)
				return
			}
		}
		if copy, ok := cache.Load(id); ok && *variant != "broken" {
			w.Header().Set("X-Chaoskit-Source", "cache")
			w.Write(copy.([]byte))
			return
		}
		http.Error(w, "upstream failed", http.StatusInternalServerError)
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
