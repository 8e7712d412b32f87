// Command no-response-tagged shortens links: POST /links answers 201, GET
// /links/{id} answers the link. The broken variant's creates hang for 2s,
// past the client's timeout: they get no response at all, and must still
// count, with their tag, in every window that selects them.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"sync/atomic"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	variant := flag.String("variant", "correct", "correct or broken")
	flag.Parse()
	var seq atomic.Int64
	http.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	http.HandleFunc("POST /links", func(w http.ResponseWriter, r *http.Request) {
		if *variant == "broken" {
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
				return
			}
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "{\"id\":\"l%d\"}\n", seq.Add(1))
	})
	http.HandleFunc("GET /links/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "{\"id\":%q,\"url\":\"https://example.com/\"}\n", r.PathValue("id"))
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
