package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/scenarios"
)

// target is a service under test, started by chaoskit or already running.
type target struct {
	desc    string
	baseURL string
	control inject.Controller
	// controlAddr is the control endpoint's base URL, for the record.
	controlAddr string
	hitsURL     string
	proc        *process
	client      *http.Client
}

// startTarget brings the scenario's target up and waits until it is ready.
func (r *run) startTarget(ctx context.Context) (*target, error) {
	t := &target{client: &http.Client{Timeout: 2 * time.Second}}
	spec := r.sc.Target
	switch {
	case spec.Demo != nil:
		t.desc = "demo"
		if err := r.startDemo(ctx, t, spec.Demo.Args); err != nil {
			return t, err
		}
	default:
		t.desc = spec.URL
		t.baseURL = strings.TrimRight(spec.URL, "/")
		if spec.Failpoints != "" {
			t.controlAddr = normalizeURL(spec.Failpoints)
			t.control = inject.NewHTTPController(t.controlAddr)
		}
	}
	t.hitsURL = t.baseURL + spec.Hits
	if err := t.waitReady(ctx, r.opts.ReadyTimeout); err != nil {
		return t, err
	}
	return t, nil
}

func normalizeURL(s string) string {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	return strings.TrimRight(s, "/")
}

// startDemo runs `<self> demo serve` with a failpoint control endpoint on a
// free loopback port. A port taken between choosing and binding it makes
// the child exit at once; that is retried with another port.
func (r *run) startDemo(ctx context.Context, t *target, args []string) error {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return infra("no free loopback port for the failpoint endpoint", "", err)
		}
		ctrl := "127.0.0.1:" + strconv.Itoa(port)
		argv := append([]string{r.opts.Self, "demo", "serve", "--listen", "127.0.0.1:0"}, args...)
		proc, err := startProcess(argv, []string{"GO_FAILPOINTS_HTTP=" + ctrl},
			"", filepath.Join(r.dir, "target.stdout"), filepath.Join(r.dir, "target.stderr"))
		if err != nil {
			return infra(fmt.Sprintf("cannot start the demo target %s", r.opts.Self), "check that the chaoskit binary exists and is executable", err)
		}
		r.event(processEvent("started", map[string]any{"pid": proc.pid(), "argv": argv}))
		addr, err := proc.waitLine(ctx, "listening on ", r.opts.ReadyTimeout)
		if err != nil {
			proc.stop(time.Second)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			lastErr = err
			if strings.Contains(err.Error(), "address already in use") {
				continue
			}
			return infra("the demo target did not start", "see target.stderr in the run directory", err)
		}
		if err := scenarios.CheckLoopback(addr); err != nil {
			proc.stop(time.Second)
			return infra("the demo target listens on a non-loopback address", "", err)
		}
		t.proc = proc
		t.baseURL = "http://" + addr
		t.controlAddr = "http://" + ctrl
		t.control = inject.NewHTTPController(ctrl)
		return nil
	}
	return infra("the demo target did not start", "free some loopback ports and retry", lastErr)
}

// freePort asks the kernel for a free loopback TCP port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls /healthz and the control endpoint until both answer.
func (t *target) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	health := t.baseURL + "/healthz"
	var last error
	for {
		if t.proc != nil && t.proc.exited() {
			return infra("the target exited before it was ready", "see target.stderr in the run directory", fmt.Errorf("%s", t.proc.exitDescription()))
		}
		last = t.probe(ctx, health)
		if last == nil && t.control != nil {
			_, last = t.control.Active(ctx)
		}
		if last == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return infra(fmt.Sprintf("the target was not ready within %v", timeout), "check the readiness path and that the service listens where the scenario says", last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func (t *target) probe(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// hits reads the target's fault-hit report; ok is false when the target
// does not serve one.
func (t *target) hits(ctx context.Context) (rep inject.HitsReport, ok bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.hitsURL, nil)
	if err != nil {
		return rep, false, err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return rep, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return rep, false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return rep, false, fmt.Errorf("GET %s: %s", t.hitsURL, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&rep); err != nil {
		return rep, false, fmt.Errorf("GET %s: %w", t.hitsURL, err)
	}
	return rep, true, nil
}
