package shellwords

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, tt := range []struct {
		line string
		want []string
	}{
		{"bin/svc --listen 127.0.0.1:{port}", []string{"bin/svc", "--listen", "127.0.0.1:{port}"}},
		{"  a \t b\n", []string{"a", "b"}},
		{"", nil},
		{"   ", nil},
		{`svc --name 'two words' --x "a b"`, []string{"svc", "--name", "two words", "--x", "a b"}},
		{`svc ''`, []string{"svc", ""}},
		{`svc a''b "c"d`, []string{"svc", "ab", "cd"}},
		{`svc 'a "b" $c | d'`, []string{"svc", `a "b" $c | d`}},
		{`svc "it's \"x\" \\ \$y \q"`, []string{"svc", `it's "x" \ $y \q`}},
		{`svc a\ b \'c \|`, []string{"svc", "a b", "'c", "|"}},
		{"svc a\\\nb", []string{"svc", "ab"}},
		{"svc \"a\\\nb\"", []string{"svc", "ab"}},
		{"svc --greeting=héllo", []string{"svc", "--greeting=héllo"}},
	} {
		got, err := Split(tt.line)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Split(%q) = %q, %v; want %q", tt.line, got, err, tt.want)
		}
	}
}

func TestSplitRefuses(t *testing.T) {
	for _, tt := range []struct {
		line string
		col  int
		says string
	}{
		{"svc 'open", 5, "single quote"},
		{`svc "open`, 5, "double quote"},
		{`svc x\`, 6, "backslash"},
		{"svc > log", 5, `'>'`},
		{"svc | tee", 5, `'|'`},
		{"svc; rm", 4, `';'`},
		{"svc --home $HOME", 12, `'$'`},
		{"svc `id`", 5, "'`'"},
		{`é svc "$HOME"`, 8, `'$'`},
		{"svc &", 5, `'&'`},
	} {
		_, err := Split(tt.line)
		var e *Error
		if !errors.As(err, &e) || e.Col != tt.col || !strings.Contains(e.Msg, tt.says) {
			t.Errorf("Split(%q): %v; want an error at column %d saying %s", tt.line, err, tt.col, tt.says)
		}
	}
}

func TestJoinSplitsBack(t *testing.T) {
	for _, words := range [][]string{
		{"bin/svc", "--listen", "127.0.0.1:{port}"},
		{"svc", "", "two words", "it's", `"q"`, `a\b`, "$x", "a|b"},
	} {
		got, err := Split(Join(words))
		if err != nil || !slices.Equal(got, words) {
			t.Errorf("Split(Join(%q)) = %q, %v (joined: %s)", words, got, err, Join(words))
		}
	}
	if got := Join([]string{"bin/svc", "--listen", "127.0.0.1:{port}"}); got != "bin/svc --listen 127.0.0.1:{port}" {
		t.Errorf("Join quoted what needs no quotes: %s", got)
	}
}
