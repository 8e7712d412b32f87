package outdir

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteFileIsWholeOrNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	write(t, path, "old\n")
	boom := errors.New("no space left on device")
	err := WriteFile(path, func(w io.Writer) error {
		io.WriteString(w, "half of the new")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old\n" {
		t.Errorf("after a failed write: %q", got)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"report.json"}) {
		t.Errorf("left behind: %v", got)
	}
	if err := WriteBytes(path, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if got, _ := os.ReadFile(path); string(got) != "new\n" || st.Mode().Perm() != 0o644 {
		t.Errorf("after a good write: %q, mode %v", got, st.Mode())
	}
	if err := WriteBytes(filepath.Join(dir, "missing", "x"), nil); err == nil {
		t.Error("a write into a missing directory succeeded")
	}
}

func TestClaim(t *testing.T) {
	onlyRuns := func(k Kind) bool { return k == Run }
	run := Marker{Kind: Run, Name: "s"}
	for _, tt := range []struct {
		name    string
		setup   func(dir string)
		earlier bool
		foreign string // what the error names, "" for none
	}{
		{"missing", func(dir string) { os.Remove(dir) }, false, ""},
		{"empty", func(string) {}, false, ""},
		{"marked", func(dir string) { Mark(dir, run); write(t, filepath.Join(dir, "timeline.jsonl"), "x") }, true, ""},
		{"cut short marker", func(dir string) { write(t, filepath.Join(dir, MarkerFile), markerPrefix+`"ru`) }, true, ""},
		{"an unmarked run", func(dir string) { write(t, filepath.Join(dir, "timeline.jsonl"), "x") }, false, "timeline.jsonl"},
		{"someone else's files", func(dir string) {
			write(t, filepath.Join(dir, "timeline.jsonl"), "x")
			write(t, filepath.Join(dir, "notes.txt"), "mine")
		}, false, "notes.txt"},
		{"someone else's marker file", func(dir string) { write(t, filepath.Join(dir, MarkerFile), "my own dotfile") }, false, MarkerFile},
		{"a report directory", func(dir string) { Mark(dir, Marker{Kind: Report}) }, false, "report output"},
		{"a file", func(dir string) { os.Remove(dir); write(t, dir, "x") }, false, "a file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			os.Mkdir(dir, 0o755)
			tt.setup(dir)
			before, _ := os.ReadDir(dir)
			earlier, err := Claim(dir, run, onlyRuns)
			if tt.foreign != "" {
				var fe *ForeignError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.foreign) || !strings.Contains(err.Error(), dir) {
					t.Fatalf("Claim = %v, want a ForeignError naming %s and %q", err, dir, tt.foreign)
				}
				if after, _ := os.ReadDir(dir); len(after) != len(before) {
					t.Errorf("a refused directory changed: %d entries, had %d", len(after), len(before))
				}
				return
			}
			if err != nil || earlier != tt.earlier {
				t.Fatalf("Claim = %v, %v; want %v, nil", earlier, err, tt.earlier)
			}
			if !Owned(dir) {
				t.Error("claimed directory has no marker")
			}
		})
	}
}

func TestRemoveFilesOnlyInAMarkedDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"timeline.jsonl", "notes.txt", ".run.json.tmp-123", "sub/x"} {
		write(t, filepath.Join(dir, f), "x")
	}
	ours := func(name string, isDir bool) bool { return name == "timeline.jsonl" || name == "sub" }
	if err := RemoveFiles(dir, ours); err == nil {
		t.Fatal("RemoveFiles in an unmarked directory succeeded")
	}
	if got := names(t, dir); len(got) != 4 {
		t.Fatalf("an unmarked directory lost files: %v", got)
	}
	Mark(dir, Marker{Kind: Run})
	if err := RemoveFiles(dir, ours); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{MarkerFile, "notes.txt"}) {
		t.Errorf("left %v, want the marker and notes.txt", got)
	}
	// RemoveDir keeps a directory that still holds what is not chaoskit's.
	if err := RemoveDir(dir, ours); err != nil || !Owned(dir) {
		t.Errorf("RemoveDir of a directory with notes.txt: %v, owned %v", err, Owned(dir))
	}
	os.Remove(filepath.Join(dir, "notes.txt"))
	if err := RemoveDir(dir, ours); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("RemoveDir left %s: %v", dir, err)
	}
}

