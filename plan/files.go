package plan

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/chaoskit/chaoskit/internal/outdir"
)

// MaxFile bounds a scenario file and every file it includes. The largest
// bundled scenario is a few kilobytes; a file a thousand times larger is a
// mistake (a log, a binary, a device), and reading it whole must not cost
// the machine its memory.
const MaxFile = 4 << 20

// readScenarioFile reads the scenario or included file at name: a regular
// file of at most MaxFile bytes. A named pipe, a device or a directory is
// refused before a byte of it is read, so that a FIFO (whose open would wait
// for a writer for ever, deaf to Ctrl-C) or /dev/zero (which never ends)
// cannot hang or exhaust chaoskit.
func readScenarioFile(name string) ([]byte, error) {
	return readBoundedScenario(name, MaxFile)
}

// readBoundedScenario is readScenarioFile with limit in place of MaxFile.
func readBoundedScenario(name string, limit int64) ([]byte, error) {
	// O_NONBLOCK makes the open of a FIFO return at once instead of waiting
	// for a writer; it changes nothing for a regular file.
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, openError(err)
	}
	defer f.Close()
	// Fstat the opened file, not the path: the path may have been swapped
	// for something else since it was looked at.
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &fileError{msg: "not a regular file but " + outdir.FileKind(st.Mode()), hint: "chaoskit reads scenarios only from regular files"}
	}
	if st.Size() > limit {
		return nil, tooLarge(st.Size(), limit)
	}
	// The size may be wrong (a file in /proc says 0) or grow while it is
	// read: read one byte past the limit to tell.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(-1, limit)
	}
	return data, nil
}

// fileError is a file that cannot be a scenario, said in words a user
// reads after the file's name.
type fileError struct{ msg, hint string }

func (e *fileError) Error() string { return e.msg }

// tooLarge says a file of size bytes (-1: unknown) is above limit.
func tooLarge(size, limit int64) error {
	what := "file holds more than"
	if size >= 0 {
		what = fmt.Sprintf("file is %s, more than", mib(size))
	}
	return &fileError{msg: fmt.Sprintf("%s the %s a scenario file may hold", what, mib(limit)),
		hint: "split it into files that include a shared part, or move large request bodies to body_file"}
}

func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// openError words an error of os.Open without repeating the path, which
// the error's position already names.
func openError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readError turns an error reading file into the Error a user sees.
func readError(file string, err error) *Error {
	e := &Error{File: file, Msg: "cannot read the scenario file: " + err.Error()}
	var fe *fileError
	if errors.As(err, &fe) {
		e.Msg, e.Hint = fe.msg, fe.hint
	}
	return e
}

// boundedRead wraps a reader of scenario files (an embedded file system,
// a run directory's copies) so that what it returns obeys MaxFile too.
func boundedRead(read func(string) ([]byte, error)) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		data, err := read(name)
		if err == nil && len(data) > MaxFile {
			return nil, tooLarge(int64(len(data)), MaxFile)
		}
		return data, err
	}
}
