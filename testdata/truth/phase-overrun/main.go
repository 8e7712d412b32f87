// Command phase-overrun reads items from its upstream with a 100ms
// deadline and answers a default item, marked X-Source: default, when the
// upstream takes longer. The broken variant has no deadline: a hanging
// upstream holds every request, and with it the phase they were sent in,
// past its planned end.
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:8081", "the upstream's address")
	variant := flag.String("variant", "correct", "correct or broken")
	flag.Parse()
	client := &http.Client{Timeout: 100 * time.Millisecond}
	if *variant == "broken" {
		client.Timeout = 0
	}
	http.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		resp, err := client.Get("http://" + *upstream + "/item/" + r.PathValue("id"))
		if err != nil {
			w.Header().Set("X-Source", "default")
			io.WriteString(w, `{"id":"`+r.PathValue("id")+`","name":"unknown"}`)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("X-Source", "primary")
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
