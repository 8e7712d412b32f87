package outdir

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// LockedError says another process is writing a directory chaoskit was
// asked to write: two commands writing one run or report directory at once
// would replace each other's files.
type LockedError struct {
	Dir string
	// Pid is the holder's process id, 0 when the kernel would not say;
	// Command its command line, when it can be read.
	Pid     int
	Command string
}

func (e *LockedError) Error() string {
	holder := "another process"
	if e.Pid != 0 {
		holder = "process " + strconv.Itoa(e.Pid)
		if e.Command != "" {
			holder += " (" + e.Command + ")"
		}
	}
	return fmt.Sprintf("%s is being written by %s", e.Dir, holder)
}

// held counts the locks this process holds, by directory identity: flock
// locks belong to an open file, so a second Lock of one directory in this
// process would refuse itself.
var held = struct {
	sync.Mutex
	m map[fileID]*dirLock
}{m: map[fileID]*dirLock{}}

type fileID struct{ dev, ino uint64 }

type dirLock struct {
	f    *os.File
	refs int
}

// Lock takes an exclusive lock on dir, a directory that exists, for as long
// as this process writes into it, and returns the function that releases
// it. The lock is the kernel's (flock on the directory itself): it leaves no
// file behind and ends with the process, however that ends. When another
// process holds it, the error is a *LockedError naming that process. A
// link is never followed: dir must be a directory itself.
func Lock(dir string) (release func(), err error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, err
	}
	id := fileID{uint64(st.Dev), st.Ino}
	held.Lock()
	defer held.Unlock()
	if l, ok := held.m[id]; ok {
		f.Close()
		l.refs++
		return releaser(id), nil
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			le := &LockedError{Dir: dir}
			le.Pid, le.Command = lockHolder(id)
			return nil, le
		}
		return nil, fmt.Errorf("cannot lock %s: %w", dir, err)
	}
	held.m[id] = &dirLock{f: f, refs: 1}
	return releaser(id), nil
}

// LockNew is Lock for a directory that may not exist yet: dir is created
// first (not its marker: Claim does that, under the lock), unless it is
// there, as anything, link included (which Lock then refuses).
func LockNew(dir string) (release func(), err error) {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	return Lock(dir)
}

func releaser(id fileID) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			held.Lock()
			defer held.Unlock()
			l := held.m[id]
			if l == nil {
				return
			}
			if l.refs--; l.refs == 0 {
				l.f.Close() // closing the last descriptor releases the flock
				delete(held.m, id)
			}
		})
	}
}

// lockHolder finds the process holding a flock on the file id in
// /proc/locks (readable by every user) and its command line.
func lockHolder(id fileID) (pid int, command string) {
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(id.dev), unix.Minor(id.dev), id.ino)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 1: FLOCK  ADVISORY  WRITE 4685 00:2f:1234 0 EOF
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || !sameLockID(fields[5], want) {
			continue
		}
		if pid, err = strconv.Atoi(fields[4]); err != nil {
			return 0, ""
		}
		cmd, _ := os.ReadFile("/proc/" + fields[4] + "/cmdline")
		command = strings.TrimSpace(string(bytes.ReplaceAll(bytes.TrimRight(cmd, "\x00"), []byte{0}, []byte(" "))))
		if r := []rune(command); len(r) > 160 {
			command = string(r[:160]) + "…"
		}
		return pid, command
	}
	return 0, ""
}

// sameLockID compares /proc/locks' "MAJ:MIN:INODE" (hex device numbers,
// zero-padded to two digits or more) with want.
func sameLockID(got, want string) bool {
	g := strings.Split(got, ":")
	w := strings.Split(want, ":")
	if len(g) != 3 || len(w) != 3 {
		return false
	}
	for i := range 2 {
		a, err1 := strconv.ParseUint(g[i], 16, 32)
		b, err2 := strconv.ParseUint(w[i], 16, 32)
		if err1 != nil || err2 != nil || a != b {
			return false
		}
	}
	return g[2] == w[2]
}
