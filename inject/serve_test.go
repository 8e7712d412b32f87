package inject

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestServeFromEnvNeedsToken starts this test binary the way chaoskit
// starts a service, with ControlEnv and TokenEnv set: the package's init
// serves the endpoint, which switches a failpoint for the run's token and
// refuses a request without it or with another one.
func TestServeFromEnvNeedsToken(t *testing.T) {
	if os.Getenv("INJECT_SERVE_CHILD") != "" {
		fmt.Printf("served %q\n", os.Getenv(ControlEnv)) // init took it out
		time.Sleep(time.Minute)
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const token = "3f1c9a-run-token"
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeFromEnvNeedsToken$")
	cmd.Env = append(os.Environ(), "INJECT_SERVE_CHILD=1", ControlEnv+"="+addr, TokenEnv+"="+token)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "served \"\"\n" {
		t.Fatalf("child said %q, want it to have served and cleared %s", line, ControlEnv)
	}
	ctx := context.Background()
	const point = "example.com/svc/store/query"
	for _, bad := range []string{"", "wrong-token", token + "x"} {
		c := NewHTTPController(addr)
		c.Token = bad
		if err := c.Enable(ctx, point, "return(true)"); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("token %q: Enable = %v, want ErrUnauthorized", bad, err)
		}
		if _, err := c.Active(ctx); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("token %q: Active = %v, want ErrUnauthorized", bad, err)
		}
	}
	// A raw request without the header: 401, whatever the method.
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, "http://"+addr+"/"+point, strings.NewReader("return(true)"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without a token: %d, want 401", m, resp.StatusCode)
		}
	}
	c := NewHTTPController(addr)
	c.Token = token
	if act, err := c.Active(ctx); err != nil || len(act) != 0 {
		t.Fatalf("after refused requests: active %v, %v; want nothing on", act, err)
	}
	if err := c.Enable(ctx, point, "return(true)"); err != nil {
		t.Fatal(err)
	}
	if act, err := c.Active(ctx); err != nil || act[point] != "return(true)" {
		t.Fatalf("active %v, %v", act, err)
	}
	if err := c.Disable(ctx, point); err != nil {
		t.Fatal(err)
	}
}

func TestServeControlRefuses(t *testing.T) {
	for _, tc := range []struct{ addr, token, want string }{
		{"127.0.0.1:0", "", "without " + TokenEnv},
		{"0.0.0.0:0", "t", "loopback only"},
		{"example.com:80", "t", "loopback only"},
	} {
		ln, err := ServeControl(tc.addr, tc.token)
		if err == nil {
			ln.Close()
			t.Errorf("ServeControl(%q, %q) served", tc.addr, tc.token)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ServeControl(%q, %q) = %v, want %q", tc.addr, tc.token, err, tc.want)
		}
	}
}
