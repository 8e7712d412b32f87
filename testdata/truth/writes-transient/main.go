// Command writes-transient keeps notes. POST /notes answers 201 with the
// note; GET /notes/{id} reads one back, but its first two reads of each
// note answer 503, as a store still warming up does. The broken variant
// also acknowledges every tenth note without keeping it; the variant
// unavailable is the correct store whose reads answer 503 for a minute.
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
	variant := flag.String("variant", "correct", "correct, unavailable or broken")
	flag.Parse()
	failReads := 2
	if *variant == "unavailable" {
		failReads = 1 << 30
	}
	var mu sync.Mutex
	notes := map[string]note{}
	reads := map[string]int{}
	n := 0
	http.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	http.HandleFunc("POST /notes", func(w http.ResponseWriter, r *http.Request) {
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
	})
	http.HandleFunc("GET /notes/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		mu.Lock()
		reads[id]++
		tries := reads[id]
		v, ok := notes[id]
		mu.Unlock()
		switch {
		case tries <= failReads:
			http.Error(w, "warming up", http.StatusServiceUnavailable)
		case !ok:
			http.NotFound(w, r)
		default:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(v)
		}
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
