package timeline

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/internal/outdir"
)

// TestReadBackBounds: a run directory from elsewhere is read as data, in
// bounded memory. Each file kind chaoskit reads back from it is refused,
// with its file and line, when it is past what the writer produces, and a
// link or a FIFO in place of a file is never followed or waited on.
func TestReadBackBounds(t *testing.T) {
	meta := `{"meta":{"scenario":"s","start":"2026-03-01T12:00:00Z"}}` + "\n"
	event := `{"event":{"time":"2026-03-01T12:00:01Z","kind":"phase_start","phase":"p"}}` + "\n"
	victim := filepath.Join(t.TempDir(), "victim.jsonl")
	if err := os.WriteFile(victim, []byte(meta+event), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"a line past MaxLine", func(t *testing.T, dir string) {
			// A sparse file of zero bytes: no newline for 9 MiB.
			f, _ := os.Create(filepath.Join(dir, FileName))
			f.WriteString(meta + event)
			f.Truncate(int64(len(meta+event)) + 9<<20)
			f.Close()
		}, FileName + ":3: a line longer than 8 MiB"},
		{"more lines than MaxRecords", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, FileName), append([]byte(meta+event), bytes.Repeat([]byte("\n"), MaxRecords)...), 0o644)
		}, FileName + ":33554433: the timeline holds more than 33554432 lines"},
		{"larger than MaxBytes", func(t *testing.T, dir string) {
			maxBytes = 4 << 10
			t.Cleanup(func() { maxBytes = MaxBytes })
			os.WriteFile(filepath.Join(dir, FileName), []byte(meta+strings.Repeat(event, 100)), 0o644)
		}, "the timeline is larger than 4 KiB"},
		{"a malformed line", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, FileName), []byte(meta+"{not json\n"+event), 0o644)
		}, FileName + ":2: invalid character"},
		{"the timeline a link", func(t *testing.T, dir string) {
			os.Symlink(victim, filepath.Join(dir, FileName))
		}, "a symbolic link: not a regular file"},
		{"the timeline a FIFO", func(t *testing.T, dir string) {
			syscall.Mkfifo(filepath.Join(dir, FileName), 0o644)
		}, "a named pipe (FIFO): not a regular file"},
		{"the request stream a link", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, FileName), []byte(meta+event), 0o644)
			os.Symlink(victim, filepath.Join(dir, RequestsFile))
		}, RequestsFile + ": a symbolic link: not a regular file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			start := time.Now()
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load = %v, want %q", err, tt.want)
			}
			// A reader that hangs never gets here (go test's timeout ends it);
			// the bound catches one that reads far past the limit. Counting
			// 32 Mi lines takes 5 s under -race on a busy 2-core machine.
			if d := time.Since(start); d > time.Minute {
				t.Errorf("took %v to refuse", d)
			}
			if tt.name == "the timeline a link" || tt.name == "the request stream a link" {
				if !errors.Is(err, outdir.ErrNotRecorded) {
					t.Errorf("err %v does not wrap ErrNotRecorded", err)
				}
			}
		})
	}
}
