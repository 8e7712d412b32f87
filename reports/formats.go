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

// Write renders r in each format: the table to out, the others to their
// files in dir. It returns the paths of the files written.
func Write(dir string, out io.Writer, r *Report, formats []Format, opts Options) ([]string, error) {
	var paths []string
	for _, f := range Formats {
		if !slices.Contains(formats, f) {
			continue
		}
		var path string
		var err error
		switch f {
		case Table:
			o := opts.Table
			if o.Dir == "" {
				o.Dir = dir
			}
			err = WriteTable(out, r, o)
		case JSON:
			path, err = writeFile(dir, FileJSON, r, WriteJSON)
		case JUnit:
			path, err = writeFile(dir, FileJUnit, r, WriteJUnit)
		case Markdown:
			path, err = writeFile(dir, FileMarkdown, r, WriteMarkdown)
		case HTML:
			path, err = writeFile(dir, FileHTML, r, WriteHTML)
		}
		if err != nil {
			return paths, fmt.Errorf("%s report: %w", f, err)
		}
		if path != "" {
			paths = append(paths, path)
		}
	}
	return paths, nil
}
