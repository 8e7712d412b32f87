// Command writes-auth keeps notes behind a bearer token: every request,
// reads included, needs "Authorization: Bearer TOKEN", and gets 401
// without it. POST /notes answers 201 with the note; GET /notes/{id}
// reads one back. The broken variant acknowledges every tenth note
// without keeping it. The variant forgot-header is the correct service;
// its scenario sends read-backs without the token.
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
	token := flag.String("token", "", "the bearer token every request needs")
	variant := flag.String("variant", "correct", "correct, forgot-header or broken")
	flag.Parse()
	var mu sync.Mutex
	notes := map[string]note{}
	n := 0
	auth := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+*token {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			h(w, r)
		}
	}
	http.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	http.HandleFunc("POST /notes", auth(func(w http.ResponseWriter, r *http.Request) {
		var in note
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		n++
		in.ID = fmt.Sprintf("n%d", n)
		if *variant != "broken" || n%10 != 0 {
			notes[in.ID] = in
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(in)
	}))
	http.HandleFunc("GET /notes/{id}", auth(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		v, ok := notes[r.PathValue("id")]
		mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}))
	log.Fatal(http.ListenAndServe(*listen, nil))
}
