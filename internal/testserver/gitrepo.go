package testserver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FallbackSleep is the line the second commit of DiffRepo adds to the
// diff fixture's fallback.
const FallbackSleep = "\ttime.Sleep(40 * time.Millisecond)\n"

// DiffRepo makes a git repository in a temporary directory of t holding
// testdata/diffservice of the chaoskit module at root, committed twice:
// "fast fallback", then "slow fallback", whose fallback sleeps
// (FallbackSleep). Its go.mod points at root's inject module by an
// absolute path, so the module builds wherever its files are exported.
// It returns the repository's directory.
func DiffRepo(t testing.TB, root string) string {
	t.Helper()
	binary(t, "git")
	src := filepath.Join(root, "testdata", "diffservice")
	dir := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if rel == "go.mod" {
			data = []byte(strings.Replace(string(data), "=> ../../inject", "=> "+filepath.Join(root, "inject"), 1))
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	// A file of this repository's own makes its trees new: a build cache
	// kept across tests never holds them yet.
	nonce := fmt.Sprintf("%s %d\n", t.Name(), time.Now().UnixNano())
	if err := os.WriteFile(filepath.Join(dir, "NONCE"), []byte(nonce), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "init", "-q", "-b", "main")
	Git(t, dir, "add", ".")
	Git(t, dir, "commit", "-q", "-m", "fast fallback")
	main := filepath.Join(dir, "main.go")
	data, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	const body = "\treturn fmt.Sprintf(\"default-%d\", id)\n"
	if !strings.Contains(string(data), body) {
		t.Fatalf("%s: no line %q to slow down", main, body)
	}
	slow := strings.Replace(string(data), body, FallbackSleep+body, 1)
	if err := os.WriteFile(main, []byte(slow), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "commit", "-q", "-am", "slow fallback")
	return dir
}

// Git runs git in dir with a fixed author, failing t on an error, and
// returns its output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