func TestRecordOutcomeInPlace(t *testing.T) {
	dir := t.TempDir()
	if err := Mark(dir, Marker{Kind: Run, Name: "s", Tool: "v1"}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("cannot write the timeline: no space left on device; ", 200)
	if err := RecordOutcome(dir, "error", long); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(filepath.Join(dir, MarkerFile))
	m, ok, err := ReadMarker(dir)
	if err != nil || !ok || m.Outcome != "error" || !strings.HasPrefix(m.Error, "cannot write the timeline") || m.Name != "s" || m.Kind != Run {
		t.Fatalf("marker %+v, %v, %v", m, ok, err)
	}
	if st.Size() != markerSize {
		t.Errorf("marker grew to %d bytes: it must fit its reserved room", st.Size())
	}
	if err := RecordOutcome(t.TempDir(), "error", "x"); err == nil {
		t.Error("recorded an outcome in an unmarked directory")
	}
}

func TestVisitReplacesOnlyWhatItWrote(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "notes.txt"), "mine")
	if err := Visit(dir, []string{"report.json"}, nil); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "report.json"), "chaoskit's")
	// A second visit may replace report.json, which the first wrote, but
	// not junit.xml, which someone else put there.
	write(t, filepath.Join(dir, "junit.xml"), "theirs")
	if err := Visit(dir, []string{"report.json"}, nil); err != nil {
		t.Errorf("second visit: %v", err)
	}
	var fe *ForeignError
	if err := Visit(dir, []string{"report.json", "junit.xml"}, nil); !errors.As(err, &fe) || fe.Entry != "junit.xml" {
		t.Errorf("visit over someone's junit.xml: %v", err)
	}
	// One an older chaoskit wrote, recognised by its content, is chaoskit's.
	ours := func(path string) bool { data, _ := os.ReadFile(path); return string(data) == "theirs" }
	if err := Visit(dir, []string{"junit.xml"}, ours); err != nil {
		t.Errorf("visit over a file recognised as chaoskit's: %v", err)
	}
	if m, ok, _ := ReadMarker(dir); !ok || m.Kind != Guest || !slices.Equal(m.Files, []string{"junit.xml", "report.json"}) {
		t.Errorf("marker %+v", m)
	}
	if Owned(dir) {
		t.Error("a visited directory counts as chaoskit's own")
	}
	// A marker file that is not chaoskit's is someone else's file.
	other := t.TempDir()
	write(t, filepath.Join(other, MarkerFile), "not json")
	if err := Visit(other, []string{"report.json"}, nil); !errors.As(err, &fe) {
		t.Errorf("visit over a foreign %s: %v", MarkerFile, err)
	}
}

// TestRecordedFilesAreReadAsData: a marker, like every recorded file, is
// read only when it is a regular file of its size: a link in its place
// (to a big file, to a FIFO) is not followed and the directory is not
// chaoskit's; a file past the limit is refused by name.
func TestRecordedFilesAreReadAsData(t *testing.T) {
	root := t.TempDir()
	big := filepath.Join(root, "big")
	if err := os.WriteFile(big, append([]byte(`{"chaoskit":"run"}`), make([]byte, 1<<20)...), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "run")
	os.Mkdir(dir, 0o755)
	if err := os.Symlink(big, filepath.Join(dir, MarkerFile)); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ReadMarker(dir); ok || err != nil {
		t.Errorf("ReadMarker through a link = %v, %v; want no marker", ok, err)
	}
	if _, err := ReadFile(big, 4<<10); err == nil || !strings.Contains(err.Error(), "big: larger than 4 KiB") {
		t.Errorf("ReadFile past the limit = %v", err)
	}
	fifo := filepath.Join(root, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(fifo, 4<<10); !errors.Is(err, ErrNotRecorded) || !strings.Contains(err.Error(), "(FIFO)") {
		t.Errorf("ReadFile of a FIFO = %v", err)
	}
}
