// Package pgbin finds the PostgreSQL server programs Debian's postgresql
// package installs, for the dependencies chaoskit starts and for tests.
package pgbin

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Dir returns the newest /usr/lib/postgresql/*/bin, where Debian puts
// initdb and postgres (they are not on PATH), or "".
func Dir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return va - vb
	})
	if len(dirs) == 0 {
		return ""
	}
	return dirs[len(dirs)-1]
}

// A Postgres server keeps a small System V shared memory segment (its
// interlock) that only the server removes, when it stops by one of its
// own signals. A server killed with SIGKILL (its chaoskit and supervisor
// killed together) leaves it behind. chaoskit records each segment of a
// server it started in a file named by its own pid (Record), removes the
// file when the server has stopped (Forget), and a later run removes the
// segments whose chaoskit is gone and which nothing has attached (Sweep).

// recordPrefix starts the name of a segment record in the temporary
// directory: chaoskit-pgshm-PID-SHMID-KEY.
const recordPrefix = "chaoskit-pgshm-"

// Segment is a server's System V segment, as postmaster.pid names it.
type Segment struct {
	Key int
	ID  int
}

// SegmentOf reads the segment of the server running in data from its
// postmaster.pid (line 7: key and id).
func SegmentOf(data string) (Segment, error) {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return Segment{}, err
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 {
		return Segment{}, fmt.Errorf("%s/postmaster.pid names no shared memory segment", data)
	}
	f := strings.Fields(lines[6])
	if len(f) != 2 {
		return Segment{}, fmt.Errorf("%s/postmaster.pid: shared memory line %q", data, lines[6])
	}
	key, err1 := strconv.Atoi(f[0])
	id, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return Segment{}, fmt.Errorf("%s/postmaster.pid: shared memory line %q", data, lines[6])
	}
	return Segment{Key: key, ID: id}, nil
}

func recordPath(pid int, s Segment) string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-%d-%d", recordPrefix, pid, s.ID, s.Key))
}

// Record notes that this process started the server owning s.
func Record(s Segment) error {
	f, err := os.OpenFile(recordPath(os.Getpid(), s), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// Release removes s, a segment of a server this process started that has
// stopped (a server killed by a process fault leaves it), when it still
// has its key and nothing attached, and its record.
func Release(s Segment) {
	var desc unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(s.ID, unix.IPC_STAT, &desc); err == nil && int(desc.Perm.Key) == s.Key && desc.Nattch == 0 {
		_, _ = unix.SysvShmCtl(s.ID, unix.IPC_RMID, nil)
	}
	_ = os.Remove(recordPath(os.Getpid(), s))
}

// Sweep removes the segments recorded by chaoskit processes that are
// gone, when the segment still has the recorded key and no process
// attached, and their records. It returns how many segments it removed.
func Sweep() int {
	entries, _ := os.ReadDir(os.TempDir())
	removed := 0
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), recordPrefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		var pid int
		var s Segment
		if n, err := fmt.Sscanf(rest, "%d-%d-%d", &pid, &s.ID, &s.Key); n != 3 || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) != syscall.ESRCH {
			continue // its chaoskit runs
		}
		var desc unix.SysvShmDesc
		if _, err := unix.SysvShmCtl(s.ID, unix.IPC_STAT, &desc); err == nil {
			if int(desc.Perm.Key) != s.Key {
				// The id was reused by another segment: not ours.
			} else if desc.Nattch != 0 {
				continue // a server still uses it
			} else if _, err := unix.SysvShmCtl(s.ID, unix.IPC_RMID, nil); err == nil {
				removed++
			}
		}
		_ = os.Remove(filepath.Join(os.TempDir(), e.Name()))
	}
	return removed
}
