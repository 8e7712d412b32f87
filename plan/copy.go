package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/chaoskit/chaoskit/internal/outdir"
)

// A run directory keeps the scenario it was run with, so that the run can
// be judged again (chaoskit report) after the scenario file has moved or
// gone: the file as loaded, and every file it includes.
const (
	// CopyFile is the scenario file as loaded.
	CopyFile = "scenario.yaml"
	// CopyIncludeDir holds the included files, and CopyIncludeIndex in it
	// maps each include path, as the scenario writes it, to its copy.
	CopyIncludeDir   = "scenario-include"
	CopyIncludeIndex = "index.json"
)

// CopyHash is the hex SHA-256 of the copy SaveCopy writes of sc (its
// source as loaded); empty for a scenario with no source.
func CopyHash(sc *Scenario) string {
	if len(sc.Source) == 0 {
		return ""
	}
	return sha256Hex(sc.Source)
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// savedInclude is an entry of CopyIncludeIndex: the copy's file name in
// CopyIncludeDir and its SHA-256.
type savedInclude struct {
	Copy   string `json:"copy"`
	SHA256 string `json:"sha256"`
}

// maxIndex bounds CopyIncludeIndex as read back: a scenario includes a
// handful of files.
const maxIndex = 1 << 20

// SaveCopy writes sc's source and the files it includes to dir.
func SaveCopy(dir string, sc *Scenario) error {
	if len(sc.Source) == 0 {
		return nil
	}
	if err := writeNoFollow(filepath.Join(dir, CopyFile), sc.Source, 0o644); err != nil {
		return err
	}
	if len(sc.Included) == 0 {
		return nil
	}
	inc := filepath.Join(dir, CopyIncludeDir)
	if err := os.Mkdir(inc, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	// A link planted under the name is never written through.
	if st, err := os.Lstat(inc); err != nil || !st.IsDir() {
		return fmt.Errorf("%s is not a directory chaoskit made: will not write the included files into it", inc)
	}
	index := map[string]savedInclude{}
	for i, f := range sc.Included {
		name := strconv.Itoa(i+1) + "-" + filepath.Base(f.Path)
		if err := writeNoFollow(filepath.Join(inc, name), f.Data, 0o644); err != nil {
			return err
		}
		index[f.Spec] = savedInclude{Copy: name, SHA256: sha256Hex(f.Data)}
	}
	data, err := json.MarshalIndent(index, "", "  ")
	if err != nil {
		return err
	}
	return writeNoFollow(filepath.Join(inc, CopyIncludeIndex), append(data, '\n'), 0o644)
}

// LoadCopy loads the scenario SaveCopy wrote to dir, to judge a saved run
// with. A run directory may come from elsewhere, so it is read as data:
// every file from dir itself (a link there is refused, never followed),
// the copy only when its SHA-256 is sum (the hash the run recorded; empty
// for a run made before hashes), and each include only from its saved
// copy with the hash the index gives. An include the copy names that was
// not saved is refused, never looked for on disk. Request body files are
// not read (Options.SkipBodyFiles).
func LoadCopy(dir, sum string, opts Options) (*Scenario, error) {
	opts.SkipBodyFiles = true
	path := filepath.Join(dir, CopyFile)
	data, err := outdir.ReadFile(path, MaxFile)
	if err != nil {
		return nil, ErrorList{readError(path, err)}
	}
	if got := sha256Hex(data); sum != "" && got != sum {
		return nil, &CopyHashError{Path: path, Got: got, Want: sum}
	}
	inc := filepath.Join(dir, CopyIncludeDir)
	// The loader reads an include at the path it resolves from the
	// including file's directory; map those paths to the copies.
	opts.savedIncludes = map[string]savedCopy{}
	indexPath := filepath.Join(inc, CopyIncludeIndex)
	idata, err := outdir.ReadFile(indexPath, maxIndex)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Parse(path, data, opts)
	case err != nil:
		return nil, err
	}
	index, err := decodeIndex(idata)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", indexPath, err)
	}
	for spec, e := range index {
		p := spec
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, spec)
		}
		opts.savedIncludes[filepath.Clean(p)] = savedCopy{path: filepath.Join(inc, filepath.Base(e.Copy)), sha256: e.SHA256}
	}
	return Parse(path, data, opts)
}

// decodeIndex reads CopyIncludeIndex: spec -> {copy, sha256}, or, as runs
// made before hashes wrote it, spec -> copy.
func decodeIndex(data []byte) (map[string]savedInclude, error) {
	var index map[string]savedInclude
	if err := json.Unmarshal(data, &index); err == nil {
		return index, nil
	}
	var old map[string]string
	if err := json.Unmarshal(data, &old); err != nil {
		return nil, err
	}
	index = map[string]savedInclude{}
	for spec, name := range old {
		index[spec] = savedInclude{Copy: name}
	}
	return index, nil
}

// savedCopy is where a run directory keeps an included file, and its hash
// (empty for a run made before hashes).
type savedCopy struct {
	path, sha256 string
}

// CopyHashError says a run directory's scenario copy is not the file the
// run saved: it was edited or replaced since.
type CopyHashError struct {
	Path      string
	Got, Want string
}

func (e *CopyHashError) Error() string {
	return fmt.Sprintf("%s has SHA-256 %s, and the run recorded %s: it is not the copy the run saved (edited or replaced since)", e.Path, e.Got, e.Want)
}

// writeNoFollow writes data to path, failing on a link there rather than
// writing where it points.
func writeNoFollow(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
