package diff

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/yuin/goldmark"
	gast "github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
)

// gfm renders Markdown as GitHub does: CommonMark with the GFM
// extensions, raw HTML (<details>) kept.
var gfm = goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))

// structure parses md and renders it, and counts its tables and their
// rows, and the <details> blocks it opens and closes.
func structure(t *testing.T, md string) (out string, tables, rows, opened, closed int) {
	t.Helper()
	src := []byte(md)
	doc := gfm.Parser().Parse(text.NewReader(src))
	err := gast.Walk(doc, func(n gast.Node, entering bool) (gast.WalkStatus, error) {
		if !entering {
			return gast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *east.Table:
			tables++
		case *east.TableRow:
			rows++
		case *gast.HTMLBlock:
			var b strings.Builder
			for i := 0; i < n.Lines().Len(); i++ {
				seg := n.Lines().At(i)
				b.Write(seg.Value(src))
			}
			opened += strings.Count(b.String(), "<details>")
			closed += strings.Count(b.String(), "</details>")
		}
		return gast.WalkContinue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := gfm.Convert(src, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String(), tables, rows, opened, closed
}

// regressedResult is a comparison with a p99 and a fallback regression
// under one fault, and a bill on each side.
func regressedResult(t *testing.T) *Result {
	ms := time.Millisecond
	bill := func(failed int, p99 time.Duration) *contract.Measurement {
		m := run(p99, 900, 20, 5*time.Second, contract.Pass).Measurement
		rec := 1200 * ms
		m.Bills = []contract.Bill{{Fault: "db/timeout", Phase: "db-timeout", Requests: 400, Failed: failed, Degraded: 400 - failed, P99Added: &p99, Recovered: &rec}}
		return m
	}
	var base, head []Run
	for range 3 {
		b := run(40*ms, 900, 20, 5*time.Second, contract.Pass)
		b.Measurement = bill(10, 40*ms)
		h := run(900*ms, 500, 420, 5*time.Second, contract.Pass)
		h.Measurement = bill(200, 900*ms)
		h.Measurement.Phases[0].Classes = map[contract.Class]int{contract.Primary: 80, contract.Fallback: 500, contract.Error: 420}
		h.Measurement.Phases[0].P99 = 900 * ms
		base, head = append(base, b), append(head, h)
	}
	r, err := Compare(base, head, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestMarkdownRendersAsGFM(t *testing.T) {
	r := regressedResult(t)
	var b strings.Builder
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	out, tables, rows, opened, closed := structure(t, md)
	if tables != 2 {
		t.Errorf("%d tables, want 2 (bills, figures):\n%s", tables, md)
	}
	if opened != 2 || closed != 2 {
		t.Errorf("<details> opened %d, closed %d, want 2 and 2", opened, closed)
	}
	head := md[:strings.Index(md, "<details>")]
	for _, want := range []string{"### chaoskit diff: ", "regressions", "under db/timeout", "p99 +860ms", "share.fallback -40.0 pts"} {
		if !strings.Contains(head, want) {
			t.Errorf("the summary above the fold lacks %q:\n%s", want, head)
		}
	}
	// The tables sit inside the folds, and every figure that moved has a row.
	if d, tb, e := strings.Index(out, "<details>"), strings.Index(out, "<table>"), strings.LastIndex(out, "</details>"); !(d < tb && tb < e) {
		t.Errorf("tables not folded in <details>:\n%s", out)
	}
	moved := len(r.Figures) - r.Count(Same)
	if want := len(r.Bills) + moved; rows != want {
		t.Errorf("%d table rows, want %d (%d bills, %d figures)", rows, want, len(r.Bills), moved)
	}
}

func TestMarkdownFitsAComment(t *testing.T) {
	// Thousands of contracts, each regressed, with long names full of
	// Markdown's own characters.
	var base, head []Run
	for range 3 {
		b := run(40*time.Millisecond, 900, 20, 5*time.Second, contract.Pass)
		h := run(40*time.Millisecond, 900, 20, 5*time.Second, contract.Pass)
		b.Verdicts, h.Verdicts = nil, nil
		for i := range 3000 {
			name := fmt.Sprintf("contract %d | with *pipes* and <b>tags</b> and a long tail %s", i, strings.Repeat("x", 40))
			b.Verdicts = append(b.Verdicts, contract.Verdict{Name: name, Outcome: contract.Pass})
			h.Verdicts = append(h.Verdicts, contract.Verdict{Name: name, Outcome: contract.Fail})
		}
		base, head = append(base, b), append(head, h)
	}
	r, err := Compare(base, head, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if n := len([]rune(md)); n > MaxMarkdown {
		t.Fatalf("%d characters, more than a comment holds (%d)", n, MaxMarkdown)
	}
	out, tables, rows, opened, closed := structure(t, md)
	if tables != 1 || opened != 1 || closed != 1 || rows < 100 {
		t.Errorf("tables %d, rows %d, <details> %d/%d: want one folded table of many rows", tables, rows, opened, closed)
	}
	if !strings.Contains(md, "left out to fit a comment") {
		t.Error("the cut is not said")
	}
	if strings.Contains(out, "<b>tags</b>") {
		t.Error("a contract's name was read as HTML")
	}
}
