// Command deadline reads items from its upstream with a 100ms deadline and
// answers 504 when the upstream takes longer. The broken variant has no
// deadline: it waits for the upstream however slow it is.
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
	client := &http.Client{Timeout: 100 * time.Millisecond}
	if *variant == "broken" {
		client.Timeout = 0
	}
	http.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		resp, err := client.Get("http://" + *upstream + "/item/" + r.PathValue("id"))
		if err != nil {
			http.Error(w, "upstream too slow", http.StatusGatewayTimeout)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
