package plan

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameLen bounds a scenario's name, in bytes. The name becomes the name
// of its run directory, and file systems refuse names above 255 bytes;
// 100 leaves room for what chaoskit adds to it (trial suffixes) and keeps
// report tables readable.
const MaxNameLen = 100

// checkName says what is wrong with a scenario name, or "" when it is a
// safe single path element: the run directory DIR/NAME must be a new
// directory inside DIR, never DIR itself, its parent or a path further
// down.
func checkName(name string) string {
	switch {
	case strings.TrimSpace(name) == "":
		return "scenario has no name"
	case len(name) > MaxNameLen:
		return fmt.Sprintf("scenario name is %d bytes long, more than %d", len(name), MaxNameLen)
	case name == "." || name == "..":
		return fmt.Sprintf("scenario name %q names a directory that already exists", name)
	case strings.ContainsAny(name, `/\`):
		return fmt.Sprintf("scenario name %q holds a path separator", name)
	}
	for _, r := range name {
		if r == 0 || unicode.IsControl(r) {
			return fmt.Sprintf("scenario name %q holds a control character", name)
		}
	}
	if name != strings.TrimSpace(name) {
		return fmt.Sprintf("scenario name %q starts or ends with a space", name)
	}
	return ""
}

// safeName suggests a name close to name that checkName accepts.
func safeName(name string) string {
	var b strings.Builder
	for _, r := range strings.TrimSpace(name) {
		switch {
		case r == '/' || r == '\\' || unicode.IsControl(r) || unicode.IsSpace(r):
			b.WriteByte('-')
		default:
			b.WriteRune(r)
		}
	}
	s := strings.Trim(b.String(), "-.")
	if len(s) > MaxNameLen {
		s = s[:MaxNameLen]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	if s == "" {
		return "my-scenario"
	}
	return s
}

// nameHint is the hint for a name checkName refuses.
func nameHint(name string) string {
	if strings.TrimSpace(name) == "" {
		return "add name: my-scenario"
	}
	return fmt.Sprintf("the name becomes the run directory's name: use one path element such as %q", safeName(name))
}
