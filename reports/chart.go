package reports

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strings"
	"time"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/chaoskit/chaoskit/contract"
)

// The chart's colours: one per class, per breaker state, and the shading
// of a fault window.
var (
	classColors = map[contract.Class]color.NRGBA{
		contract.Primary:  {0x2e, 0x7d, 0x32, 0xff},
		contract.Fallback: {0x15, 0x65, 0xc0, 0xff},
		contract.Rejected: {0xf9, 0xa8, 0x25, 0xff},
		contract.Error:    {0xc6, 0x28, 0x28, 0xff},
		contract.Timeout:  {0x6a, 0x1b, 0x9a, 0xff},
	}
	stateColors = map[string]color.NRGBA{
		"closed":    {0x81, 0xc7, 0x84, 0xff},
		"open":      {0xe5, 0x39, 0x35, 0xff},
		"half-open": {0xff, 0xb3, 0x00, 0xff},
	}
	otherState = color.NRGBA{0x9e, 0x9e, 0x9e, 0xff}
	faultFill  = color.NRGBA{0xff, 0x57, 0x22, 0x38}
	faultEdge  = color.NRGBA{0xd8, 0x43, 0x15, 0xff}
	faultText  = color.NRGBA{0xbf, 0x36, 0x0c, 0xff}
	phaseEdge  = color.NRGBA{0x75, 0x75, 0x75, 0xff}
	p50Color   = color.NRGBA{0x42, 0x42, 0x42, 0xff}
	p99Color   = color.NRGBA{0xe6, 0x51, 0x00, 0xff}
)

// Chart size; legends sit in a margin right of the data.
const (
	chartWidth  = 10 * vg.Inch
	chartHeight = 6.6 * vg.Inch
	legendRoom  = 72
)

func sec(d time.Duration) float64 { return d.Seconds() }

// chartSVG draws a scenario's timeline: latency p50/p99 per time bucket,
// the share of each class per bucket, and the breaker states as bands,
// with every fault window shaded and labelled and phase boundaries marked.
// It returns the SVG element, for inlining into HTML.
func chartSVG(s ScenarioReport) (string, error) {
	if s.Series == nil || len(s.Series.Buckets) == 0 {
		return "", nil
	}
	ser := s.Series
	lat, err := latencyPlot(s, ser)
	if err != nil {
		return "", err
	}
	shares, err := sharePlot(s, ser)
	if err != nil {
		return "", err
	}
	panels := []*plot.Plot{lat, shares}
	weights := []float64{0.47, 0.33}
	if len(ser.Breakers) > 0 {
		band, err := breakerPlot(s, ser)
		if err != nil {
			return "", err
		}
		panels = append(panels, band)
		weights = append(weights, 0.08+0.04*float64(len(ser.Breakers)))
	}
	c := vgsvg.New(chartWidth, chartHeight)
	dc := draw.New(c)
	drawAligned(panels, weights, dc)
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	out := buf.String()
	if i := strings.Index(out, "<svg"); i >= 0 {
		out = out[i:]
	}
	return out, nil
}

// drawAligned stacks the panels top to bottom, each taking its weight of
// the height, with their data areas lined up so one time axis serves all.
func drawAligned(panels []*plot.Plot, weights []float64, dc draw.Canvas) {
	var total float64
	for _, w := range weights {
		total += w
	}
	height := dc.Max.Y - dc.Min.Y
	canvases := make([]draw.Canvas, len(panels))
	top := dc.Max.Y
	var left, right vg.Length
	for i, p := range panels {
		h := vg.Length(weights[i]/total) * height
		c := dc
		c.Min.Y, c.Max.Y = top-h, top
		c.Max.X -= legendRoom
		top -= h
		canvases[i] = c
		data := p.DataCanvas(c)
		left = max(left, data.Min.X-c.Min.X)
		right = max(right, c.Max.X-data.Max.X)
	}
	for i, p := range panels {
		c := canvases[i]
		data := p.DataCanvas(c)
		c = draw.Crop(c, left-(data.Min.X-c.Min.X), -(right - (c.Max.X - data.Max.X)), 0, 0)
		p.Draw(c)
	}
}

