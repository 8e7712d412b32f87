package runner

import (
	"os"
	"path/filepath"
	"strconv"
)

// scratchPrefix starts the name of a run's scratch directory, followed by
// the pid of the chaoskit process that made it.
const scratchPrefix = "chaoskit-tmp-"

// scratchEnv names the run's scratch directory as TMPDIR. It comes first
// in a process's environment, so a TMPDIR the scenario sets wins.
func (r *run) scratchEnv() []string {
	if r.scratch == "" {
		return nil
	}
	return []string{"TMPDIR=" + r.scratch}
}

// prepareScratch makes the run's scratch directory in the system's
// temporary directory: the generated certificate goes there, and the
// target and the setup and teardown programs get it as their TMPDIR. A
// service that makes its temporary files there and is killed (a process
// fault, or the stop grace running out) leaves nothing behind once the
// run removes the directory. The directories of chaoskit processes that
// were themselves killed are removed first.
func (r *run) prepareScratch() error {
	sweepOutside(scratchPrefix)
	dir, err := os.MkdirTemp("", scratchPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return infra("cannot make the run's directory for temporary files", "set TMPDIR to a directory chaoskit may write to", err)
	}
	// MkdirTemp resolves nothing: a name it made is new, never a link.
	r.scratch, err = filepath.Abs(dir)
	if err != nil {
		os.Remove(dir)
		return infra("cannot find the run's directory for temporary files", "", err)
	}
	return nil
}

// removeScratch removes the scratch directory and what the run's
// processes left in it. os.RemoveAll removes a link there, never what it
// points to.
func (r *run) removeScratch() {
	if r.scratch != "" {
		os.RemoveAll(r.scratch)
	}
}
