package outdir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// A run directory may come from elsewhere (a CI artifact, a shard to
// merge): its files are data, read as they are, never followed. Open and
// ReadFile are how chaoskit reads a file it recorded.

// ErrNotRecorded is wrapped by the error of a recorded file that is not a
// regular file: a symbolic link, a FIFO, a device.
var ErrNotRecorded = errors.New("not a regular file, which is all chaoskit records")

// Open opens path, a file chaoskit recorded, for reading: a symbolic link
// there is not followed (chaoskit makes none), and anything but a regular
// file is refused, before a byte is read (a FIFO does not block the open).
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s: a symbolic link: %w", path, ErrNotRecorded)
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %s: %w", path, FileKind(st.Mode()), ErrNotRecorded)
	}
	return f, nil
}

// ReadFile reads path as Open opens it, refusing a file of more than limit
// bytes: no recorded file of that kind is ever that large.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The size may change while the file is read: read one byte past the
	// limit to tell.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return data, nil
}

// TooLargeError says a recorded file holds more than chaoskit writes in a
// file of its kind.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than %s, more than chaoskit records in such a file (was it replaced?)", e.Path, Bytes(e.Limit))
}

// Bytes renders n bytes for a message: "4 KiB", "8 MiB".
func Bytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// FileKind names what a non-regular file is.
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file (" + m.Type().String() + ")"
}
