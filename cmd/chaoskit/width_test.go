package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
)

// ansiColours matches the colour codes of the table's verdicts.
var ansiColours = regexp.MustCompile("\x1b\\[[0-9;]*m")

// displayColumns is how many columns a line of chaoskit's output takes in
// a terminal: its runes, colour codes left out. The table holds no wide
// characters, and each box-drawing rune takes one column.
func displayColumns(line string) int {
	return utf8.RuneCountInString(ansiColours.ReplaceAllString(line, ""))
}

// widest is the widest line of out and its width.
func widest(out string) (string, int) {
	var line string
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if w := displayColumns(l); w > n {
			line, n = l, w
		}
	}
	return line, n
}

// runInTerminal runs chaoskit with its output on a real pseudo-terminal
// of cols columns, as a user's shell would, and returns what it printed.
// env is added to the environment, which holds no COLUMNS otherwise.
func runInTerminal(t *testing.T, bin string, cols uint16, env []string, args ...string) (string, int) {
	t.Helper()
	// A bound on a command that hangs, not a measurement.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, kv := range testEnv(t) {
		// Colours on, as in a terminal, to see that they do not count.
		if !strings.HasPrefix(kv, "COLUMNS=") && !strings.HasPrefix(kv, "NO_COLOR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: cols, Rows: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var out bytes.Buffer
	read := make(chan error, 1)
	go func() {
		_, err := io.Copy(&out, tty)
		read <- err
	}()
	waitErr := cmd.Wait()
	// The terminal reads until the child's side is closed: EIO on Linux.
	if err := <-read; err != nil && !errors.Is(err, syscall.EIO) {
		t.Fatalf("reading the terminal: %v", err)
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		code = ee.ExitCode()
	} else if waitErr != nil {
		t.Fatal(waitErr)
	}
	// The terminal ends lines with CR LF.
	return strings.ReplaceAll(out.String(), "\r\n", "\n"), code
}

// TestReportFitsTheTerminal judges a saved run of a bundled scenario with
// chaoskit report under a real 120-column terminal: no line of its output
// is wider than the terminal, COLUMNS overrides the terminal's width (0:
// no limit), and with the output piped the table keeps within 120 columns
// by folding, every column still there.
func TestReportFitsTheTerminal(t *testing.T) {
	bin := chaoskitBin(t)
	dir := t.TempDir()
	// The scenario with the widest cells of the bundled suite.
	res := runBin(t, bin, "run", "--bundled", "--only", "retry-storm-budget", "--rate-scale", "0.2", "--report-dir", dir)
	if res.code != 0 && res.code != 1 {
		t.Fatalf("run: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}

	whole := runBinEnv(t, []string{"COLUMNS=0"}, bin, "report", dir, "--format", "table")
	if line, n := widest(whole.stdout); n <= 120 {
		t.Fatalf("with COLUMNS=0, the whole table is %d columns wide (%q); the test needs one wider than 120", n, line)
	}
	piped := runBinEnv(t, []string{"COLUMNS="}, bin, "report", dir, "--format", "table")
	if line, n := widest(piped.stdout); n > 120 {
		t.Errorf("piped, a line is %d columns wide, more than 120: %q\n%s", n, line, piped.stdout)
	}
	if !strings.Contains(piped.stdout, "expected") || !strings.Contains(piped.stdout, "retries stay") {
		t.Errorf("piped, the table is not the folded one:\n%s", piped.stdout)
	}

	for _, tc := range []struct {
		name string
		env  []string
		fit  int
	}{
		{"terminal width", nil, 120},
		{"COLUMNS narrower", []string{"COLUMNS=90"}, 90},
		{"COLUMNS=0", []string{"COLUMNS=0"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runInTerminal(t, bin, 120, tc.env, "report", dir, "--format", "table")
			if code != res.code {
				t.Errorf("report exit %d, the run's %d\n%s", code, res.code, out)
			}
			if !strings.Contains(out, "\x1b[") {
				t.Errorf("no colour: chaoskit did not see a terminal\n%s", out)
			}
			if !strings.Contains(out, "SCENARIO") || !strings.Contains(out, "retries stay") || !strings.Contains(out, "scenarios,") {
				t.Fatalf("the output lacks the table or its summary:\n%s", out)
			}
			line, n := widest(out)
			switch {
			case tc.fit > 0 && n > tc.fit:
				t.Errorf("a line is %d columns wide, more than %d:\n%s\nthe output:\n%s", n, tc.fit, line, out)
			case tc.fit == 0 && n <= 120:
				t.Errorf("with COLUMNS=0 the widest line is %d columns: the table was fitted\n%s", n, out)
			}
			if strings.Contains(out, "left out") {
				t.Errorf("columns left out:\n%s", out)
			}
		})
	}
	if t.Failed() {
		if data, err := os.ReadFile(dir + "/report.json"); err == nil {
			t.Logf("report.json:\n%s", data)
		}
	}
}

// TestProgressNotesFollowCOLUMNS: the lines a search leaves (one per run
// off a terminal) wrap at spaces within the width COLUMNS gives, as the
// table does, off a terminal within 120 columns, and not at all with
// COLUMNS=0 (the bar, were there one, would still be cut to 120).
func TestProgressNotesFollowCOLUMNS(t *testing.T) {
	long := "run 7     1.2s  pass  " + strings.Repeat("shop/catalog.itemQuery=error ", 8)
	for _, tc := range []struct {
		columns string
		fit     int // 0: the note whole on one row
	}{{"0", 0}, {"", 120}, {"60", 60}} {
		t.Run("COLUMNS="+tc.columns, func(t *testing.T) {
			t.Setenv("COLUMNS", tc.columns)
			var out bytes.Buffer
			p := newProgress(&out, time.Second)
			p.note(long)
			p.stop()
			rows := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			line, n := widest(out.String())
			switch {
			case tc.fit == 0 && len(rows) != 1:
				t.Errorf("with COLUMNS=0 a note of %d columns took %d rows:\n%s", utf8.RuneCountInString(long), len(rows), out.String())
			case tc.fit > 0 && (n >= tc.fit || len(rows) < 2):
				t.Errorf("a row of %d columns (%q), %d rows: not wrapped within %d:\n%s", n, line, len(rows), tc.fit, out.String())
			}
		})
	}
}
