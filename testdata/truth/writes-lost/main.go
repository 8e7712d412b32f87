// Command writes-lost stores notes in its upstream. POST /notes answers
// 201 with the note once the upstream has it, 503 when it could not store
// it; GET /notes/{id} reads one back. The broken variant answers 201 even
// when the upstream refused the note: an acknowledged write is lost.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync/atomic"
	"time"
)

type note struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:8081", "the upstream's address")
	variant := flag.String("variant", "correct", "correct or broken")
	flag.Parse()
	client := &http.Client{Timeout: 200 * time.Millisecond}
	var seq atomic.Int64
	http.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	http.HandleFunc("POST /notes", func(w http.ResponseWriter, r *http.Request) {
		var n note
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n.ID = fmt.Sprintf("n%d", seq.Add(1))
		body, _ := json.Marshal(n)
		req, _ := http.NewRequest(http.MethodPut, "http://"+*upstream+"/kv/"+n.ID, bytes.NewReader(body))
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				err = fmt.Errorf("upstream: %s", resp.Status)
			}
		}
		if err != nil && *variant != "broken" {
			http.Error(w, "not stored", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(body)
	})
	http.HandleFunc("GET /notes/{id}", func(w http.ResponseWriter, r *http.Request) {
		resp, err := client.Get("http://" + *upstream + "/kv/" + r.PathValue("id"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
