package shed

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// CPUSource reads how much CPU time the process (its container, or the
// machine) has used.
type CPUSource interface {
	// CPU returns the CPU time used since some fixed origin, and the CPU
	// the process may use now, in cores. A Sampler divides the growth of
	// used over a period by the period times cores.
	CPU() (used time.Duration, cores float64, err error)
}

// SystemCPU returns the CPUSource of this process: its cgroup's, if the
// CPU controller of cgroup v2 or v1 is there, or else the machine's from
// /proc/stat. See NewCPUSource.
func SystemCPU() (CPUSource, error) { return NewCPUSource(os.DirFS("/")) }

// NewCPUSource returns the CPUSource found in fsys, a file system rooted
// like "/" (tests pass a testing/fstest.MapFS), trying in order:
//
//   - cgroup v2: usage_usec in cpu.stat of the process's cgroup (from the
//     "0::" line of /proc/self/cgroup, under /sys/fs/cgroup), and cores from
//     the lowest cpu.max quota/period of the cgroup and its parents ("max"
//     means every CPU the process may run on);
//   - cgroup v1: cpuacct.usage of the cpuacct controller, and cores from
//     cpu.cfs_quota_us / cpu.cfs_period_us of the cpu controller (a quota
//     of -1 means no limit);
//   - /proc/stat: the machine's busy time (user, nice, system, irq,
//     softirq, steal) over all its CPUs.
//
// Each controller's files are looked for under the process's cgroup path
// and, failing that, at the controller's root (which is the process's own
// cgroup in a container with a cgroup namespace).
func NewCPUSource(fsys fs.FS) (CPUSource, error) {
	cgroups, _ := fs.ReadFile(fsys, "proc/self/cgroup")
	cpus := float64(runtime.NumCPU())
	if src, ok := cgroupV2(fsys, cgroups, cpus); ok {
		return src, nil
	}
	if src, ok := cgroupV1(fsys, cgroups, cpus); ok {
		return src, nil
	}
	src := procStat{fsys}
	if _, _, err := src.CPU(); err != nil {
		return nil, fmt.Errorf("shed: no CPU usage found in cgroup v2, cgroup v1 or /proc/stat: %w", err)
	}
	return src, nil
}

