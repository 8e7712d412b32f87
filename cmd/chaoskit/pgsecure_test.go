package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// shmState is what a Postgres server can leave behind in shared memory:
// the System V segments with nothing attached (id → key) and the
// PostgreSQL.* files of /dev/shm.
type shmState struct {
	sysv map[string]bool
	dev  map[string]bool
}

var ipcsRow = regexp.MustCompile(`^0x[0-9a-f]+\s+(\d+)\s+\S+\s+\d+\s+\d+\s+(\d+)`)

func readShm(t *testing.T) shmState {
	t.Helper()
	out, err := exec.Command("ipcs", "-m").Output()
	if err != nil {
		t.Fatalf("ipcs -m: %v", err)
	}
	s := shmState{sysv: map[string]bool{}, dev: map[string]bool{}}
	for _, line := range strings.Split(string(out), "\n") {
		if m := ipcsRow.FindStringSubmatch(line); m != nil && m[2] == "0" {
			s.sysv[m[1]] = true
		}
	}
	files, _ := filepath.Glob("/dev/shm/PostgreSQL.*")
	for _, f := range files {
		s.dev[f] = true
	}
	return s
}

// added lists what after holds that before did not.
func (after shmState) added(before shmState) []string {
	var out []string
	for id := range after.sysv {
		if !before.sysv[id] {
			out = append(out, "System V segment "+id)
		}
	}
	for f := range after.dev {
		if !before.dev[f] && !mappedByAny(f) {
			out = append(out, f)
		}
	}
	return out
}

// mappedByAny says whether a process maps file: a server of another test
// running now, not one that left it behind.
func mappedByAny(file string) bool {
	maps, _ := filepath.Glob("/proc/[0-9]*/maps")
	for _, m := range maps {
		if data, err := os.ReadFile(m); err == nil && bytes.Contains(data, []byte(file)) {
			return true
		}
	}
	return false
}

// TestManagedPostgresIsClosedToOtherUsersAndLeavesNoSharedMemory runs a
// scenario on a managed Postgres, connects to it as another user of the
// machine (nobody, with setpriv), which must be refused, then kills
// chaoskit with SIGKILL: no shared memory segment and no /dev/shm file
// may outlive it.
func TestManagedPostgresIsClosedToOtherUsersAndLeavesNoSharedMemory(t *testing.T) {
	bin := chaoskitBin(t)
	requireServers(t)
	psql, _ := filepath.Glob("/usr/lib/postgresql/*/bin/psql")
	if os.Geteuid() != 0 || len(psql) == 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("needs root (setpriv to another user) and psql")
		}
		t.Skip("needs root (setpriv to another user) and psql")
	}
	dir := t.TempDir()
	file := writeFile(t, dir, "s.yaml", `name: pg-locked
target:
  demo:
    args: [--postgres, "postgres://postgres:{password:db}@127.0.0.1:{port:db}/postgres?sslmode=disable"]
dependencies:
  - name: db
    postgres: {}
load:
  rate: 20/s
  requests:
    - path: /products/{1..50}
phases:
  - name: p
    duration: 30s
`)
	before := readShm(t)
	out := filepath.Join(dir, "out")
	cmd, buf := startChaoskit(t, bin, file, out, "pg-locked", func(e timeline.Event) bool {
		return e.Kind == timeline.PhaseStart
	})
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	// The server's port, from its command line.
	port := ""
	below := descendantsOf(cmd.Process.Pid)
	for _, pid := range below {
		argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		args := strings.Split(string(argv), "\x00")
		if filepath.Base(args[0]) != "postgres" {
			continue
		}
		for i, a := range args {
			if a == "-p" && i+1 < len(args) {
				port = args[i+1]
			}
		}
	}
	if port == "" {
		t.Fatalf("no postgres below chaoskit\n%s", buf)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	as := exec.CommandContext(ctx, "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
		psql[0], "-w", "-h", "127.0.0.1", "-p", port, "-U", "postgres", "-d", "postgres", "-c", `copy (select 1) to program 'id'`)
	as.Env = []string{"PATH=/usr/bin:/bin", "PGCONNECT_TIMEOUT=5", "PGSSLMODE=disable"}
	got, err := as.CombinedOutput()
	if err == nil || !bytes.Contains(got, []byte("password")) {
		t.Errorf("another user connected as the superuser of the managed Postgres (err %v):\n%s", err, got)
	}
	cmd.Process.Kill()
	cmd.Wait()
	for _, pid := range below {
		deadline := time.Now().Add(15 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("process %d outlived chaoskit's kill -9", pid)
		}
	}
	if left := readShm(t).added(before); len(left) > 0 {
		t.Errorf("after kill -9 of chaoskit, the managed Postgres left %v\n%s", left, buf)
	}
}
