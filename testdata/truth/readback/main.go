// Command readback keeps notes in memory behind a bearer token. POST
// /notes answers 201 with the note; GET /notes/{id} reads it back, needs
// "Authorization: Bearer s3cret" (401 without), and answers the first read
// of each note 503, as a replica that has not caught up would. Variants:
// "lossy" acknowledges every tenth note without keeping it; "unavailable"
// answers every read 503.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"sync"
)

type note struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	variant := flag.String("variant", "correct", "correct, lossy or unavailable")
	flag.Parse()
	var (
		mu    sync.Mutex
		notes = map[string]note{}
		read  = map[string]bool{}
		seq   int
	)
	http.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	http.HandleFunc("POST /notes", func(w http.ResponseWriter, r *http.Request) {
		var n note
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		seq++
		n.ID = fmt.Sprintf("n%d", seq)
		if *variant != "lossy" || seq%10 != 0 {
			notes[n.ID] = n
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(n)
	})
	http.HandleFunc("GET /notes/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		id := r.PathValue("id")
		mu.Lock()
		n, ok := notes[id]
		first := !read[id]
		read[id] = true
		mu.Unlock()
		if first || *variant == "unavailable" {
			http.Error(w, "not caught up yet", http.StatusServiceUnavailable)
			return
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(n)
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
