package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
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
	index := map[string]string{}
	for i, f := range sc.Included {
		name := strconv.Itoa(i+1) + "-" + filepath.Base(f.Path)
		if err := writeNoFollow(filepath.Join(inc, name), f.Data, 0o644); err != nil {
			return err
		}
		index[f.Spec] = name
	}
	data, err := json.MarshalIndent(index, "", "  ")
	if err != nil {
		return err
	}
	return writeNoFollow(filepath.Join(inc, CopyIncludeIndex), append(data, '\n'), 0o644)
}

// LoadCopy loads the scenario SaveCopy wrote to dir, to judge a saved run
// with. Its includes are read from their copies; an include the copy names
// that was not saved (the copy was edited) is read from disk, relative to
// dir. Request body files are not read (Options.SkipBodyFiles).
func LoadCopy(dir string, opts Options) (*Scenario, error) {
	opts.SkipBodyFiles = true
	path := filepath.Join(dir, CopyFile)
	inc := filepath.Join(dir, CopyIncludeDir)
	data, err := os.ReadFile(filepath.Join(inc, CopyIncludeIndex))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return LoadFile(path, opts)
	case err != nil:
		return nil, err
	}
	var index map[string]string
	if err := json.Unmarshal(data, &index); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(inc, CopyIncludeIndex), err)
	}
	// The loader reads an include at the path it resolves from the
	// including file's directory; map those paths to the copies.
	opts.savedIncludes = map[string]string{}
	for spec, name := range index {
		p := spec
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, spec)
		}
		opts.savedIncludes[filepath.Clean(p)] = filepath.Join(inc, filepath.Base(name))
	}
	return LoadFile(path, opts)
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
