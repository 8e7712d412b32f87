package main

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
)

// liveClock is what a live progress line shows and a finished phase line
// does not: the phase's clock, elapsed of planned ("1.2s/5.0s").
var liveClock = regexp.MustCompile(`\d+\.\ds/\d+\.\ds`)

// screenWatch interprets what chaoskit writes to its terminal with a
// terminal emulator, and after every write counts the rows of the screen
// that hold a live line.
type screenWatch struct {
	mu       sync.Mutex
	term     *vt.Emulator
	cols     int
	maxLive  int
	sawLive  bool
	fullRows []string
	// tail, when set, is what a live line must end with at least once;
	// sawTail says it did.
	tail    *regexp.Regexp
	sawTail bool
}

func (s *screenWatch) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.term.Write(p); err != nil {
		return 0, err
	}
	live := 0
	for _, row := range strings.Split(s.term.String(), "\n") {
		if liveClock.MatchString(row) {
			live++
			if s.tail != nil && s.tail.MatchString(strings.TrimRight(row, " ")) {
				s.sawTail = true
			}
		}
		// A row that reaches the last column made the terminal wrap (or
		// is about to): only the table, at its narrowest, may, and a
		// single word longer than a row (a path).
		if n := utf8.RuneCountInString(strings.TrimRight(row, " ")); n >= s.cols && !strings.ContainsAny(row, "│┌├└") && len(strings.Fields(row)) > 1 {
			s.fullRows = append(s.fullRows, row)
		}
	}
	s.maxLive = max(s.maxLive, live)
	s.sawLive = s.sawLive || live > 0
	return len(p), nil
}

// TestLiveLineStaysOneLine runs a scenario in an 80- and a 40-column
// terminal and reads the screen as a terminal shows it: at every moment
// it holds at most one live line (one was shown), and no finished line
// reaches the terminal's edge, where the terminal would wrap it.
func TestLiveLineStaysOneLine(t *testing.T) {
	bin := chaoskitBin(t)
	for _, cols := range []int{80, 40} {
		t.Run(strconv.Itoa(cols)+" columns", func(t *testing.T) {
			w := watchLive(t, bin, cols, nil, scenarioFile)
			if w.maxLive > 1 {
				t.Errorf("the screen held %d live lines at once:\n%s", w.maxLive, w.term.String())
			}
			if len(w.fullRows) > 0 {
				t.Errorf("rows reached the edge of the %d-column terminal: %q", cols, w.fullRows)
			}
		})
	}
}

// overallTail is the end of a live line in a run of two scenarios: which
// one runs and the time left ("2/2, 5s left").
var overallTail = regexp.MustCompile(`  [12]/2, (\d+m)?\d+s left$`)

// TestLiveLineShowsOverallProgress runs two scenarios in an 80-column
// terminal: the live line ends with the overall progress and the time
// left, kept in view while the line is cut to the width, and the screen
// still holds one live line at a time.
func TestLiveLineShowsOverallProgress(t *testing.T) {
	bin := chaoskitBin(t)
	w := watchLive(t, bin, 80, overallTail, filepath.Join("testdata", "overall"))
	if !w.sawTail {
		t.Errorf("no live line ended with the overall progress (%s):\n%s", overallTail, w.term.String())
	}
	if w.maxLive > 1 {
		t.Errorf("the screen held %d live lines at once:\n%s", w.maxLive, w.term.String())
	}
	if len(w.fullRows) > 0 {
		t.Errorf("rows reached the edge of the terminal: %q", w.fullRows)
	}
}

// watchLive runs the scenarios of path in a terminal cols columns wide and
// returns what it saw of the screen; it fails the test unless the run ends
// with exit 0 or 1 and showed a live line.
func watchLive(t *testing.T, bin string, cols int, tail *regexp.Regexp, path string) *screenWatch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", path, "--report-dir", t.TempDir(), "--format", "table")
	for _, kv := range testEnv(t) {
		if !strings.HasPrefix(kv, "COLUMNS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(cols), Rows: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	w := &screenWatch{term: vt.NewEmulator(cols, 50), cols: cols, tail: tail}
	read := make(chan error, 1)
	go func() {
		_, err := io.Copy(w, tty)
		read <- err
	}()
	waitErr := cmd.Wait()
	if err := <-read; err != nil && !errors.Is(err, syscall.EIO) {
		t.Fatalf("reading the terminal: %v", err)
	}
	var ee *exec.ExitError
	if waitErr != nil && !(errors.As(waitErr, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("run: %v\n%s", waitErr, w.term.String())
	}
	if !w.sawLive {
		t.Fatalf("no live line was shown:\n%s", w.term.String())
	}
	return w
}
