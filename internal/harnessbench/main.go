// Command harnessbench measures what chaoskit's recording costs: it starts
// a trivial HTTP server on loopback (itself, in a child process), drives it
// at one rate with raw vegeta (the CLI of the module version go.mod pins)
// and with chaoskit, one after the other and alternating for -runs rounds,
// and prints the same figures for both: the rate reached,
// the p99 and mean latency each recorded, the peak RSS, and the bytes per
// request on disk. `make bench-harness` runs it; BENCHMARKS.md ("The
// harness at scale") holds its output.
//
// Every figure is a ratio within one invocation, raw vegeta against
// chaoskit on the same machine at the same moment: the load average is
// printed with them, since other work on the machine moves both.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		serve(os.Args[2])
		return
	}
	chaoskit := flag.String("chaoskit", "bin/chaoskit", "the chaoskit binary")
	vegeta := flag.String("vegeta", "bin/vegeta", "the vegeta binary (go build github.com/tsenart/vegeta/v12)")
	rate := flag.Int("rate", 10_000, "requests per second")
	duration := flag.Duration("duration", 10*time.Second, "how long each attack lasts")
	runs := flag.Int("runs", 3, "rounds of raw vegeta and chaoskit, alternating; the median of each figure is printed")
	keep := flag.String("keep", "", "keep the chaoskit run directory of the last round here")
	only := flag.Bool("chaoskit-only", false, "run chaoskit only (the 10-minute run: its memory and its timeline)")
	flag.Parse()
	if err := bench(*chaoskit, *vegeta, *rate, *duration, *runs, *keep, *only); err != nil {
		fmt.Fprintln(os.Stderr, "harnessbench:", err)
		os.Exit(1)
	}
}

