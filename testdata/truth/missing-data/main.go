// Command missing-data serves items from its upstream and keeps the last
// copy of each. While the upstream is down it serves that copy, marked
// X-Cache: HIT with its age in X-Cache-Age (milliseconds), and a JSON
// answer for an item it has no copy of. The broken variant answers its
// errors as plain text; the variant no-age serves copies without saying
// how old they are; the variant wrong-copy serves a body that is not the
// copy it kept.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync"
	"time"
)

type copyOf struct {
	body []byte
	at   time.Time
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:8081", "the upstream's address")
	variant := flag.String("variant", "correct", "correct, broken, no-age or wrong-copy")
	flag.Parse()
	client := &http.Client{Timeout: 200 * time.Millisecond}
	var mu sync.Mutex
	cache := map[string]copyOf{}
	http.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	http.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		w.Header().Set("Content-Type", "application/json")
		resp, err := client.Get("http://" + *upstream + "/item/" + id)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				mu.Lock()
				cache[id] = copyOf{body, time.Now()}
				mu.Unlock()
				w.Write(body)
				return
			}
		}
		mu.Lock()
		c, ok := cache[id]
		mu.Unlock()
		switch {
		case ok:
			w.Header().Set("X-Cache", "HIT")
			if *variant != "no-age" {
				w.Header().Set("X-Cache-Age", fmt.Sprint(time.Since(c.at).Milliseconds()))
			}
			if *variant == "wrong-copy" {
				fmt.Fprintf(w, `{"id": %q}`+"\n", id)
				return
			}
			w.Write(c.body)
		case *variant == "broken":
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "upstream down, try again later")
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"error": "upstream down", "id": %q}`+"\n", id)
		}
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
