package testserver

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Prometheus is a Prometheus server started for one test.
type Prometheus struct {
	*Server
}

// URL returns the server's base URL, for its HTTP API.
func (p *Prometheus) URL() string { return "http://" + p.Addr() }

// StartPrometheus starts Debian's prometheus on a free loopback port,
// scraping the given loopback targets (host:port, path /metrics) every
// second, with its data in the test's temporary directory, and stops it
// when the test ends. It skips the test if prometheus is not installed
// (fails under CI).
func StartPrometheus(t testing.TB, targets ...string) *Prometheus {
	t.Helper()
	bin := binary(t, "prometheus", "/usr/bin/prometheus")
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, a := range targets {
		quoted[i] = strconv.Quote(a)
	}
	config := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: test\n    static_configs:\n      - targets: [%s]\n", strings.Join(quoted, ", "))
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Server{
		t: t, name: "prometheus", port: freePort(t), dir: dir, ready: prometheusReady, stopSignal: syscall.SIGTERM,
		argv: func(port int) []string {
			return []string{bin,
				"--config.file=" + cfgPath, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
				"--web.listen-address=127.0.0.1:" + strconv.Itoa(port), "--log.level=warn",
			}
		},
	}
	t.Cleanup(s.Stop)
	s.start(true)
	return &Prometheus{s}
}

// prometheusReady wants 200 from /-/ready.
func prometheusReady(ctx context.Context, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/-/ready", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/-/ready: %s", resp.Status)
	}
	return nil
}
