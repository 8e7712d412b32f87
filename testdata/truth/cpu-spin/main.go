// Command cpu-spin reads items from its upstream and checks the upstream's
// health every 50ms; it exports its process metrics on /metrics. The
// broken variant, once the upstream comes back after an outage, starts a
// reconnect loop that never sleeps: a CPU spin that no response shows.
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:8081", "the upstream's address")
	variant := flag.String("variant", "correct", "correct or broken")
	flag.Parse()
	client := &http.Client{Timeout: 200 * time.Millisecond}
	get := func(path string) ([]byte, error) {
		resp, err := client.Get("http://" + *upstream + path)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}
	go func() {
		down := false
		for range time.Tick(50 * time.Millisecond) {
			_, err := get("/calls")
			if err == nil && down && *variant == "broken" {
				go func() {
					for n := 0; ; n++ { // the spin
						_ = n * n
					}
				}()
			}
			down = err != nil
		}
	}()
	http.Handle("GET /metrics", promhttp.Handler())
	http.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		body, err := get("/item/" + r.PathValue("id"))
		if err != nil {
			http.Error(w, "upstream failed", http.StatusBadGateway)
			return
		}
		w.Write(body)
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
