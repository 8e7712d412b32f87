// Command json-degraded answers a search from its upstream, or, when the
// upstream fails, a default answer marked {"degraded": true} in the body.
// Variants: "broken" answers 500 instead; "unmarked" serves the default
// answer without the mark, as if it came from the upstream.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:8081", "the upstream's address")
	variant := flag.String("variant", "correct", "correct, broken or unmarked")
	flag.Parse()
	client := &http.Client{Timeout: 200 * time.Millisecond}
	http.HandleFunc("GET /search/{q}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		resp, err := client.Get("http://" + *upstream + "/item/" + r.PathValue("q"))
		if err == nil && resp.StatusCode == http.StatusOK {
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			fmt.Fprintf(w, `{"degraded": false, "results": [%s]}`, body)
			return
		}
		switch *variant {
		case "broken":
			http.Error(w, "search failed", http.StatusInternalServerError)
		case "unmarked":
			io.WriteString(w, `{"degraded": false, "results": []}`)
		default:
			io.WriteString(w, `{"degraded": true, "results": []}`)
		}
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
