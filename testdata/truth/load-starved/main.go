// Command load-starved answers each request at once; the broken variant
// takes 200ms over each, so that chaoskit's few workers cannot send the
// load the scenario plans, and no verdict may rest on the run.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	variant := flag.String("variant", "correct", "correct or broken")
	flag.Parse()
	http.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	http.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		if *variant == "broken" {
			time.Sleep(200 * time.Millisecond)
		}
		fmt.Fprintf(w, "{\"id\":%q}\n", r.PathValue("id"))
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
