package plan

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const common = `# shared by the scenarios of this directory
vars:
  rate: 10/s
target:
  demo:
    args: []
load:
  rate: ${rate}
  timeout: 750ms
  requests:
    - path: /products/{1..3}
`

const including = `name: s
include: common.yaml
load:
  timeout: 1s
phases:
  - name: warmup
    duration: 1s
`

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestInclude(t *testing.T) {
	dir := writeFiles(t, map[string]string{"common.yaml": common, "s.yaml": including})
	sc, err := LoadFile(filepath.Join(dir, "s.yaml"), demoCatalog)
	if err != nil {
		t.Fatal(err)
	}
	// From the included file: target, rate (through its var), requests.
	// From the file itself, overriding: the timeout.
	if sc.Target.Demo == nil || sc.Load.Rate != (Rate{10, time.Second}) || len(sc.Load.Requests) != 1 || sc.Load.Timeout.D() != time.Second {
		t.Errorf("merged scenario: target %+v load %+v", sc.Target, sc.Load)
	}
	// --var reaches the included file too.
	sc, err = LoadFile(filepath.Join(dir, "s.yaml"), Options{Catalog: demoCatalog.Catalog, Vars: map[string]string{"rate": "20/s"}})
	if err != nil || sc.Load.Rate != (Rate{20, time.Second}) {
		t.Errorf("--var through an include: %+v %v", sc, err)
	}
}

func TestIncludeErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"missing file", map[string]string{"s.yaml": including}, `s.yaml:2:10: cannot read included file common.yaml`},
		{"error inside the included file", map[string]string{"s.yaml": including, "common.yaml": strings.Replace(common, "timeout: 750ms", "timout: 750ms", 1)},
			`common.yaml:9:3: unknown field "timout" (did you mean "timeout"?)`},
		{"validation error at the included value", map[string]string{"s.yaml": including, "common.yaml": strings.Replace(common, "/products/{1..3}", "products", 1)},
			`common.yaml:11:13: path "products" is not absolute`},
		{"nested include", map[string]string{"s.yaml": including, "common.yaml": "include: other.yaml\n" + common},
			`common.yaml:1:10: an included file cannot include others`},
		{"not a path", map[string]string{"s.yaml": strings.Replace(including, "include: common.yaml", "include: {a: b}", 1), "common.yaml": common},
			`include must be a path or a list of paths`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, tt.files)
			_, err := LoadFile(filepath.Join(dir, "s.yaml"), demoCatalog)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}