func newPanel(title, ylabel string, end time.Duration) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = 11
	p.Title.TextStyle.Font.Variant = "Sans"
	p.Y.Label.Text = ylabel
	p.X.Min, p.X.Max = 0, math.Max(sec(end), 0.001)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Variant = "Sans"
		a.Tick.Label.Font.Variant = "Sans"
		a.Label.TextStyle.Font.Size = 9
		a.Tick.Label.Font.Size = 8
	}
	p.Legend.TextStyle.Font.Variant = "Sans"
	p.Legend.TextStyle.Font.Size = 8
	p.Legend.ThumbnailWidth = vg.Points(14)
	// Right of the data, in the margin drawAligned leaves.
	p.Legend.Top, p.Legend.Left = true, false
	p.Legend.XOffs = legendRoom - vg.Points(2)
	return p
}

// shade adds the fault windows from ymin to ymax, with their labels at
// labelY when labelled, and the phase boundaries.
func shade(p *plot.Plot, s ScenarioReport, ymin, ymax, labelY float64, labelled bool) error {
	for i, ph := range s.Phases {
		if i == 0 {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: sec(ph.Start), Y: ymin}, {X: sec(ph.Start), Y: ymax}})
		if err != nil {
			return err
		}
		l.Color, l.Width, l.Dashes = phaseEdge, vg.Points(0.6), []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(l)
	}
	var labels plotter.XYLabels
	for _, f := range s.Faults {
		on, off := sec(f.On), sec(f.Off)
		poly, err := plotter.NewPolygon(plotter.XYs{{X: on, Y: ymin}, {X: off, Y: ymin}, {X: off, Y: ymax}, {X: on, Y: ymax}})
		if err != nil {
			return err
		}
		poly.Color = faultFill
		poly.LineStyle.Color, poly.LineStyle.Width = faultEdge, vg.Points(0.8)
		p.Add(poly)
		labels.XYs = append(labels.XYs, plotter.XY{X: on, Y: labelY})
		labels.Labels = append(labels.Labels, "fault: "+faultName(f))
	}
	if !labelled || len(labels.XYs) == 0 {
		return nil
	}
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Color = faultText
		l.TextStyle[i].Font.Size = 9
		l.TextStyle[i].Font.Variant = "Sans"
		l.TextStyle[i].Font.Weight = xfont.WeightBold
	}
	l.Offset = vg.Point{X: vg.Points(3), Y: vg.Points(-11)}
	p.Add(l)
	return nil
}

// phaseLabels names each phase at its start, along the bottom.
func phaseLabels(p *plot.Plot, s ScenarioReport, y float64) error {
	if len(s.Phases) == 0 {
		return nil
	}
	var labels plotter.XYLabels
	for _, ph := range s.Phases {
		labels.XYs = append(labels.XYs, plotter.XY{X: sec(ph.Start), Y: y})
		labels.Labels = append(labels.Labels, ph.Name)
	}
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Color = phaseEdge
		l.TextStyle[i].Font.Size = 8
		l.TextStyle[i].Font.Variant = "Sans"
	}
	l.Offset = vg.Point{X: vg.Points(3), Y: vg.Points(3)}
	p.Add(l)
	return nil
}

// faultName is the failpoint's last path element and its term.
func faultName(f contract.FaultTiming) string {
	name := f.Point
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	if f.Term != "" {
		term := f.Term
		if i := strings.Index(term, "|"); i >= 0 && strings.HasSuffix(term, `")`) {
			term = term[i+1 : len(term)-2]
		}
		name += " (" + term + ")"
	}
	return name
}

