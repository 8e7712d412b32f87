package reports

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Format is one kind of report.
type Format string

// The formats, and the files they are written to in the report directory.
// The table goes to the terminal.
const (
	Table    Format = "table"
	JSON     Format = "json"
	JUnit    Format = "junit"
	Markdown Format = "markdown"
	HTML     Format = "html"

	FileJSON     = "report.json"
	FileJUnit    = "junit.xml"
	FileMarkdown = "report.md"
	FileHTML     = "report.html"
)

// FileOf names the file format f is written to in a report directory; ""
// for the table, which goes to the terminal.
func FileOf(f Format) string {
	return map[Format]string{JSON: FileJSON, JUnit: FileJUnit, Markdown: FileMarkdown, HTML: FileHTML}[f]
}

// Formats lists every format, in the order Write writes them.
var Formats = []Format{Table, JSON, JUnit, Markdown, HTML}

// DefaultFormats is what a run writes unless told otherwise.
var DefaultFormats = []Format{Table, JSON}

// ParseFormats parses a comma-separated list such as "table,json,html".
func ParseFormats(s string) ([]Format, error) {
	var out []Format
	for _, part := range strings.Split(s, ",") {
		f := Format(strings.ToLower(strings.TrimSpace(part)))
		switch {
		case f == "":
			continue
		case f == "md":
			f = Markdown
		case f == "xml":
			f = JUnit
		case !slices.Contains(Formats, f):
			return nil, fmt.Errorf("unknown report format %q (formats are table, json, junit, markdown, html)", part)
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no report format given (formats are table, json, junit, markdown, html)")
	}
	return out, nil
}

// Options control Write.
type Options struct {
	// Table options for the terminal table.
	Table TableOptions
}

// Write renders r in each format: the files first, in dir, each synced to
// disk before it replaces an older one, then the table to out. A file that
// cannot be written stops Write before the table, so no verdict is shown
// for reports that are not on disk. It returns the paths of the files
// written.
func Write(dir string, out io.Writer, r *Report, formats []Format, opts Options) ([]string, error) {
	var paths []string
	for _, f := range Formats {
		if !slices.Contains(formats, f) {
			continue
		}
		var path string
		var err error
		switch f {
		case JSON:
			path, err = writeFile(dir, FileOf(f), r, WriteJSON)
		case JUnit:
			path, err = writeFile(dir, FileOf(f), r, WriteJUnit)
		case Markdown:
			path, err = writeFile(dir, FileOf(f), r, WriteMarkdown)
		case HTML:
			path, err = writeFile(dir, FileOf(f), r, WriteHTML)
		default:
			continue
		}
		if err != nil {
			return paths, fmt.Errorf("%s report: %w", f, err)
		}
		paths = append(paths, path)
	}
	if slices.Contains(formats, Table) {
		o := opts.Table
		if o.Dir == "" {
			o.Dir = dir
		}
		if err := WriteTable(out, r, o); err != nil {
			return paths, fmt.Errorf("table report: %w", err)
		}
	}
	return paths, nil
}
