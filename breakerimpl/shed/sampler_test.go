package shed_test

import (
	"errors"
	"math"
	"os"
	"runtime"
	"testing"
	"testing/fstest"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/shed"
)

// steadySource reports a process using a fixed share of its cores, on a
// fake clock.
type steadySource struct {
	clk   *clock.Fake
	share float64
	cores float64
	err   error
}

func (s *steadySource) CPU() (time.Duration, float64, error) {
	return time.Duration(float64(s.clk.Nanotime()) * s.share * s.cores), s.cores, s.err
}

func TestSamplerSmoothsWithAnEWMA(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	src := &steadySource{clk: clk, share: 0.8, cores: 4}
	sm := shed.NewSampler(shed.SamplerSettings{Source: src, Period: time.Second, Beta: 0.5, Clock: clk})
	defer sm.Stop()
	want := 0.0
	for range 5 {
		clk.Advance(time.Second)
		want = 0.5*want + 0.5*0.8
		if got := sm.Usage(); math.Abs(got-want) > 1e-9 {
			t.Fatalf("usage %v, want %v", got, want)
		}
	}
	src.err = errors.New("cgroup gone") // a failed reading keeps the average
	clk.Advance(time.Second)
	if got := sm.Usage(); math.Abs(got-want) > 1e-9 {
		t.Fatalf("usage %v after a failed reading, want %v", got, want)
	}
	sm.Stop()
	src.share, src.err = 0, nil
	clk.Advance(10 * time.Second)
	if got := sm.Usage(); math.Abs(got-want) > 1e-9 || clk.Timers() != 0 {
		t.Fatalf("usage %v, %d timers after Stop; want %v and none", got, clk.Timers(), want)
	}
}

func TestCPUSources(t *testing.T) {
	cpus := float64(runtime.NumCPU())
	for _, tc := range []struct {
		name  string
		files fstest.MapFS
		used  time.Duration
		cores float64
	}{
		{"cgroup v2 with a quota", fstest.MapFS{
			"proc/self/cgroup":                     {Data: []byte("0::/app.slice/web\n")},
			"sys/fs/cgroup/app.slice/web/cpu.stat": {Data: []byte("usage_usec 1500000\nuser_usec 1000000\n")},
			"sys/fs/cgroup/app.slice/web/cpu.max":  {Data: []byte("max 100000\n")},
			"sys/fs/cgroup/app.slice/cpu.max":      {Data: []byte("50000 100000\n")},
		}, 1500 * time.Millisecond, min(0.5, cpus)},
		{"cgroup v2 in a namespace, no quota", fstest.MapFS{
			"proc/self/cgroup":       {Data: []byte("0::/\n")},
			"sys/fs/cgroup/cpu.stat": {Data: []byte("usage_usec 42\n")},
			"sys/fs/cgroup/cpu.max":  {Data: []byte("max 100000\n")},
		}, 42 * time.Microsecond, cpus},
		{"cgroup v1", fstest.MapFS{
			"proc/self/cgroup": {Data: []byte("4:memory:/x\n3:cpu,cpuacct:/docker/abc\n0::/\n")},
			"sys/fs/cgroup/cpu,cpuacct/docker/abc/cpuacct.usage":     {Data: []byte("2000000000\n")},
			"sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us":  {Data: []byte("150000\n")},
			"sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us": {Data: []byte("100000\n")},
		}, 2 * time.Second, min(1.5, cpus)},
		{"cgroup v1 without a quota", fstest.MapFS{
			"proc/self/cgroup":                    {Data: []byte("2:cpuacct:/\n1:cpu:/\n")},
			"sys/fs/cgroup/cpuacct/cpuacct.usage": {Data: []byte("7\n")},
			"sys/fs/cgroup/cpu/cpu.cfs_quota_us":  {Data: []byte("-1\n")},
			"sys/fs/cgroup/cpu/cpu.cfs_period_us": {Data: []byte("100000\n")},
		}, 7, cpus},
		{"/proc/stat", fstest.MapFS{
			"proc/stat": {Data: []byte("cpu  100 5 50 1000 30 2 3 10 0 0\ncpu0 50 0 25 500 15 1 1 5 0 0\ncpu1 50 5 25 500 15 1 2 5 0 0\nintr 1\n")},
		}, 1700 * time.Millisecond, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := shed.NewCPUSource(tc.files)
			if err != nil {
				t.Fatal(err)
			}
			used, cores, err := src.CPU()
			if err != nil || used != tc.used || cores != tc.cores {
				t.Fatalf("CPU() = %v, %v, %v; want %v, %v", used, cores, err, tc.used, tc.cores)
			}
		})
	}
	if _, err := shed.NewCPUSource(fstest.MapFS{}); err == nil {
		t.Fatal("no error with nothing to read")
	}
}

// This machine's own source reads, and time used only grows.
func TestSystemCPU(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("not Linux")
	}
	src, err := shed.SystemCPU()
	if err != nil {
		t.Fatal(err)
	}
	a, cores, err := src.CPU()
	for i := 0; i < 1e7; i++ { // burn a little CPU
		_ = i * i
	}
	b, _, err2 := src.CPU()
	if err != nil || err2 != nil || cores <= 0 || b < a {
		t.Fatalf("readings %v then %v, %v cores, errors %v %v", a, b, cores, err, err2)
	}
}