// writeTree writes files (paths with / below a temporary directory) and
// returns the directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestIncludeRules(t *testing.T) {
	const secret = "password: hunter2\napi_key: s3cr3t\n"
	includes := func(spec string) string {
		return strings.Replace(including, "include: common.yaml", "include: "+spec, 1)
	}
	tests := []struct {
		name  string
		files map[string]string
		// link, when set, makes svc/link.yaml a symbolic link to it
		// (relative to the temporary directory).
		link string
		// want is in the error; "" means the scenario loads.
		want string
	}{
		{"relative to the including file", map[string]string{"svc/s.yaml": including, "svc/common.yaml": common}, "", ""},
		{"below the scenario's directory", map[string]string{"svc/s.yaml": includes("parts/common.yaml"), "svc/parts/common.yaml": common}, "", ""},
		{"outside the tree", map[string]string{"svc/s.yaml": includes("../shared/common.yaml"), "shared/common.yaml": common}, "",
			"svc/s.yaml:2:10: included file ../shared/common.yaml is outside the scenario's directory"},
		{"outside, named in include_dirs", map[string]string{"svc/s.yaml": "include_dirs: [../shared]\n" + includes("../shared/common.yaml"), "shared/common.yaml": common}, "", ""},
		{"include_dirs that is not a directory", map[string]string{"svc/s.yaml": "include_dirs: [../nope]\n" + including, "svc/common.yaml": common}, "",
			"svc/s.yaml:1:16: include_dirs names"},
		{"a symbolic link out of the tree", map[string]string{"svc/s.yaml": includes("link.yaml"), "shared/common.yaml": common}, "shared/common.yaml",
			"included file link.yaml is outside the scenario's directory"},
		{"an absolute path outside", map[string]string{"svc/s.yaml": includes("/etc/passwd")}, "",
			"included file /etc/passwd is not a scenario file: its name does not end in .yaml or .yml"},
		{"not a scenario file name", map[string]string{"svc/s.yaml": includes("notes.txt"), "svc/notes.txt": secret}, "",
			"included file notes.txt is not a scenario file"},
		{"not a partial scenario", map[string]string{"svc/s.yaml": includes("secret.yaml"), "svc/secret.yaml": secret}, "",
			"svc/s.yaml:2:10: included file secret.yaml is not a partial scenario: no line of it starts with a scenario field"},
		{"an included file setting include_dirs", map[string]string{"svc/s.yaml": including, "svc/common.yaml": "include_dirs: [..]\n" + common}, "",
			"svc/common.yaml:1:15: an included file cannot set include_dirs"},
		{"two documents in an included file", map[string]string{"svc/s.yaml": including, "svc/common.yaml": common + "---\nname: other\n"}, "",
			"svc/common.yaml:12:1: a second YAML document starts here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, tt.files)
			if tt.link != "" {
				if err := os.Symlink(filepath.Join(dir, tt.link), filepath.Join(dir, "svc", "link.yaml")); err != nil {
					t.Fatal(err)
				}
			}
			_, err := LoadFile(filepath.Join(dir, "svc", "s.yaml"), demoCatalog)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(filepath.ToSlash(err.Error()), tt.want) {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
			// Nothing of a file that is not a scenario is shown.
			var l ErrorList
			errors.As(err, &l)
			if d := l.Detail(); strings.Contains(d, "hunter2") || strings.Contains(d, "s3cr3t") || strings.Contains(d, "root:") {
				t.Errorf("the error shows the content of a file that is not a scenario:\n%s", d)
			}
		})
	}
}

// TestIncludedErrorShowsItsOwnLine checks an error in an included file is
// reported with that file's name, position and line, not the includer's.
func TestIncludedErrorShowsItsOwnLine(t *testing.T) {
	dir := writeFiles(t, map[string]string{"s.yaml": including, "common.yaml": strings.Replace(common, "timeout: 750ms", "timout: 750ms", 1)})
	_, err := LoadFile(filepath.Join(dir, "s.yaml"), demoCatalog)
	var l ErrorList
	if !errors.As(err, &l) || len(l) != 1 {
		t.Fatalf("err = %v, want one error", err)
	}
	want := filepath.Join(dir, "common.yaml") + ":9:3: unknown field \"timout\" (did you mean \"timeout\"?)\n  9 |   timout: 750ms\n    |   ^"
	if got := l.Detail(); got != want {
		t.Errorf("detail:\n%s\nwant:\n%s", got, want)
	}
}

// TestCopyKeepsIncludesFromIncludeDirs checks a run directory's copy of a
// scenario whose include lies outside its tree (named in include_dirs)
// loads from the copy, wherever the run directory is.
func TestCopyKeepsIncludesFromIncludeDirs(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"svc/s.yaml":         "include_dirs: [../shared]\n" + strings.Replace(including, "include: common.yaml", "include: ../shared/common.yaml", 1),
		"shared/common.yaml": common,
	})
	sc, err := LoadFile(filepath.Join(dir, "svc", "s.yaml"), demoCatalog)
	if err != nil {
		t.Fatal(err)
	}
	run := t.TempDir()
	if err := SaveCopy(run, sc); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(dir)
	back, err := LoadCopy(run, CopyHash(sc), demoCatalog)
	if err != nil {
		t.Fatal(err)
	}
	if back.Load.Rate != sc.Load.Rate || back.Target.Demo == nil {
		t.Errorf("copy loaded as %+v", back)
	}
}

