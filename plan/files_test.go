package plan

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadWithin loads file, failing the test if the load does not return
// within a bound: a load that blocks (the open of a FIFO) would otherwise
// hang the test binary. unblock, when the load hangs, makes it return.
func loadWithin(t *testing.T, load func() error, unblock func()) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- load() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		// The load may open the FIFO more than once (through a symlink):
		// unblock it until it returns.
		for range 100 {
			unblock()
			select {
			case <-done:
				t.Fatal("loading did not return: it blocked on the file")
			case <-time.After(100 * time.Millisecond):
			}
		}
		t.Fatal("loading did not return even with the FIFO opened for writing")
		return nil
	}
}

// unblockFIFO opens the FIFO for writing and closes it, which lets a
// reader blocked in its open return (with an empty file).
func unblockFIFO(path string) func() {
	return func() {
		if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
	}
}

func TestScenarioFilesMustBeRegularAndSmall(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fifo, filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A sparse file: its size says it is too large before it is read.
	big, err := os.Create(filepath.Join(dir, "big.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	big.Truncate(MaxFile + 1)
	big.Close()
	tests := []struct {
		file, want string
		// all: LoadAll takes the file as LoadFile does (it takes a
		// directory as a directory).
		all bool
	}{
		{fifo, "fifo.yaml: not a regular file but a named pipe (FIFO) (chaoskit reads scenarios only from regular files)", true},
		{filepath.Join(dir, "link.yaml"), "link.yaml: not a regular file but a named pipe (FIFO)", true},
		{filepath.Join(dir, "dir.yaml"), "dir.yaml: not a regular file but a directory", false},
		{"/dev/zero", "/dev/zero: not a regular file but a character device", true},
		{filepath.Join(dir, "big.yaml"), "big.yaml: file is 4.0 MiB, more than the 4 MiB a scenario file may hold (split it", true},
		{filepath.Join(dir, "missing.yaml"), "missing.yaml: cannot read the scenario file: no such file or directory", false},
		// The FIFO and the symlink to it, found in a directory listing.
		{dir, "fifo.yaml: not a regular file but a named pipe (FIFO)", true},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			loads := map[string]func() error{
				"LoadAll": func() error { _, err := LoadAll([]string{tt.file}, demoCatalog); return err },
			}
			if tt.file != dir {
				loads["LoadFile"] = func() error { _, err := LoadFile(tt.file, demoCatalog); return err }
			}
			if !tt.all {
				delete(loads, "LoadAll")
			}
			for name, load := range loads {
				err := loadWithin(t, load, unblockFIFO(fifo))
				if err == nil || !strings.Contains(err.Error(), tt.want) || !IsInvalid(err) {
					t.Errorf("%s: err = %v\nwant %s", name, err, tt.want)
				}
			}
		})
	}
}

// TestReadStopsPastTheLimit checks the read itself is bounded, for a file
// whose size does not tell (/proc files say 0) or that grows as it is read.
func TestReadStopsPastTheLimit(t *testing.T) {
	// /proc/self/mem-like files are not portable; a file that grows is
	// simulated by a size that lies: /proc/self/maps says 0 bytes and holds
	// more. Bound the read of it below its content to see the limit work.
	data, err := readScenarioFile("/proc/self/maps")
	if err != nil || len(data) == 0 {
		t.Skipf("/proc/self/maps: %v", err)
	}
	if st, _ := os.Stat("/proc/self/maps"); st.Size() != 0 {
		t.Skip("/proc/self/maps states its size here")
	}
	if _, err := readBoundedScenario("/proc/self/maps", int64(len(data)/2)); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("a file larger than its stated size was read whole: %v", err)
	}
}

func TestIncludedFilesMustBeRegular(t *testing.T) {
	dir := writeFiles(t, map[string]string{"s.yaml": including})
	fifo := filepath.Join(dir, "common.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	err := loadWithin(t, func() error { _, err := LoadFile(filepath.Join(dir, "s.yaml"), demoCatalog); return err }, unblockFIFO(fifo))
	want := "s.yaml:2:10: cannot read included file common.yaml: not a regular file but a named pipe (FIFO)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}
