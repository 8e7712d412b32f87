// Command _upstream is the dependency the truth corpus's services call: a
// key-value store over HTTP, in memory. GET /item/{id} answers a fixed
// item, {"id":"7","name":"item 7"}; GET /kv/{key} answers the value or
// 404, PUT /kv/{key} stores the body, GET /calls says how many requests it
// has answered (an upstream's own count, for contracts that must not take
// the service's word for it).
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync"
	"sync/atomic"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "address to listen on")
	flag.Parse()
	var (
		mu    sync.Mutex
		kv    = map[string][]byte{}
		calls atomic.Int64
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /item/{id}", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		id := r.PathValue("id")
		fmt.Fprintf(w, "{\"id\":%q,\"name\":%q}\n", id, "item "+id)
	})
	mux.HandleFunc("GET /kv/{key}", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		mu.Lock()
		v, ok := kv[r.PathValue("key")]
		mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(v)
	})
	mux.HandleFunc("PUT /kv/{key}", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		v, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		kv[r.PathValue("key")] = v
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /calls", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "{\"calls\": %d}\n", calls.Load())
	})
	log.Fatal(http.ListenAndServe(*listen, mux))
}
