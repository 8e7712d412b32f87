package main

import (
	"context"
	"errors"
	"io"
	"os/exec"
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
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "run", scenarioFile, "--report-dir", t.TempDir(), "--format", "table")
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
			w := &screenWatch{term: vt.NewEmulator(cols, 50), cols: cols}
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
			if w.maxLive > 1 {
				t.Errorf("the screen held %d live lines at once:\n%s", w.maxLive, w.term.String())
			}
			if len(w.fullRows) > 0 {
				t.Errorf("rows reached the edge of the %d-column terminal: %q", cols, w.fullRows)
			}
		})
	}
}