// TestSaveCopyNeverWritesThroughALink: a link planted in a run directory
// under the name of the scenario copy or of its include directory makes
// SaveCopy fail; what the link points to is left as it was.
func TestSaveCopyNeverWritesThroughALink(t *testing.T) {
	dir := writeTree(t, map[string]string{"s.yaml": including, "common.yaml": common})
	sc, err := LoadFile(filepath.Join(dir, "s.yaml"), demoCatalog)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{CopyFile, CopyIncludeDir} {
		t.Run(name, func(t *testing.T) {
			victim := t.TempDir()
			victimFile := filepath.Join(victim, "file")
			if err := os.WriteFile(victimFile, []byte("theirs"), 0o644); err != nil {
				t.Fatal(err)
			}
			to := victimFile
			if name == CopyIncludeDir {
				to = victim
			}
			run := t.TempDir()
			if err := os.Symlink(to, filepath.Join(run, name)); err != nil {
				t.Fatal(err)
			}
			if err := SaveCopy(run, sc); err == nil {
				t.Errorf("SaveCopy wrote with %s a link", name)
			}
			if data, err := os.ReadFile(victimFile); err != nil || string(data) != "theirs" {
				t.Errorf("the file the link points to: %q, %v", data, err)
			}
			if entries, _ := os.ReadDir(victim); len(entries) != 1 {
				t.Errorf("files written where the link points: %v", entries)
			}
		})
	}
}

// TestACopyIsDataNeverAPointer: a run directory's scenario copy loads only
// as the run saved it (its SHA-256 and its includes'), from the run
// directory itself: an edited copy or include is refused, a link in place
// of a copy is not followed, and an include the copy names that was not
// saved is never looked for on disk, however it is written.
func TestACopyIsDataNeverAPointer(t *testing.T) {
	dir := writeTree(t, map[string]string{"s.yaml": including, "common.yaml": common})
	sc, err := LoadFile(filepath.Join(dir, "s.yaml"), demoCatalog)
	if err != nil {
		t.Fatal(err)
	}
	sum := CopyHash(sc)
	if sum == "" {
		t.Fatal("no hash of the copy")
	}
	victim := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(victim, []byte(common), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := func(t *testing.T) string {
		run := t.TempDir()
		if err := SaveCopy(run, sc); err != nil {
			t.Fatal(err)
		}
		return run
	}
	incCopy := func(run string) string {
		m, _ := filepath.Glob(filepath.Join(run, CopyIncludeDir, "1-*"))
		return m[0]
	}
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, run string)
		want   string
	}{
		{"as saved", func(*testing.T, string) {}, ""},
		{"copy edited", func(t *testing.T, run string) {
			os.WriteFile(filepath.Join(run, CopyFile), append(sc.Source, "\n# edited\n"...), 0o644)
		}, "it is not the copy the run saved"},
		{"copy is a link", func(t *testing.T, run string) {
			os.Remove(filepath.Join(run, CopyFile))
			os.Symlink(filepath.Join(dir, "s.yaml"), filepath.Join(run, CopyFile))
		}, "a symbolic link"},
		{"include edited", func(t *testing.T, run string) {
			os.WriteFile(incCopy(run), []byte(common+"\n# edited\n"), 0o644)
		}, "it is not the copy the run saved"},
		{"include is a link", func(t *testing.T, run string) {
			p := incCopy(run)
			os.Remove(p)
			os.Symlink(victim, p)
		}, "a symbolic link"},
		{"index is a link", func(t *testing.T, run string) {
			p := filepath.Join(run, CopyIncludeDir, CopyIncludeIndex)
			os.Remove(p)
			os.Symlink(victim, p)
		}, "a symbolic link"},
		{"index past its bound", func(t *testing.T, run string) {
			os.Truncate(filepath.Join(run, CopyIncludeDir, CopyIncludeIndex), maxIndex+1)
		}, "larger than 1 MiB"},
		{"include not saved, named absolute", func(t *testing.T, run string) {
			text := strings.Replace(string(sc.Source), "include: common.yaml", "include: "+victim, 1)
			os.WriteFile(filepath.Join(run, CopyFile), []byte(text), 0o644)
		}, "was not saved with the run"},
		{"include not saved, named relative", func(t *testing.T, run string) {
			os.WriteFile(filepath.Join(run, "other.yaml"), []byte(common), 0o644)
			text := strings.Replace(string(sc.Source), "include: common.yaml", "include: other.yaml", 1)
			os.WriteFile(filepath.Join(run, CopyFile), []byte(text), 0o644)
		}, "was not saved with the run"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := fresh(t)
			tt.change(t, run)
			want := sum
			if strings.HasPrefix(tt.name, "include not saved") {
				want = "" // the copy was rewritten to name the file
			}
			_, err := LoadCopy(run, want, demoCatalog)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("LoadCopy = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "/products/") {
				t.Errorf("the error shows a line of a file: %v", err)
			}
		})
	}
}

