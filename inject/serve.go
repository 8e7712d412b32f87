package inject

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/pingcap/failpoint"
)

// ControlEnv and TokenEnv are the environment variables chaoskit sets for a
// service it starts: the loopback address of the failpoint control endpoint
// and the run's control token. A process that imports this package and
// finds ControlEnv set serves ControlHandler(token) there (see init), the
// way pingcap/failpoint serves its open endpoint on GO_FAILPOINTS_HTTP.
const (
	ControlEnv = "CHAOSKIT_FAILPOINTS_HTTP"
	TokenEnv   = "CHAOSKIT_FAILPOINTS_TOKEN"
)

// TokenHeader is the request header that carries the control token, as
// "Bearer TOKEN".
const TokenHeader = "Authorization"

// ControlHandler serves pingcap/failpoint's control protocol (PUT /PATH sets
// a term, DELETE /PATH switches it off, GET / lists "path=term" lines) to
// requests whose Authorization header is "Bearer " + token. Every other
// request gets 401 and changes nothing. An empty token refuses every
// request: an endpoint without a token is never open.
//
// chaoskit makes a token for each run and hands it to the service it starts
// in TokenEnv. A service that serves the endpoint on its own listener mounts
//
//	mux.Handle("/", inject.ControlHandler(os.Getenv(inject.TokenEnv)))
//
// on a loopback-only server, and the scenario's target.failpoints names it.
func ControlHandler(token string) http.Handler {
	want := []byte("Bearer " + token)
	next := &failpoint.HttpHandler{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get(TokenHeader))
		if token == "" || subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="chaoskit failpoints"`)
			http.Error(w, "the failpoint control endpoint needs the run's token (Authorization: Bearer, from "+TokenEnv+")", http.StatusUnauthorized)
			return
		}
		Arm()
		next.ServeHTTP(w, r)
	})
}

// ServeControl serves ControlHandler(token) on addr, which must be a
// loopback host:port. It returns once the listener is bound.
func ServeControl(addr, token string) (net.Listener, error) {
	if token == "" {
		return nil, fmt.Errorf("%s=%s is set without %s: the failpoint control endpoint is never served without a token", ControlEnv, addr, TokenEnv)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %v", ControlEnv, addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%s=%s: the failpoint control endpoint listens on loopback only (127.0.0.1, ::1)", ControlEnv, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	go func() { _ = http.Serve(ln, ControlHandler(token)) }()
	return ln, nil
}

// init serves the guarded control endpoint when chaoskit asked for it, and
// takes ControlEnv out of the environment so that a process the service
// starts (which may import this package too) does not try to bind the same
// address. A failure ends the process, as pingcap/failpoint's does for
// GO_FAILPOINTS_HTTP: a service without its control endpoint would run a
// scenario's faults in vain.
func init() {
	addr := strings.TrimSpace(os.Getenv(ControlEnv))
	if addr == "" {
		return
	}
	if _, err := ServeControl(addr, os.Getenv(TokenEnv)); err != nil {
		fmt.Fprintln(os.Stderr, "failpoint control endpoint:", err)
		os.Exit(1)
	}
	os.Unsetenv(ControlEnv)
}
