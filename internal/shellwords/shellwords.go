// Package shellwords splits a command line given as one string (a flag's
// value such as --head-cmd "bin/server --listen 127.0.0.1:{port}") into
// its words the way a POSIX shell would quote them, without being a
// shell: nothing is expanded, redirected or piped.
//
// The rules are the shell's quoting rules (POSIX.1 XCU 2.2): blanks
// separate words; 'single quotes' keep everything up to the next single
// quote; "double quotes" keep everything but \" \\ \$ and \` (the
// backslash goes) and a backslash-newline (both go); outside quotes a
// backslash keeps the character after it. What only a shell would do
// with an unquoted | & ; < > ( ) $ or ` (a pipe, a redirection, a
// variable, a command substitution), or with a $ or ` in double quotes,
// is refused with its column, so that
// a command never means something other than what it seems to.
package shellwords

import (
	"fmt"
	"strings"
)

// Error is a command line Split could not split: what was wrong, at which
// column (counted in characters from 1), and what to write instead.
type Error struct {
	Col int
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("column %d: %s", e.Col, e.Msg) }

// special are the characters only a shell gives a meaning to.
const special = "|&;<>()$`"

// Split returns the words of line. An empty word is kept when it was
// quoted (a pair of quotes with nothing between them); a line of blanks
// has no words.
func Split(line string) ([]string, error) {
	var (
		words  []string
		word   strings.Builder
		inWord bool
	)
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r, col := rs[i], i+1
		switch {
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case r == '\\':
			inWord = true
			if i+1 == len(rs) {
				return nil, &Error{col, "a backslash ends the command: write \\\\ for a backslash"}
			}
			i++
			if rs[i] != '\n' {
				word.WriteRune(rs[i])
			}
		case r == '\'':
			inWord = true
			end := indexRune(rs, i+1, '\'')
			if end < 0 {
				return nil, &Error{col, "a single quote (') is not closed"}
			}
			word.WriteString(string(rs[i+1 : end]))
			i = end
		case r == '"':
			inWord = true
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				switch {
				case rs[j] == '\\' && j+1 < len(rs) && strings.ContainsRune("\"\\$`\n", rs[j+1]):
					j++
					if rs[j] == '\n' {
						continue
					}
				case rs[j] == '$' || rs[j] == '`':
					// A shell expands these in double quotes too.
					return nil, &Error{j + 1, fmt.Sprintf("%q means something only to a shell, and the command is not run by one: write '%c' (single quotes) or \\%c to pass it on", rs[j], rs[j], rs[j])}
				}
				word.WriteRune(rs[j])
			}
			if j == len(rs) {
				return nil, &Error{col, `a double quote (") is not closed`}
			}
			i = j
		case strings.ContainsRune(special, r):
			return nil, &Error{col, fmt.Sprintf("%q means something only to a shell, and the command is not run by one: quote it ('%c') to pass it on, or run a shell: sh -c '...'", r, r)}
		default:
			inWord = true
			word.WriteRune(r)
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

func indexRune(rs []rune, from int, r rune) int {
	for i := from; i < len(rs); i++ {
		if rs[i] == r {
			return i
		}
	}
	return -1
}

// Join quotes words so that Split gives them back: a word with a blank,
// a quote, a backslash or a shell's special character goes in single
// quotes.
func Join(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w != "" && !strings.ContainsAny(w, " \t\n'\"\\"+special) {
			out[i] = w
			continue
		}
		out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