// cgroupPaths maps each controller of /proc/self/cgroup to the process's
// path in it; cgroup v2's unified hierarchy is "".
func cgroupPaths(cgroups []byte) map[string]string {
	paths := map[string]string{}
	for line := range strings.SplitSeq(string(cgroups), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			paths[""] = parts[2]
			continue
		}
		for c := range strings.SplitSeq(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	return paths
}

// findDir returns the first of root+"/"+p, root (for each root) that holds
// file.
func findDir(fsys fs.FS, roots []string, p, file string) (string, bool) {
	for _, root := range roots {
		for _, dir := range []string{path.Join(root, p), root} {
			if _, err := fs.Stat(fsys, path.Join(dir, file)); err == nil {
				return dir, true
			}
		}
	}
	return "", false
}

type v2Source struct {
	fsys fs.FS
	dir  string // the cgroup's directory
	cpus float64
}

func cgroupV2(fsys fs.FS, cgroups []byte, cpus float64) (CPUSource, bool) {
	p, ok := cgroupPaths(cgroups)[""]
	if !ok {
		p = "/"
	}
	dir, ok := findDir(fsys, []string{"sys/fs/cgroup"}, p, "cpu.stat")
	if !ok {
		return nil, false
	}
	src := v2Source{fsys, dir, cpus}
	if _, _, err := src.CPU(); err != nil {
		return nil, false
	}
	return src, true
}

func (s v2Source) CPU() (time.Duration, float64, error) {
	stat, err := fs.ReadFile(s.fsys, path.Join(s.dir, "cpu.stat"))
	if err != nil {
		return 0, 0, err
	}
	usec, err := field(stat, "usage_usec")
	if err != nil {
		return 0, 0, fmt.Errorf("%s/cpu.stat: %w", s.dir, err)
	}
	cores := s.cpus
	for dir := s.dir; ; dir = path.Dir(dir) {
		if max, err := fs.ReadFile(s.fsys, path.Join(dir, "cpu.max")); err == nil {
			var quota, period string
			fmt.Sscan(string(max), &quota, &period)
			q, qerr := strconv.ParseFloat(quota, 64)
			per, perr := strconv.ParseFloat(period, 64)
			if qerr == nil && perr == nil && q > 0 && per > 0 {
				cores = min(cores, q/per)
			}
		}
		if dir == "sys/fs/cgroup" || dir == "." || dir == "/" {
			break
		}
	}
	return time.Duration(usec) * time.Microsecond, cores, nil
}

type v1Source struct {
	fsys     fs.FS
	usage    string // cpuacct.usage
	quotaDir string // holds cpu.cfs_quota_us, or ""
	cpus     float64
}

func cgroupV1(fsys fs.FS, cgroups []byte, cpus float64) (CPUSource, bool) {
	paths := cgroupPaths(cgroups)
	mounts := []string{"sys/fs/cgroup/cpuacct", "sys/fs/cgroup/cpu,cpuacct", "sys/fs/cgroup/cpuacct,cpu"}
	dir, ok := findDir(fsys, mounts, paths["cpuacct"], "cpuacct.usage")
	if !ok {
		return nil, false
	}
	src := v1Source{fsys: fsys, usage: path.Join(dir, "cpuacct.usage"), cpus: cpus}
	mounts = []string{"sys/fs/cgroup/cpu", "sys/fs/cgroup/cpu,cpuacct", "sys/fs/cgroup/cpuacct,cpu"}
	src.quotaDir, _ = findDir(fsys, mounts, paths["cpu"], "cpu.cfs_quota_us")
	if _, _, err := src.CPU(); err != nil {
		return nil, false
	}
	return src, true
}

func (s v1Source) CPU() (time.Duration, float64, error) {
	usage, err := readInt(s.fsys, s.usage)
	if err != nil {
		return 0, 0, err
	}
	cores := s.cpus
	if s.quotaDir != "" {
		quota, qerr := readInt(s.fsys, path.Join(s.quotaDir, "cpu.cfs_quota_us"))
		period, perr := readInt(s.fsys, path.Join(s.quotaDir, "cpu.cfs_period_us"))
		if qerr == nil && perr == nil && quota > 0 && period > 0 {
			cores = min(cores, float64(quota)/float64(period))
		}
	}
	return time.Duration(usage), cores, nil
}

type procStat struct{ fsys fs.FS }

// userHZ is the unit of /proc/stat: 100 ticks a second on every Linux
// architecture Go runs on.
const userHZ = 100

func (s procStat) CPU() (time.Duration, float64, error) {
	stat, err := fs.ReadFile(s.fsys, "proc/stat")
	if err != nil {
		return 0, 0, err
	}
	var busy int64
	cpus := 0
	found := false
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || !strings.HasPrefix(fields[0], "cpu") {
			continue
		}
		if fields[0] != "cpu" {
			cpus++
			continue
		}
		if len(fields) < 9 {
			return 0, 0, errors.New("proc/stat: short cpu line")
		}
		// user nice system idle iowait irq softirq steal: all but idle and iowait.
		for _, i := range []int{1, 2, 3, 6, 7, 8} {
			n, err := strconv.ParseInt(fields[i], 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("proc/stat: %w", err)
			}
			busy += n
		}
		found = true
	}
	if !found || cpus == 0 {
		return 0, 0, errors.New("proc/stat: no cpu lines")
	}
	return time.Duration(busy) * time.Second / userHZ, float64(cpus), nil
}

// field returns the integer after name in a "name value" per line file.
func field(data []byte, name string) (int64, error) {
	for line := range strings.SplitSeq(string(data), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == name {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s", name)
}

func readInt(fsys fs.FS, name string) (int64, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}
