// Command tlsservice is a small HTTPS service for chaoskit's tests: it
// answers GET /healthz and GET /items/{id} over TLS, with the certificate
// and key chaoskit generated for it (CHAOSKIT_TLS_CERT, CHAOSKIT_TLS_KEY)
// or the files --cert and --key name.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8443", "address to listen on")
	cert := flag.String("cert", os.Getenv("CHAOSKIT_TLS_CERT"), "certificate file (PEM)")
	key := flag.String("key", os.Getenv("CHAOSKIT_TLS_KEY"), "key file (PEM)")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id": %q, "tls": %t}`+"\n", r.PathValue("id"), r.TLS != nil)
	})
	log.Printf("certificate %s", *cert)
	log.Printf("listening on %s", *listen)
	log.Fatal(http.ListenAndServeTLS(*listen, *cert, *key, mux))
}
