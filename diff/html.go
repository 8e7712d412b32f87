package diff

import (
	_ "embed"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/reports"
)

//go:embed diff.html.tmpl
var htmlSource string

//go:embed diff.css
var htmlStyle string

var htmlTemplate = template.Must(template.New("diff").Funcs(template.FuncMap{
	"side":  sideText,
	"delta": deltaText,
	"band":  bandText,
	"bill":  billText,
	"where": billWhere,
	"strip": strip,
	"key":   func(k Key) string { return k.String() },
	"minus": func(a, b float64) float64 { return a - b },
}).Parse(htmlSource))

// htmlView is what the comparison's section shows: the result, and its
// figures split by whether they moved.
type htmlView struct {
	*Result
	Moved []Figure
	Same  []Figure
}

// WriteHTML writes the result on the run report's page (see
// reports.WriteComparisonHTML): each side's headline figures, verdicts
// and sections with their charts on one time axis, from the run of each
// side that base and head hold; and between them the comparison: each
// fault's bill on both sides, and every figure as a strip with the base's
// and the head's repetitions on one axis, the medians marked and the band
// drawn around the base's median, the figures that moved first, the
// others folded.
func (r *Result) WriteHTML(w io.Writer, base, head reports.ComparedSide) error {
	v := htmlView{Result: r}
	for _, f := range r.Figures {
		if f.Word == Same {
			v.Same = append(v.Same, f)
		} else {
			v.Moved = append(v.Moved, f)
		}
	}
	var detail strings.Builder
	if err := htmlTemplate.Execute(&detail, v); err != nil {
		return err
	}
	badge, verdict := "same", contract.Pass
	switch {
	case r.Regressed():
		badge, verdict = "regressed", contract.Fail
	case r.Count(Improved) > 0:
		badge = "improved"
	}
	return reports.WriteComparisonHTML(w, reports.Comparison{
		Summary: r.Headline(), Badge: badge, Verdict: verdict,
		Base: base, Head: head,
		// The section is html/template's output, escaped as it was made.
		Detail: template.HTML(detail.String()),
		Style:  template.CSS(htmlStyle),
	})
}

// stripWidth and stripHeight are a strip's size in SVG units.
const (
	stripWidth  = 360
	stripHeight = 28
	stripPad    = 8
)

// stripView is one figure's strip: both sides' repetitions placed on one
// axis.
type stripView struct {
	Base, Head             []float64
	BaseMedian, HeadMedian float64
	BandFrom, BandTo       float64
	HasBand                bool
	Min, Max               string
	W, H                   int
	Empty                  bool
}

// strip places a figure's values on an axis from the smallest to the
// largest of both sides and the band, in SVG units.
func strip(f Figure) stripView {
	s := stripView{W: stripWidth, H: stripHeight}
	vals := append(append([]float64{}, f.Base.Values...), f.Head.Values...)
	if len(vals) == 0 {
		s.Empty = true
		return s
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	hasBand := f.Band > 0 && len(f.Base.Values) > 0
	if hasBand {
		lo, hi = math.Min(lo, f.Base.Median-f.Band), math.Max(hi, f.Base.Median+f.Band)
	}
	if hi == lo {
		lo, hi = lo-1, hi+1
	}
	x := func(v float64) float64 {
		return stripPad + (v-lo)/(hi-lo)*float64(stripWidth-2*stripPad)
	}
	for _, v := range f.Base.Values {
		s.Base = append(s.Base, x(v))
	}
	for _, v := range f.Head.Values {
		s.Head = append(s.Head, x(v))
	}
	if len(f.Base.Values) > 0 {
		s.BaseMedian = x(f.Base.Median)
	}
	if len(f.Head.Values) > 0 {
		s.HeadMedian = x(f.Head.Median)
	}
	if hasBand {
		s.HasBand, s.BandFrom, s.BandTo = true, x(f.Base.Median-f.Band), x(f.Base.Median+f.Band)
	}
	s.Min, s.Max = formatValue(f.Unit, lo), formatValue(f.Unit, hi)
	if f.Unit == UnitVerdict {
		s.Min, s.Max = "fail", "pass"
	}
	return s
}