// TestPartialsAreSkippedInDirectories checks that a directory of scenarios
// may hold files meant only for inclusion, named with a leading _.
func TestPartialsAreSkippedInDirectories(t *testing.T) {
	own := strings.Replace(including, "include: common.yaml", "include: _common.yaml", 1)
	dir := writeFiles(t, map[string]string{"s.yaml": own, "_common.yaml": common, "_unused.yml": common})
	scs, err := LoadAll([]string{dir}, demoCatalog)
	if err != nil {
		t.Fatal(err)
	}
	if len(scs) != 1 || scs[0].Name != "s" || scs[0].Target.Demo == nil {
		t.Fatalf("loaded %d scenarios: %+v", len(scs), scs)
	}
	if got, want := Partials([]string{dir, dir}), []string{filepath.Join(dir, "_common.yaml"), filepath.Join(dir, "_unused.yml")}; !slices.Equal(got, want) {
		t.Errorf("Partials = %q, want %q", got, want)
	}
	// Named on its own, a partial is loaded as what it is.
	if _, err := LoadAll([]string{filepath.Join(dir, "_common.yaml")}, demoCatalog); err == nil || !strings.Contains(err.Error(), "scenario has no name") {
		t.Errorf("a partial named on its own: %v", err)
	}
	// A directory of partials only.
	only := writeFiles(t, map[string]string{"_common.yaml": common})
	if _, err := LoadAll([]string{only}, demoCatalog); err == nil || !strings.Contains(err.Error(), "directory holds no scenario files (*.yaml, *.yml) (its files whose names start with _ are partials") {
		t.Errorf("a directory of partials: %v", err)
	}
	// A shared file without the _ fails as a scenario, and says how to
	// name it.
	dir = writeFiles(t, map[string]string{"s.yaml": including, "common.yaml": common})
	_, err = LoadAll([]string{dir}, demoCatalog)
	want := filepath.Join(dir, "common.yaml") + ": common.yaml is included by s.yaml, and does not load as a scenario of its own (name it _common.yaml, and its include too"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v\nwant it to start with %s", err, want)
	}
}

// TestAnIncludeThatDoesNotParseStopsValidation checks that when an
// included file does not parse (here only once a variable is filled in),
// its error is the only one: validating without it would report what it
// was meant to give as missing.
func TestAnIncludeThatDoesNotParseStopsValidation(t *testing.T) {
	dir := writeFiles(t, map[string]string{"s.yaml": "vars: {rate: \"[\"}\n" + including, "common.yaml": common})
	_, err := LoadFile(filepath.Join(dir, "s.yaml"), demoCatalog)
	var l ErrorList
	if !errors.As(err, &l) || len(l) != 1 || l[0].File != filepath.Join(dir, "common.yaml") {
		t.Fatalf("err = %v, want one error in common.yaml", err)
	}
}
