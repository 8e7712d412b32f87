// Command chain-lifecycle shortens links: POST /api/links stores a link
// and answers 201 with its code, GET /{code} answers the link, DELETE
// /api/links/{code} deletes it. The scenario drives it with a chain
// (create, read, delete) in which the read and the delete use the code
// the create answered.
//
// The lost-link variant acknowledges every create with a code but stores
// nothing: its reads and deletes answer 404. The failing-create variant
// answers every other create 500: the chains of those creates stop before
// their read, which is never sent.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"sync"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	variant := flag.String("variant", "correct", "correct, lost-link or failing-create")
	flag.Parse()
	var mu sync.Mutex
	n := 0
	links := map[string]string{}
	http.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	http.HandleFunc("POST /api/links", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		n++
		if *variant == "failing-create" && n%2 == 0 {
			http.Error(w, `{"error":"store unavailable"}`, http.StatusInternalServerError)
			return
		}
		code := fmt.Sprintf("c%d", n)
		if *variant != "lost-link" {
			links[code] = "https://example.com/"
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "{\"code\":%q}\n", code)
	})
	http.HandleFunc("GET /{code}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		u, ok := links[r.PathValue("code")]
		mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "{\"url\":%q}\n", u)
	})
	http.HandleFunc("DELETE /api/links/{code}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := links[r.PathValue("code")]; !ok {
			http.NotFound(w, r)
			return
		}
		delete(links, r.PathValue("code"))
		w.WriteHeader(http.StatusNoContent)
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
