// Command _prices is an HTTP dependency of the truth corpus: GET
// /price/{id} answers {"id":"7","price":107}. It speaks HTTP/1.1 and
// HTTP/2 without TLS (h2c), so that a proxy in front of it can be reached
// either way. It knows nothing of faults: the HTTP proxy between it and
// the service makes them.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"strconv"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8082", "address to listen on")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /price/{id}", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.PathValue("id"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"id\":%q,\"price\":%d}\n", r.PathValue("id"), 100+n)
	})
	srv := &http.Server{Addr: *listen, Handler: mux, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	log.Fatal(srv.ListenAndServe())
}
