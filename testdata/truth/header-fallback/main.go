// Command header-fallback reads items from its upstream and keeps the last
// copy of each. When the upstream fails it serves that copy and says so in
// X-Served-By: cache (origin otherwise). Variants: "broken" has no
// fallback and answers 502; "lying" says cache but serves an empty item.
package main

import (
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
	variant := flag.String("variant", "correct", "correct, broken or lying")
	flag.Parse()
	client := &http.Client{Timeout: 200 * time.Millisecond}
	var cache sync.Map
	http.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		w.Header().Set("Content-Type", "application/json")
		resp, err := client.Get("http://" + *upstream + "/item/" + id)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				cache.Store(id, body)
				w.Header().Set("X-Served-By", "origin")
				w.Write(body)
				return
			}
		}
		copy, ok := cache.Load(id)
		switch {
		case *variant == "lying":
			w.Header().Set("X-Served-By", "cache")
			io.WriteString(w, "{}\n")
		case *variant == "broken" || !ok:
			http.Error(w, "upstream failed", http.StatusBadGateway)
		default:
			w.Header().Set("X-Served-By", "cache")
			w.Write(copy.([]byte))
		}
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