func latencyPlot(s ScenarioReport, ser *contract.Series) (*plot.Plot, error) {
	p := newPanel(fmt.Sprintf("latency per %v, and faults", ser.Bucket), "latency (ms)", ser.End)
	p.X.Tick.Label.Font.Size = 0
	lo, hi := math.Inf(1), 0.0
	for _, b := range ser.Buckets {
		if b.Requests > 0 {
			lo = math.Min(lo, ms(b.P50))
			hi = math.Max(hi, ms(b.P99))
		}
	}
	if hi == 0 {
		lo, hi = 0.1, 1
	}
	lo = math.Max(lo, 0.01)
	logScale := hi/lo > 30
	ymin, ymax, labelY := 0.0, hi*1.25, hi*1.25
	if logScale {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		ymin, ymax, labelY = lo/1.5, hi*4, hi*4
		p.Y.Label.Text = "latency (ms, log)"
	}
	p.Y.Min, p.Y.Max = ymin, ymax
	if err := shade(p, s, ymin, ymax, labelY, true); err != nil {
		return nil, err
	}
	if err := phaseLabels(p, s, ymin); err != nil {
		return nil, err
	}
	for _, q := range []struct {
		name  string
		get   func(contract.Bucket) time.Duration
		color color.NRGBA
		width float64
	}{
		{"p50", func(b contract.Bucket) time.Duration { return b.P50 }, p50Color, 1.2},
		{"p99", func(b contract.Bucket) time.Duration { return b.P99 }, p99Color, 1.6},
	} {
		for i, seg := range segments(ser, q.get, lo) {
			l, err := plotter.NewLine(seg)
			if err != nil {
				return nil, err
			}
			l.Color, l.Width = q.color, vg.Points(q.width)
			p.Add(l)
			if i == 0 {
				p.Legend.Add(q.name, l)
			}
		}
	}
	return p, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// segments are the runs of buckets that hold requests, as lines through
// each bucket's middle; empty buckets break the line.
func segments(ser *contract.Series, get func(contract.Bucket) time.Duration, floor float64) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for _, b := range ser.Buckets {
		if b.Requests == 0 {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, plotter.XY{X: sec(b.At + ser.Bucket/2), Y: math.Max(ms(get(b)), floor)})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func sharePlot(s ScenarioReport, ser *contract.Series) (*plot.Plot, error) {
	p := newPanel("share of requests by class", "share (%)", ser.End)
	p.X.Tick.Label.Font.Size = 0
	p.Y.Min, p.Y.Max = 0, 100
	// Stacked areas, bottom to top in class order. Each bucket's shares
	// are drawn as a step across the bucket.
	bottom := make([]float64, len(ser.Buckets))
	for _, cl := range contract.Classes {
		top := make([]float64, len(ser.Buckets))
		any := false
		for i, b := range ser.Buckets {
			top[i] = bottom[i]
			if b.Requests > 0 {
				top[i] += 100 * float64(b.Classes[cl]) / float64(b.Requests)
				any = any || b.Classes[cl] > 0
			}
		}
		if any {
			var ring plotter.XYs
			for i, b := range ser.Buckets {
				x0, x1 := sec(b.At), sec(min(b.At+ser.Bucket, ser.End))
				ring = append(ring, plotter.XY{X: x0, Y: top[i]}, plotter.XY{X: x1, Y: top[i]})
			}
			for i := len(ser.Buckets) - 1; i >= 0; i-- {
				b := ser.Buckets[i]
				x0, x1 := sec(b.At), sec(min(b.At+ser.Bucket, ser.End))
				ring = append(ring, plotter.XY{X: x1, Y: bottom[i]}, plotter.XY{X: x0, Y: bottom[i]})
			}
			poly, err := plotter.NewPolygon(ring)
			if err != nil {
				return nil, err
			}
			poly.Color = classColors[cl]
			poly.LineStyle.Width = 0
			p.Add(poly)
			p.Legend.Add(string(cl), poly)
		}
		bottom = top
	}
	// Fault windows go over the stack, translucent, so they stay visible.
	if err := shade(p, s, 0, 100, 0, false); err != nil {
		return nil, err
	}
	return p, nil
}

func breakerPlot(s ScenarioReport, ser *contract.Series) (*plot.Plot, error) {
	title := "breaker state"
	for _, band := range ser.Breakers {
		if band.From != "state samples" {
			title += " (read from the " + band.From + ")"
			break
		}
	}
	p := newPanel(title, "", ser.End)
	p.X.Label.Text = "seconds since the first phase started"
	n := len(ser.Breakers)
	p.Y.Min, p.Y.Max = 0, float64(n)
	var ticks []plot.Tick
	seen := map[string]bool{}
	for i, band := range ser.Breakers {
		y0 := float64(n-1-i) + 0.15
		y1 := y0 + 0.7
		ticks = append(ticks, plot.Tick{Value: (y0 + y1) / 2, Label: band.Name})
		for _, sp := range band.Spans {
			poly, err := plotter.NewPolygon(plotter.XYs{{X: sec(sp.From), Y: y0}, {X: sec(sp.To), Y: y0}, {X: sec(sp.To), Y: y1}, {X: sec(sp.From), Y: y1}})
			if err != nil {
				return nil, err
			}
			c, ok := stateColors[sp.State]
			if !ok {
				c = otherState
			}
			poly.Color, poly.LineStyle.Width = c, 0
			p.Add(poly)
			if !seen[sp.State] {
				seen[sp.State] = true
				p.Legend.Add(sp.State, poly)
			}
		}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	if err := shade(p, s, 0, float64(n), 0, false); err != nil {
		return nil, err
	}
	return p, nil
}
