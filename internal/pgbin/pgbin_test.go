package pgbin

import (
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSweepRemovesTheSegmentsOfAKilledRun makes a segment as a killed
// chaoskit's Postgres would have left it, recorded under a pid that is
// gone, and one recorded by a pid that runs: Sweep removes the first only.
func TestSweepRemovesTheSegmentsOfAKilledRun(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(key int) Segment {
		id, err := unix.SysvShmGet(key, 64, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
		if err != nil {
			t.Skipf("no System V shared memory here: %v", err)
		}
		t.Cleanup(func() { unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
		return Segment{Key: key, ID: id}
	}
	base := 0x7c40000 + os.Getpid()%0x10000*4
	gone, live := mk(base), mk(base+1)
	for _, r := range []struct {
		pid int
		s   Segment
	}{{dead.Process.Pid, gone}, {os.Getppid(), live}} {
		if err := os.WriteFile(recordPath(r.pid, r.s), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if n := Sweep(); n != 1 {
		t.Errorf("Sweep removed %d segments, want 1", n)
	}
	var desc unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(gone.ID, unix.IPC_STAT, &desc); err == nil {
		t.Error("the segment of the gone run is still there")
	}
	if _, err := unix.SysvShmCtl(live.ID, unix.IPC_STAT, &desc); err != nil {
		t.Errorf("the segment of a running chaoskit was removed: %v", err)
	}
}

func TestSegmentOf(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(dir+"/postmaster.pid", []byte("123\n/data\n1700000000\n5432\n\n127.0.0.1\n  5432001     98765\nready   \n"), 0o600)
	s, err := SegmentOf(dir)
	if err != nil || s != (Segment{Key: 5432001, ID: 98765}) {
		t.Errorf("SegmentOf = %+v, %v", s, err)
	}
}
