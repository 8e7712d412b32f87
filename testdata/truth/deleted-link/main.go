// Command deleted-link shortens links behind a token: POST /api/tokens
// answers a token, POST /api/links stores a link and answers 201 with its
// code, GET /{code} redirects to the link (302) for a request that
// carries the token, DELETE /api/links/{code} deletes it (204). Redirects
// are served from a cache in front of the store, filled on the first
// read.
//
// The correct variant removes a deleted link from the cache too. The
// stale-cache variant deletes it from the store only: the cache, which
// nothing invalidates, keeps redirecting it.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"sync"
)

const token = "t-1"

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	variant := flag.String("variant", "correct", "correct or stale-cache")
	flag.Parse()
	var mu sync.Mutex
	n := 0
	store := map[string]string{}
	cache := map[string]string{}
	http.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	http.HandleFunc("POST /api/tokens", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"token\":%q}\n", token)
	})
	http.HandleFunc("POST /api/links", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		n++
		code := fmt.Sprintf("c%d", n)
		store[code] = fmt.Sprintf("https://example.com/%d", n)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "{\"code\":%q}\n", code)
	})
	http.HandleFunc("GET /{code}", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		code := r.PathValue("code")
		mu.Lock()
		u, ok := cache[code]
		if !ok {
			if u, ok = store[code]; ok {
				cache[code] = u
			}
		}
		mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.Redirect(w, r, u, http.StatusFound)
	})
	http.HandleFunc("DELETE /api/links/{code}", func(w http.ResponseWriter, r *http.Request) {
		code := r.PathValue("code")
		mu.Lock()
		defer mu.Unlock()
		if _, ok := store[code]; !ok {
			http.NotFound(w, r)
			return
		}
		delete(store, code)
		if *variant == "correct" {
			delete(cache, code)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
