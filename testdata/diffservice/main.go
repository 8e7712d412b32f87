// Command diffservice is the fixture of chaoskit diff's tests: a service
// that answers from a default when its store fails. The tests commit it to
// a git repository twice, the second time with a slower fallback, and diff
// the two revisions; --no-fallback is the broken variant a target command
// diffs against.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"time"

	"example.com/diffservice/store"
)

// fallback is what a read answers when the store fails.
func fallback(id int) string {
	return fmt.Sprintf("default-%d", id)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "loopback address to listen on")
	noFallback := flag.Bool("no-fallback", false, "answer 503 when the store fails (a broken variant: the fallback removed)")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("diffservice: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.Atoi(r.PathValue("id"))
		if err != nil {
			http.Error(w, "bad id", http.StatusBadRequest)
			return
		}
		name, err := store.Get(r.Context(), id)
		source := "primary"
		switch {
		case err != nil && *noFallback:
			http.Error(w, "store failed", http.StatusServiceUnavailable)
			return
		case err != nil:
			name, source = fallback(id), "fallback"
		}
		w.Header().Set("X-Source", source)
		fmt.Fprintln(w, name)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	fmt.Printf("listening on %s\n", ln.Addr())
	log.Fatal(srv.Serve(ln))
}
