// Command tenant-marker answers quotes, and when its quote fault point
// fires it serves a default quote and says so in X-Served-By: default
// (origin otherwise). It hands each request down to the fault point with
// inject.Middleware, so a fault meant for one tenant's requests fires for
// those only. Variants: "no-context" calls Fire without the request's
// context (the fault never fires, and chaoskit sees its marker never
// fired); "everyone" acts on the fault whatever the request (every tenant
// gets it).
package main

import (
	"context"
	"flag"
	"io"
	"log"
	"net/http"

	"github.com/chaoskit/chaoskit/inject"
)

var quote = inject.NewSwitch("quote")

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	variant := flag.String("variant", "correct", "correct, no-context or everyone")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /quote/{id}", func(w http.ResponseWriter, r *http.Request) {
		faulted := false
		if v, ok := quote.Eval(); ok {
			switch *variant {
			case "no-context":
				faulted = inject.Fire(context.Background(), v) != nil
			case "everyone":
				if _, _, faulted = inject.Decode(v); faulted {
					inject.CountHit(v)
				}
			default:
				faulted = inject.Fire(r.Context(), v) != nil
			}
		}
		if faulted {
			w.Header().Set("X-Served-By", "default")
			io.WriteString(w, `{"quote":"default"}`+"\n")
			return
		}
		w.Header().Set("X-Served-By", "origin")
		io.WriteString(w, `{"quote":"`+r.PathValue("id")+`"}`+"\n")
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {})
	mux.Handle(inject.HitsPath, inject.HitsHandler(func() bool { return true }, []string{quote.Path()}))
	log.Fatal(http.ListenAndServe(*listen, inject.Middleware(mux)))
}
