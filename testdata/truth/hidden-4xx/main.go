// Command hidden-4xx reads items from its upstream. When the upstream
// fails, the correct variant answers 502; the broken one answers 404
// {"errors":{"items":"Invalid param"}}, as some REST services do, so the
// fault hides behind a client error.
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:8081", "the upstream's address")
	variant := flag.String("variant", "correct", "correct or broken")
	flag.Parse()
	client := &http.Client{Timeout: 200 * time.Millisecond}
	http.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		resp, err := client.Get("http://" + *upstream + "/item/" + r.PathValue("id"))
		if err == nil && resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			if *variant == "broken" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, `{"errors":{"items":"Invalid param"}}`)
				return
			}
			http.Error(w, "upstream failed", http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		io.Copy(w, resp.Body)
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
