package plan

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// Error is one problem in a scenario file, at a position.
type Error struct {
	File string
	Line int
	Col  int
	// Msg says what is wrong; Hint, when set, what would be right.
	Msg  string
	Hint string
	// Excerpt is the offending line of the file, when known.
	Excerpt string

	// unresolved marks a ${name} with no value: other errors on its line
	// follow from it and are not reported.
	unresolved bool
}

// setExcerpt keeps the line of data the error points at.
func (e *Error) setExcerpt(data []byte) {
	if e.Line <= 0 || e.Excerpt != "" {
		return
	}
	lines := strings.Split(string(data), "\n")
	if e.Line <= len(lines) {
		e.Excerpt = strings.TrimRight(lines[e.Line-1], "\r")
	}
}

// Detail returns the error followed by the offending line with a caret
// under the column, as compilers print it.
func (e *Error) Detail() string {
	if e.Excerpt == "" {
		return e.Error()
	}
	num := strconv.Itoa(e.Line)
	pad := strings.Repeat(" ", len(num))
	line, col := excerptWindow([]rune(e.Excerpt), e.Col)
	caret := ""
	if col > 0 {
		// Keep tabs so the caret lines up under tab-indented text.
		prefix := line
		if col-1 < len(prefix) {
			prefix = prefix[:col-1]
		}
		for _, r := range prefix {
			if r == '\t' {
				caret += "\t"
			} else {
				caret += " "
			}
		}
		caret += "^"
	}
	return fmt.Sprintf("%s\n  %s | %s\n  %s | %s", e.Error(), num, string(line), pad, caret)
}

// excerptWidth bounds the part of a line an error shows: a line of 60,000
// brackets is shown around its column, not whole.
const excerptWidth = 100

// excerptWindow returns the part of line an error shows, at most
// excerptWidth runes around column col (1-based, 0 for none) with … where
// it was cut, and col within that part.
func excerptWindow(line []rune, col int) ([]rune, int) {
	if len(line) <= excerptWidth {
		return line, col
	}
	start := max(0, min(col-1-excerptWidth/2, len(line)-excerptWidth))
	end := start + excerptWidth
	out := append([]rune(nil), line[start:end]...)
	if col > 0 {
		col -= start
	}
	if start > 0 {
		out = append([]rune("…"), out...)
		if col > 0 {
			col++
		}
	}
	if end < len(line) {
		out = append(out, '…')
	}
	return out, col
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// ErrorList is every problem found in one or more scenario files. Callers
// treat it as invalid input.
type ErrorList []*Error

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Detail returns every error with its excerpt, one after the other.
func (l ErrorList) Detail() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Detail()
	}
	return strings.Join(msgs, "\n")
}

func (l ErrorList) sort() {
	sort.SliceStable(l, func(i, j int) bool {
		if l[i].File != l[j].File {
			return l[i].File < l[j].File
		}
		if l[i].Line != l[j].Line {
			return l[i].Line < l[j].Line
		}
		return l[i].Col < l[j].Col
	})
}

// IsInvalid reports whether err is a scenario error (bad input, exit 2).
func IsInvalid(err error) bool {
	var l ErrorList
	var e *Error
	return errors.As(err, &l) || errors.As(err, &e)
}

// nodeError is returned by the scalar types' UnmarshalYAML so the position
// survives the decoder, which passes such errors through unchanged.
type nodeError struct {
	tok  *token.Token
	msg  string
	hint string
}

func (e *nodeError) Error() string { return e.msg }

func errAt(n ast.Node, hint, format string, args ...any) error {
	return &nodeError{tok: n.GetToken(), msg: fmt.Sprintf(format, args...), hint: hint}
}

var goTypeError = regexp.MustCompile(`^cannot unmarshal (.+?) into Go (?:struct field \S+ of type|value of type) (\S+)`)

// decodeError turns an error from the YAML decoder into an Error.
func decodeError(file string, err error) *Error {
	var ne *nodeError
	if errors.As(err, &ne) {
		return &Error{File: file, Line: ne.tok.Position.Line, Col: ne.tok.Position.Column, Msg: ne.msg, Hint: ne.hint}
	}
	var ye yaml.Error
	if errors.As(err, &ye) {
		tk := ye.GetToken()
		e := &Error{File: file, Msg: ye.GetMessage()}
		if tk != nil {
			e.Line, e.Col = tk.Position.Line, tk.Position.Column
		}
		var ue *yaml.UnknownFieldError
		if errors.As(err, &ue) && tk != nil {
			e.Msg = fmt.Sprintf("unknown field %q", tk.Value)
		}
		if m := goTypeError.FindStringSubmatch(e.Msg); m != nil {
			want := friendlyType(strings.TrimPrefix(m[2], "scenarios."))
			if got := friendlyType(m[1]); got == "a list" || got == "a mapping" {
				e.Msg = fmt.Sprintf("wrong type: got %s, want %s", got, want)
			} else {
				e.Msg = fmt.Sprintf("wrong type: got %s %q, want %s", m[1], tokenValue(tk), want)
			}
		}
		return e
	}
	return &Error{File: file, Msg: err.Error()}
}

func tokenValue(tk *token.Token) string {
	if tk == nil {
		return ""
	}
	return tk.Value
}

func friendlyType(goType string) string {
	switch {
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "an integer"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map"), strings.HasPrefix(goType, "struct"), goType == "ast.MapSlice", goType == "yaml.MapSlice":
		return "a mapping"
	}
	return goType
}