// serve answers every request with a small JSON body, on loopback.
func serve(addr string) {
	body := []byte(`{"id":7,"name":"widget","price_cents":1299}`)
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	srv := &http.Server{Addr: addr, ReadHeaderTimeout: 5 * time.Second}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// figures are one tool's measurements of one round.
type figures struct {
	rate, p99, mean float64 // per second; milliseconds
	rss             float64 // MB
	cpu             float64 // seconds, user and system
	requests        int
	onDisk          float64 // bytes per request: the timeline
	results         float64 // bytes per request: results.bin
}

func bench(chaoskit, vegeta string, rate int, du time.Duration, runs int, keep string, only bool) error {
	for _, p := range []string{chaoskit, vegeta} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s: %w (make bench-harness builds it)", p, err)
		}
	}
	dir, err := os.MkdirTemp("", "harnessbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	srv := exec.Command(self, "serve", addr)
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	if err := waitUp("http://" + addr + "/"); err != nil {
		return err
	}
	var raw, ck []figures
	for i := range runs {
		if only {
			raw = append(raw, figures{})
		} else {
			r, err := runVegeta(vegeta, dir, addr, rate, du)
			if err != nil {
				return err
			}
			raw = append(raw, r)
		}
		runDir := filepath.Join(dir, fmt.Sprintf("chaoskit-%d", i))
		c, err := runChaoskit(chaoskit, runDir, addr, rate, du)
		if err != nil {
			return err
		}
		ck = append(ck, c)
		if keep != "" && i == runs-1 {
			os.RemoveAll(keep)
			if err := os.Rename(runDir, keep); err != nil {
				fmt.Fprintln(os.Stderr, "harnessbench: cannot keep the run directory:", err)
			}
		} else {
			os.RemoveAll(runDir)
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("harnessbench: %d req/s for %v against a trivial loopback server, %d rounds (median of each), %s, %d CPUs, load average %s\n",
		rate, du, runs, runtime.GOARCH, runtime.NumCPU(), strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Println()
	fmt.Println("| figure | raw vegeta | chaoskit | ratio |")
	fmt.Println("|---|---|---|---|")
	row := func(name, unit string, get func(figures) float64, ratio bool) {
		a, b := median(raw, get), median(ck, get)
		r := "—"
		if ratio && a > 0 {
			r = fmt.Sprintf("%.2f×", b/a)
		}
		av := fmt.Sprintf("%.3g %s", a, unit)
		if a == 0 {
			av = "—"
		}
		fmt.Printf("| %s | %s | %.3g %s | %s |\n", name, av, b, unit, r)
	}
	n := median(ck, func(f figures) float64 { return float64(f.requests) })
	row(fmt.Sprintf("%d req/s for %v: rate reached", rate, du), "/s", func(f figures) float64 { return f.rate }, true)
	row("same: p99 latency it measured", "ms", func(f figures) float64 { return f.p99 }, true)
	row("same: mean latency", "ms", func(f figures) float64 { return f.mean }, true)
	row(fmt.Sprintf("peak RSS, %.0fk requests", n/1000), "MB", func(f figures) float64 { return f.rss }, true)
	row("CPU time (user + system)", "s", func(f figures) float64 { return f.cpu }, true)
	row("timeline on disk", "B/request", func(f figures) float64 { return f.onDisk }, false)
	row("results.bin on disk", "B/request", func(f figures) float64 { return f.results }, true)
	return nil
}

func median(fs []figures, get func(figures) float64) float64 {
	v := make([]float64, len(fs))
	for i, f := range fs {
		v[i] = get(f)
	}
	sort.Float64s(v)
	return v[len(v)/2]
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitUp(url string) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("the loopback server did not come up")
}

// run runs cmd and returns its peak RSS in MB and the CPU time it took.
func run(cmd *exec.Cmd) (rss, cpu float64, err error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 { // 1: a contract failed, still measured
			return 0, 0, fmt.Errorf("%s: %v\n%s", cmd.Path, err, stderr.String())
		}
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0, errors.New("no rusage")
	}
	cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	return float64(ru.Maxrss) / 1024, cpu, nil // kB on Linux
}

func runVegeta(vegeta, dir, addr string, rate int, du time.Duration) (figures, error) {
	results := filepath.Join(dir, "vegeta.bin")
	attack := exec.Command(vegeta, "attack", fmt.Sprintf("-rate=%d", rate), "-duration="+du.String(), "-max-workers=500", "-output="+results)
	attack.Stdin = strings.NewReader("GET http://" + addr + "/products/7\n")
	rss, cpu, err := run(attack)
	if err != nil {
		return figures{}, err
	}
	out, err := exec.Command(vegeta, "report", "-type=json", results).Output()
	if err != nil {
		return figures{}, fmt.Errorf("vegeta report: %w", err)
	}
	var rep struct {
		Requests  int     `json:"requests"`
		Rate      float64 `json:"rate"`
		Latencies struct {
			Mean int64 `json:"mean"`
			P99  int64 `json:"99th"`
		} `json:"latencies"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return figures{}, err
	}
	st, _ := os.Stat(results)
	os.Remove(results)
	return figures{rate: rep.Rate, p99: ms(rep.Latencies.P99), mean: ms(rep.Latencies.Mean), rss: rss, cpu: cpu, requests: rep.Requests,
		results: float64(st.Size()) / float64(max(rep.Requests, 1))}, nil
}

// scenario is the load of one chaoskit round: three phases splitting the
// duration, with contracts on every phase and on the whole run, so that
// judging costs what it costs in a real run.
const scenario = `name: harness-bench
description: the harness's own cost, against a trivial loopback server
target:
  url: http://%[1]s
load:
  rate: %[2]d/s
  timeout: 5s
  max_workers: 1000
  requests:
    - path: /products/{1..50}
phases:
  - name: before
    duration: %[3]v
  - name: middle
    duration: %[3]v
  - name: after
    duration: %[3]v
contracts:
  - name: before
    phase: before
    expect:
      - status == 200 for >= 99%%
      - p99 latency < 1s
  - name: middle
    phase: middle
    settle: 100ms
    expect:
      - status == 200 for >= 99%%
      - primary >= 99%%
      - p99 latency < 1s
  - name: after
    phase: after
    expect:
      - status == 200 for >= 99%%
      - p999 latency < 2s
  - name: the whole run
    expect:
      - status 5xx <= 1%%
      - rps >= 100
`

func runChaoskit(chaoskit, runDir, addr string, rate int, du time.Duration) (figures, error) {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return figures{}, err
	}
	file := filepath.Join(runDir, "harness-bench.yaml")
	if err := os.WriteFile(file, fmt.Appendf(nil, scenario, addr, rate, du/3), 0o644); err != nil {
		return figures{}, err
	}
	out := filepath.Join(runDir, "out")
	cmd := exec.Command(chaoskit, "run", file, "--report-dir", out, "--format", "json")
	cmd.Stdout = io.Discard
	cmd.Env = append(os.Environ(), "CHAOSKIT_STATE_DIR="+filepath.Join(runDir, "state"), "NO_COLOR=1")
	rss, cpu, err := run(cmd)
	if err != nil {
		return figures{}, err
	}
	dir := filepath.Join(out, "harness-bench")
	src, err := timeline.OpenDir(dir)
	if err != nil {
		return figures{}, err
	}
	// The latencies chaoskit recorded, exactly.
	var lat []time.Duration
	var first, last time.Time
	err = src.EachRequest(func(r *timeline.Request) error {
		lat = append(lat, r.Latency)
		if first.IsZero() || r.Time.Before(first) {
			first = r.Time
		}
		if r.Time.After(last) {
			last = r.Time
		}
		return nil
	})
	if err != nil || len(lat) == 0 {
		return figures{}, fmt.Errorf("reading %s: %v (%d requests)", dir, err, len(lat))
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	size := func(name string) float64 {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return 0
		}
		return float64(st.Size())
	}
	n := float64(len(lat))
	f := figures{
		p99: ms(int64(lat[(99*len(lat)+99)/100-1])), mean: ms(int64(sum) / int64(len(lat))), rss: rss, cpu: cpu, requests: len(lat),
		onDisk:  (size(timeline.FileName) + size(timeline.RequestsFile)) / n,
		results: size("results.bin") / n,
	}
	// vegeta's rate: requests over the span of their send times.
	if span := last.Sub(first).Seconds(); span > 0 {
		f.rate = (n - 1) / span
	}
	return f, nil
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }
