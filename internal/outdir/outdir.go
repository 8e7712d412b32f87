// Package outdir keeps chaoskit's output directories honest and safe.
//
// Files are written whole or not at all: into a temporary file in the same
// directory, synced, then renamed over the old one and the directory
// synced (WriteFile). A full disk or a read-only directory leaves the old
// file as it was and no temporary file behind.
//
// Every directory chaoskit creates for its output (a report directory, a
// run directory, the trials of a fuzz campaign) carries a marker file
// naming chaoskit, the kind of directory and the run (Claim). chaoskit
// replaces or deletes files only in directories that carry the marker, so a
// --report-dir or a scenario name that points somewhere else cannot make it
// delete what it did not write. The marker keeps room for the run's
// outcome, which is written into it in place (RecordOutcome): on a full
// disk, where no new file can be written, the cause of a failed run is
// still recorded.
//
// One process writes a directory at a time (Lock): the kernel's lock on
// the directory itself, which leaves no file behind and ends with the
// process.
package outdir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// MarkerFile is the name of the marker in a directory chaoskit owns.
const MarkerFile = ".chaoskit"

// markerSize is the room a marker file reserves: the outcome written into
// it later overwrites these bytes in place and needs no new disk space.
const markerSize = 4096

// maxMarker bounds a marker as read back: chaoskit writes markerSize.
const maxMarker = 64 << 10

// markerPrefix begins every marker, so that one cut short by a crash is
// still recognised as chaoskit's.
const markerPrefix = `{"chaoskit":`

// Kind says what a directory chaoskit owns holds.
type Kind string

// The kinds of directories chaoskit creates, and Guest: a directory
// chaoskit did not make but was told to write into, where it replaces only
// the files its marker lists as written by chaoskit.
const (
	Run    Kind = "run"
	Report Kind = "report"
	Trials Kind = "trials"
	Guest  Kind = "guest"
)

// Marker is the content of a marker file.
type Marker struct {
	// Kind is what the directory holds; Name the scenario of a run
	// directory.
	Kind    Kind      `json:"chaoskit"`
	Name    string    `json:"name,omitempty"`
	Created time.Time `json:"created"`
	// Tool is the chaoskit version that created the directory.
	Tool string `json:"tool,omitempty"`
	// Outcome and Error record how a run ended (see RecordOutcome).
	Outcome string `json:"outcome,omitempty"`
	Error   string `json:"error,omitempty"`
	// Files are the files chaoskit wrote in a Guest directory.
	Files []string `json:"files,omitempty"`
}

// WriteFile writes path whole or not at all: write fills a temporary file
// in path's directory, which is synced and renamed to path, and the
// directory is synced. On any error the temporary file is removed and path
// keeps its old content.
func WriteFile(path string, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// WriteBytes writes data to path as WriteFile does.
func WriteBytes(path string, data []byte) error {
	return WriteFile(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteJSON writes v, indented, to path as WriteFile does.
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteBytes(path, append(data, '\n'))
}

// SyncDir makes the entries of dir (files created, renamed, removed)
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	return nil
}

// ReadMarker reads the marker of dir. ok is false when dir has none; a
// marker cut short (a crash while it was written) is still chaoskit's and
// reads as a marker of unknown kind.
func ReadMarker(dir string) (m Marker, ok bool, err error) {
	data, err := ReadFile(filepath.Join(dir, MarkerFile), maxMarker)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotRecorded) {
		return m, false, nil // a link or a FIFO under the name is not ours
	}
	if err != nil {
		return m, false, err
	}
	if !bytes.HasPrefix(data, []byte(markerPrefix)) {
		return m, false, nil // not ours, whatever it is
	}
	if json.Unmarshal(bytes.TrimRight(data, " \n\x00"), &m) != nil {
		return Marker{}, true, nil
	}
	return m, true, nil
}

// encodeMarker renders m padded to markerSize (JSON allows the trailing
// spaces). An error message too long for the room is cut.
func encodeMarker(m Marker) ([]byte, error) {
	for {
		data, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		if len(data) < markerSize {
			out := bytes.Repeat([]byte(" "), markerSize)
			copy(out, data)
			out[markerSize-1] = '\n'
			return out, nil
		}
		if m.Error == "" {
			return nil, fmt.Errorf("marker of %d bytes does not fit in %d", len(data), markerSize)
		}
		m.Error = m.Error[:len(m.Error)/2] + "…"
	}
}

// Mark writes m as dir's marker, whole (see WriteFile), in place of any
// earlier one.
func Mark(dir string, m Marker) error { return writeMarker(dir, m) }

func writeMarker(dir string, m Marker) error {
	if m.Created.IsZero() {
		m.Created = time.Now()
	}
	data, err := encodeMarker(m)
	if err != nil {
		return err
	}
	return WriteBytes(filepath.Join(dir, MarkerFile), data)
}

// RecordOutcome writes how the run in dir ended into its marker, in place:
// the marker's reserved room is overwritten, so this works on a disk too
// full for any new file.
func RecordOutcome(dir, outcome, errText string) error {
	m, ok, err := ReadMarker(dir)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s has no chaoskit marker", dir)
	}
	m.Outcome, m.Error = outcome, errText
	data, err := encodeMarker(m)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, MarkerFile), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ForeignError says a directory chaoskit was asked to write into holds
// files it did not write, so it will not touch it.
type ForeignError struct {
	Dir string
	// Entry is one of the entries chaoskit did not write.
	Entry string
	// Kind is what chaoskit wanted the directory for.
	Kind Kind
}

func (e *ForeignError) Error() string {
	what := map[Kind]string{Run: "a run directory", Report: "a report directory", Trials: "a trials directory"}[e.Kind]
	return fmt.Sprintf("%s is not %s chaoskit made (no %s marker), and it holds %s, which chaoskit did not write", e.Dir, what, MarkerFile, e.Entry)
}

// Claim makes dir a directory of m's kind that chaoskit owns, and reports
// whether it held an earlier output of chaoskit's (to be replaced by the
// caller, file by file). dir is created and marked when it does not exist,
// marked when it is empty, and accepted when it carries a marker that
// accept allows. Anything else is a *ForeignError, and dir is left as it
// was.
func Claim(dir string, m Marker, accept func(Kind) bool) (earlier bool, err error) {
	if m.Created.IsZero() {
		m.Created = time.Now()
	}
	st, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, err
		}
		return false, writeMarker(dir, m)
	case err != nil:
		return false, err
	case !st.IsDir():
		return false, &ForeignError{Dir: dir, Entry: "no directory but a file", Kind: m.Kind}
	}
	old, marked, err := ReadMarker(dir)
	if err != nil {
		return false, err
	}
	if marked {
		if old.Kind != "" && accept != nil && !accept(old.Kind) {
			return false, &ForeignError{Dir: dir, Entry: "the marker of " + string(old.Kind) + " output", Kind: m.Kind}
		}
		return true, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	if len(entries) == 0 {
		return false, writeMarker(dir, m)
	}
	return false, &ForeignError{Dir: dir, Entry: foreignEntry(entries), Kind: m.Kind}
}

// foreignEntry names an entry of a directory for a ForeignError.
func foreignEntry(entries []fs.DirEntry) string {
	for _, e := range entries {
		if e.Name() == MarkerFile {
			continue
		}
		if e.IsDir() {
			return e.Name() + "/"
		}
		return e.Name()
	}
	return "a " + MarkerFile + " file that is not chaoskit's"
}

// Owned reports whether dir carries chaoskit's marker of a directory it
// made.
func Owned(dir string) bool {
	m, ok, err := ReadMarker(dir)
	return ok && err == nil && m.Kind != Guest
}

// Visit records that chaoskit writes files into dir, a directory it did
// not make (a --report-dir given that holds other files): it may create
// them, or replace those an earlier visit wrote or that written says
// chaoskit wrote (an older chaoskit's, recognised by content; nil: none),
// and nothing else. A file of those names that chaoskit did not write is a
// *ForeignError, and dir is left as it was. The names are noted in a Guest
// marker before any is written, so a later visit knows them as chaoskit's.
func Visit(dir string, files []string, written func(path string) bool) error {
	m, ok, err := ReadMarker(dir)
	if err != nil {
		return err
	}
	if ok && m.Kind != Guest {
		return nil // chaoskit's own
	}
	if !ok {
		if _, err := os.Lstat(filepath.Join(dir, MarkerFile)); err == nil {
			return &ForeignError{Dir: dir, Entry: MarkerFile, Kind: Report}
		}
		m = Marker{Kind: Guest}
	}
	added := false
	for _, f := range files {
		if slices.Contains(m.Files, f) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil && (written == nil || !written(filepath.Join(dir, f))) {
			return &ForeignError{Dir: dir, Entry: f, Kind: Report}
		}
		m.Files, added = append(m.Files, f), true
	}
	if !added {
		return nil
	}
	slices.Sort(m.Files)
	return writeMarker(dir, m)
}

// RemoveFiles removes the entries of dir that remove names and its
// leftover temporary files (of WriteFile), only when dir carries
// chaoskit's marker. Entries it does not name stay. A symbolic link under
// a name remove names is removed itself, whatever it points to, which
// stays untouched.
func RemoveFiles(dir string, remove func(name string, isDir bool) bool) error {
	if !Owned(dir) {
		return fmt.Errorf("%s has no chaoskit marker: nothing in it is removed", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if name == MarkerFile {
			continue
		}
		p := filepath.Join(dir, name)
		if e.Type()&fs.ModeSymlink != 0 {
			// chaoskit makes no links: one under a name it writes was
			// planted, and is removed itself, never followed.
			if remove(name, true) || remove(name, false) || IsTemp(name) {
				errs = append(errs, os.Remove(p))
			}
			continue
		}
		if !remove(name, e.IsDir()) && !IsTemp(name) {
			continue
		}
		if e.IsDir() {
			errs = append(errs, os.RemoveAll(p))
		} else {
			errs = append(errs, os.Remove(p))
		}
	}
	return errors.Join(errs...)
}

// IsTemp reports whether name is a temporary file of WriteFile's, left
// behind by a process killed while it wrote.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
}

// RemoveDir removes dir, a directory chaoskit owns, after removing the
// entries remove names in it; entries it does not name keep dir (and
// them) in place.
func RemoveDir(dir string, remove func(name string, isDir bool) bool) error {
	if err := RemoveFiles(dir, remove); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) != 1 || entries[0].Name() != MarkerFile {
		return nil // something chaoskit did not write is in it
	}
	if err := os.Remove(filepath.Join(dir, MarkerFile)); err != nil {
		return err
	}
	return os.Remove(dir)
}
