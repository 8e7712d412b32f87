package reports

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/contract"
)

// The timeline chart of a scenario is SVG written here rather than by a
// plotting library, so that its parts are elements a reader can hover
// (each fault window, breaker span and contract window carries a <title>)
// and a test can find by class: "fault" rects, "series" paths,
// "contract-window" rects classed by verdict, "x-tick" labels. The figures
// of each time bucket are not drawn as elements: the svg carries them once,
// as numbers (see bucketData), and the page's script shows the bucket under
// the crosshair; a point and a title per bucket and series made the page
// of a ten-scenario run 1.3 MB. Panels share one time axis; in each, the fault windows and phase
// boundaries are drawn first, under the data, so that the data keeps the
// colours of its legend.

// Colours: one per class, per breaker state, per verdict, and the shading
// of a fault window.
var (
	classColors = map[contract.Class]string{
		contract.Primary:  "#2e7d32",
		contract.Fallback: "#1565c0",
		contract.Rejected: "#f9a825",
		contract.Error:    "#c62828",
		contract.Timeout:  "#6a1b9a",
	}
	stateColors = map[string]string{
		"closed":    "#81c784",
		"open":      "#e53935",
		"half-open": "#ffb300",
	}
	verdictColors = map[contract.Outcome]string{
		contract.Pass:         "#2e7d32",
		contract.Fail:         "#c62828",
		contract.Inconclusive: "#ef6c00",
	}
)

const (
	otherState   = "#9e9e9e"
	faultFill    = "#ff5722"
	faultOpacity = "0.22"
	faultEdge    = "#d84315"
	faultText    = "#bf360c"
	p50Color     = "#424242"
	p99Color     = "#e65100"
	sentColor    = "#616161"
	servedColor  = "#2e7d32"
)

// Geometry, in the SVG's user units; the page scales the SVG to its width.
const (
	chartWidth = 1000
	// The data area of every panel runs from plotLeft to plotRight; the
	// legends sit right of it.
	plotLeft  = 104
	plotRight = 872
	legendX   = 884
	// Above each panel's data: its title; below: the x tick labels.
	titleRoom = 20
	tickRoom  = 22
	phaseRoom = 20
	// The share panel's data starts this far below its top, where the
	// fault windows show above the stacked shares.
	shareStrip = 8
	rowHeight  = 18
	// contractRow is the height of a contract's row: its label, then its
	// window's bar.
	contractRow = 24
)

// chartSVG draws a scenario's timeline: the phases along the top; latency
// p50/p99 per time bucket (log scale); requests sent and served per
// second, a line per phase; the share of each class per bucket; the
// breaker states as bands; and each contract's window coloured by its
// verdict. Fault windows are shaded and labelled in every panel, phase
// boundaries dashed. It returns the SVG element, for inlining into HTML,
// or "" when the scenario has no timeline.
func chartSVG(s ScenarioReport) (string, error) {
	return chartSVGTo(s, 0)
}

// chartSVGTo is chartSVG with the time axis running to end (when it is
// later than the run's own end), so that the charts of two runs compared
// share one axis.
func chartSVGTo(s ScenarioReport, end time.Duration) (string, error) {
	if s.Series == nil || len(s.Series.Buckets) == 0 {
		return "", nil
	}
	c := &chart{s: s, ser: s.Series, end: math.Max(sec(max(s.Series.End, end)), 0.001)}
	c.y = 4
	c.phases()
	c.latency()
	c.throughput()
	c.shares()
	if len(c.ser.Breakers) > 0 {
		c.breakers()
	}
	if len(s.Contracts) > 0 {
		c.contracts()
	}
	height := c.y + 4
	var out strings.Builder
	// data-end, data-left and data-right give the page's script the x
	// scale, for zooming and the crosshair.
	// data-bucket, data-classes and data-buckets are the figures the
	// crosshair shows (see bucketData).
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" viewBox="0 0 %d %s" font-size="11" data-end="%s" data-left="%d" data-right="%d" data-bucket="%s" data-classes="%s" data-buckets="%s">`,
		chartWidth, num(height), strconv.FormatFloat(c.end, 'f', -1, 64), plotLeft, plotRight,
		strconv.FormatFloat(sec(c.ser.Bucket), 'f', -1, 64), esc(classNames()), c.bucketData())
	fmt.Fprintf(&out, `<title>%s: timeline of the run</title>`, esc(s.Name))
	out.WriteString(c.b.String())
	out.WriteString(`</svg>`)
	return out.String(), nil
}

// bucketData is the figures of every bucket as a JSON array of arrays of
// integers, one per bucket: its start in milliseconds since the first
// phase started, its requests, its p50 and p99 in microseconds, then its
// requests of each class in the order of data-classes. Numbers only, so
// that the attribute needs no escaping: about 30 bytes a bucket.
func (c *chart) bucketData() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, bk := range c.ser.Buckets {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "[%d,%d,%d,%d", bk.At.Milliseconds(), bk.Requests, bk.P50.Microseconds(), bk.P99.Microseconds())
		for _, cl := range contract.Classes {
			fmt.Fprintf(&b, ",%d", bk.Classes[cl])
		}
		b.WriteByte(']')
	}
	b.WriteByte(']')
	return b.String()
}

// classNames is the classes in bucketData's order, separated by spaces.
func classNames() string {
	names := make([]string, len(contract.Classes))
	for i, cl := range contract.Classes {
		names[i] = string(cl)
	}
	return strings.Join(names, " ")
}

func sec(d time.Duration) float64 { return d.Seconds() }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// chart accumulates the SVG of one scenario's panels, top to bottom.
type chart struct {
	b   strings.Builder
	s   ScenarioReport
	ser *Series
	end float64 // seconds
	y   float64 // where the next panel starts
}

// x maps seconds since the first phase started onto the data area.
func (c *chart) x(t float64) float64 {
	t = math.Min(math.Max(t, 0), c.end)
	return plotLeft + t/c.end*(plotRight-plotLeft)
}

// panel is one panel's data area, top to bottom.
type panel struct {
	top, bottom float64
}

// open starts a panel of the given data height with its title, and draws
// under it what every panel shows under its data: grid, phase boundaries
// and fault windows (labelled when label is set). extraTop is room above
// the data that the fault windows still cover.
func (c *chart) open(class, title string, height, extraTop float64, label bool) panel {
	fmt.Fprintf(&c.b, `<g class="panel %s">`, class)
	fmt.Fprintf(&c.b, `<text class="panel-title" x="%s" y="%s" text-anchor="middle" font-size="12">%s</text>`,
		num((plotLeft+plotRight)/2), num(c.y+13), esc(title))
	p := panel{top: c.y + titleRoom + extraTop, bottom: c.y + titleRoom + extraTop + height}
	c.b.WriteString(`<g class="under">`)
	for _, t := range c.xTicks() {
		fmt.Fprintf(&c.b, `<line class="grid" x1="%s" x2="%s" y1="%s" y2="%s"/>`, num(c.x(t)), num(c.x(t)), num(p.top), num(p.bottom))
	}
	for i, ph := range c.s.Phases {
		if i == 0 {
			continue
		}
		x := num(c.x(sec(ph.Start)))
		fmt.Fprintf(&c.b, `<line class="phase-boundary" x1="%s" x2="%s" y1="%s" y2="%s"/>`, x, x, num(p.top-extraTop), num(p.bottom))
	}
	type span struct{ x0, x1 float64 }
	var labelled []span
	for _, f := range c.s.Faults {
		x0, x1 := c.x(sec(f.On)), c.x(sec(f.Off))
		fmt.Fprintf(&c.b, `<rect class="fault" x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="%s" stroke="%s" stroke-width="0.8"><title>%s</title></rect>`,
			num(x0), num(p.top-extraTop), num(math.Max(x1-x0, 0.5)), num(p.bottom-p.top+extraTop), faultFill, faultOpacity, faultEdge, esc(faultTitle(f)))
		if !label {
			continue
		}
		// Labels of overlapping windows go one under the other.
		text := "fault: " + faultName(f)
		w := 6.2 * float64(len(text))
		row := 0
		for _, l := range labelled {
			if x0 < l.x1 && l.x0 < x0+w {
				row++
			}
		}
		labelled = append(labelled, span{x0, x0 + w})
		fmt.Fprintf(&c.b, `<text class="fault-label" x="%s" y="%s" fill="%s" font-size="10" font-weight="bold">%s<title>%s</title></text>`,
			num(x0+3), num(p.top+12+12*float64(row)), faultText, esc(text), esc(faultTitle(f)))
	}
	c.b.WriteString(`</g>`)
	return p
}

// close draws the panel's x axis with its tick labels (every panel has
// them, so none needs the one below to be read) and ends the panel.
func (c *chart) close(p panel, axisTitle bool) {
	// The axis and its tick marks are one path; the page's style sheet
	// gives axes and tick labels their colour and size.
	fmt.Fprintf(&c.b, `<g class="x-axis"><path class="axis" d="M%d %sH%d`, plotLeft, num(p.bottom), plotRight)
	for _, t := range c.xTicks() {
		fmt.Fprintf(&c.b, `M%s %sv4`, num(c.x(t)), num(p.bottom))
	}
	c.b.WriteString(`"/>`)
	for _, t := range c.xTicks() {
		fmt.Fprintf(&c.b, `<text class="x-tick" x="%s" y="%s">%ss</text>`, num(c.x(t)), num(p.bottom+15), strconv.FormatFloat(t, 'f', -1, 64))
	}
	c.b.WriteString(`</g>`)
	c.y = p.bottom + tickRoom
	if axisTitle {
		fmt.Fprintf(&c.b, `<text class="x-title" x="%s" y="%s">seconds since the first phase started</text>`,
			num((plotLeft+plotRight)/2), num(c.y+4))
		c.y += 12
	}
	c.b.WriteString(`</g>`)
	c.y += 6
}

// xTicks are round times across the run, about eight of them.
func (c *chart) xTicks() []float64 {
	step := niceStep(c.end / 8)
	var out []float64
	for t := 0.0; t <= c.end+step/1e6; t += step {
		out = append(out, math.Round(t/step)*step)
	}
	return out
}

// niceStep is the 1, 2 or 5 times a power of ten nearest above d.
func niceStep(d float64) float64 {
	if d <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(d)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= d {
			return m * p
		}
	}
	return 10 * p
}

// yAxis draws tick labels and grid lines at the given values.
func (c *chart) yAxis(p panel, ticks []float64, y func(float64) float64, format func(float64) string, title string) {
	c.b.WriteString(`<g class="y-axis">`)
	fmt.Fprintf(&c.b, `<path class="axis" d="M%d %sV%s`, plotLeft, num(p.top), num(p.bottom))
	for _, v := range ticks {
		fmt.Fprintf(&c.b, `M%d %sh4`, plotLeft-4, num(y(v)))
	}
	c.b.WriteString(`"/>`)
	for _, v := range ticks {
		fmt.Fprintf(&c.b, `<text class="y-tick" x="%d" y="%s">%s</text>`, plotLeft-6, num(y(v)), format(v))
	}
	mid := num((p.top + p.bottom) / 2)
	fmt.Fprintf(&c.b, `<text class="y-title" x="14" y="%s" transform="rotate(-90 14 %s)">%s</text>`, mid, mid, esc(title))
	c.b.WriteString(`</g>`)
}

// legend lists the panel's keys right of its data; each key is an SVG
// fragment drawn in a 14×8 box at its origin.
func (c *chart) legend(p panel, keys []legendKey) {
	c.b.WriteString(`<g class="legend">`)
	for i, k := range keys {
		y := p.top + 2 + 14*float64(i)
		fmt.Fprintf(&c.b, `<g class="key" transform="translate(%d %s)">%s<text x="18" y="8" font-size="10">%s</text></g>`, legendX, num(y), k.swatch, esc(k.name))
	}
	c.b.WriteString(`</g>`)
}

type legendKey struct{ name, swatch string }

func lineKey(name, color string, width float64, dashed bool) legendKey {
	dash := ""
	if dashed {
		dash = ` stroke-dasharray="3 2"`
	}
	return legendKey{name, fmt.Sprintf(`<line x1="0" x2="14" y1="4" y2="4" stroke="%s" stroke-width="%s"%s/>`, color, num(width), dash)}
}

func boxKey(name, color, opacity string) legendKey {
	return legendKey{name, fmt.Sprintf(`<rect width="14" height="8" fill="%s" fill-opacity="%s"/>`, color, opacity)}
}

func faultKey() legendKey {
	return legendKey{"fault window", fmt.Sprintf(`<rect class="fault-key" width="14" height="8" fill="%s" fill-opacity="%s" stroke="%s" stroke-width="0.8"/>`, faultFill, faultOpacity, faultEdge)}
}

// phases draws the phases along the top, each named, with its figures on
// hover.
func (c *chart) phases() {
	if len(c.s.Phases) == 0 {
		return
	}
	c.b.WriteString(`<g class="phases">`)
	for i, ph := range c.s.Phases {
		x0, x1 := c.x(sec(ph.Start)), c.x(sec(ph.Start+ph.Duration))
		fill := "#f5f5f5"
		if i%2 == 1 {
			fill = "#e8e8e8"
		}
		title := fmt.Sprintf("phase %s: %s to %s, %d requests, %.1f requests/s, p50 %s, p99 %s",
			ph.Name, secs(ph.Start), secs(ph.Start+ph.Duration), ph.Requests, ph.RPS, fmtMs(ph.P50), fmtMs(ph.P99))
		fmt.Fprintf(&c.b, `<rect class="phase" x="%s" y="%s" width="%s" height="16" fill="%s"><title>%s</title></rect>`,
			num(x0), num(c.y), num(math.Max(x1-x0, 0.5)), fill, esc(title))
		fmt.Fprintf(&c.b, `<text class="phase-label" x="%s" y="%s" text-anchor="middle" font-size="10" fill="#424242">%s<title>%s</title></text>`,
			num((x0+x1)/2), num(c.y+12), esc(ph.Name), esc(title))
	}
	c.b.WriteString(`</g>`)
	c.y += phaseRoom
}

// bucketSpan is a bucket's time span in seconds; the last one ends with
// the run.
func (c *chart) bucketSpan(b Bucket) (float64, float64) {
	return sec(b.At), math.Min(sec(b.At+c.ser.Bucket), c.end)
}

// polyline is the path data of a line through pts, as drawn: a point the
// same as the one before it, or in the middle of a straight horizontal or
// vertical run, is left out. A share that stays level for a phase is then
// two points, not two per bucket.
func polyline(pts [][2]float64) string {
	round := func(v float64) float64 { return math.Round(v*10) / 10 }
	between := func(a, b, c float64) bool { return (a <= b && b <= c) || (a >= b && b >= c) }
	var kept [][2]float64
	for _, p := range pts {
		q := [2]float64{round(p[0]), round(p[1])}
		n := len(kept)
		if n > 0 && kept[n-1] == q {
			continue
		}
		if n >= 2 {
			a, b := kept[n-2], kept[n-1]
			if (a[1] == b[1] && b[1] == q[1] && between(a[0], b[0], q[0])) || (a[0] == b[0] && b[0] == q[0] && between(a[1], b[1], q[1])) {
				kept[n-1] = q
				continue
			}
		}
		kept = append(kept, q)
	}
	var d strings.Builder
	for i, p := range kept {
		if i > 0 {
			d.WriteString(" L")
		} else {
			d.WriteString("M")
		}
		d.WriteString(num(p[0]) + " " + num(p[1]))
	}
	return d.String()
}

// latency draws p50 and p99 per bucket on a log scale, the same kind of
// axis for every scenario, so that charts compare at a glance and a
// timeout's seconds show beside a cache's microseconds.
func (c *chart) latency() {
	lo, hi := math.Inf(1), 0.0
	for _, b := range c.ser.Buckets {
		if b.Requests > 0 {
			lo = math.Min(lo, math.Max(ms(b.P50), 0.001))
			hi = math.Max(hi, ms(b.P99))
		}
	}
	if hi == 0 {
		lo, hi = 0.1, 1
	}
	ticks, lo, hi := logTicks(lo, hi)
	p := c.open("latency", fmt.Sprintf("latency per %v bucket, p50 and p99 (log scale)", c.ser.Bucket), 150, 0, true)
	y := func(v float64) float64 {
		v = math.Min(math.Max(v, lo), hi)
		return p.bottom - (math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*(p.bottom-p.top)
	}
	c.yAxis(p, ticks, y, func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }, "latency, ms (log scale)")
	c.b.WriteString(`<g class="data">`)
	for _, q := range []struct {
		name  string
		get   func(Bucket) time.Duration
		color string
		width float64
	}{
		{"p50", func(b Bucket) time.Duration { return b.P50 }, p50Color, 1.2},
		{"p99", func(b Bucket) time.Duration { return b.P99 }, p99Color, 1.6},
	} {
		c.series(lineStyle{q.name, q.color, q.width, false}, func(b Bucket) (float64, bool) {
			return y(ms(q.get(b))), b.Requests > 0
		}, nil)
	}
	c.b.WriteString(`</g>`)
	c.legend(p, []legendKey{lineKey("p50", p50Color, 1.2, false), lineKey("p99", p99Color, 1.6, false), faultKey()})
	c.close(p, false)
}

// logTicks are the 1-2-5 values from just below lo to just above hi, and
// that range; only the powers of ten when there would be too many.
func logTicks(lo, hi float64) ([]float64, float64, float64) {
	var all []float64
	for e := math.Floor(math.Log10(lo)) - 1; e <= math.Ceil(math.Log10(hi))+1; e++ {
		for _, m := range []float64{1, 2, 5} {
			all = append(all, m*math.Pow(10, e))
		}
	}
	first, last := 0, len(all)-1
	for i, v := range all {
		if v <= lo {
			first = i
		}
	}
	for i := len(all) - 1; i >= 0; i-- {
		if all[i] >= hi*1.15 {
			last = i
		}
	}
	ticks := all[first : last+1]
	if len(ticks) > 9 {
		var decades []float64
		for _, v := range ticks {
			if m := v / math.Pow(10, math.Floor(math.Log10(v)+1e-9)); math.Abs(m-1) < 1e-6 {
				decades = append(decades, v)
			}
		}
		ticks = decades
	}
	for i, v := range ticks {
		ticks[i] = roundSig(v)
	}
	return ticks, roundSig(all[first]), roundSig(all[last])
}

func roundSig(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	return f
}

// series draws a line through the middle of each bucket, broken where at
// says a bucket has no value and, when phaseOf is given, where the phase
// changes: then each phase's line is a path of its own, named by its
// data-phase.
func (c *chart) series(st lineStyle, at func(Bucket) (float64, bool), phaseOf func(Bucket) int) {
	class, color := st.class, st.color
	var d strings.Builder
	segPhase := -1
	flush := func() {
		if d.Len() == 0 {
			return
		}
		attr := ""
		if phaseOf != nil && segPhase >= 0 {
			attr = fmt.Sprintf(` data-phase="%s"`, esc(c.s.Phases[segPhase].Name))
		}
		if st.dashed {
			attr += ` stroke-dasharray="4 3"`
		}
		fmt.Fprintf(&c.b, `<path class="series %s"%s d="%s" fill="none" stroke="%s" stroke-width="%s" stroke-linejoin="round"/>`,
			class, attr, strings.TrimSpace(d.String()), color, num(st.width))
		d.Reset()
	}
	last := -2
	for i, b := range c.ser.Buckets {
		y, ok := at(b)
		t0, t1 := c.bucketSpan(b)
		if !ok || t1 <= t0 {
			continue
		}
		x := c.x((t0 + t1) / 2)
		ph := -1
		if phaseOf != nil {
			ph = phaseOf(b)
		}
		if i != last+1 || ph != segPhase {
			flush()
			segPhase = ph
			fmt.Fprintf(&d, "M%s %s", num(x), num(y))
		} else {
			fmt.Fprintf(&d, " L%s %s", num(x), num(y))
		}
		last = i
	}
	flush()
}

// lineStyle is how a series is drawn and the class it is found by.
type lineStyle struct {
	class, color string
	width        float64
	dashed       bool
}

// phaseIndex is the phase a bucket's middle falls in, -1 for none.
func (c *chart) phaseIndex(b Bucket) int {
	t0, t1 := c.bucketSpan(b)
	mid := (t0 + t1) / 2
	for i, ph := range c.s.Phases {
		if mid >= sec(ph.Start) && mid < sec(ph.Start+ph.Duration) {
			return i
		}
	}
	return -1
}

// throughput draws the requests sent per second and those served (by the
// primary or a fallback) per second, a line per phase: vegeta's rate and
// throughput, over time.
func (c *chart) throughput() {
	rate := func(b Bucket, n int) float64 {
		t0, t1 := c.bucketSpan(b)
		if t1 <= t0 {
			return 0
		}
		return float64(n) / (t1 - t0)
	}
	served := func(b Bucket) int { return b.Classes[contract.Primary] + b.Classes[contract.Fallback] }
	top := 0.0
	for _, b := range c.ser.Buckets {
		top = math.Max(top, rate(b, b.Requests))
	}
	if top == 0 {
		top = 1
	}
	step := niceStep(top / 3)
	hi := math.Ceil(top*1.1/step) * step
	p := c.open("throughput", "requests per second, a line per phase", 80, 0, false)
	y := func(v float64) float64 { return p.bottom - v/hi*(p.bottom-p.top) }
	var ticks []float64
	for v := 0.0; v <= hi+step/1e6; v += step {
		ticks = append(ticks, v)
	}
	c.yAxis(p, ticks, y, func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }, "requests/s")
	inPhase := func(b Bucket) bool { return len(c.s.Phases) == 0 || c.phaseIndex(b) >= 0 }
	c.b.WriteString(`<g class="data">`)
	// Served first and sent dashed over it: where all are served, both
	// show.
	c.series(lineStyle{"served", servedColor, 1.8, false}, func(b Bucket) (float64, bool) { return y(rate(b, served(b))), inPhase(b) }, c.phaseIndex)
	c.series(lineStyle{"sent", sentColor, 1.2, true}, func(b Bucket) (float64, bool) { return y(rate(b, b.Requests)), inPhase(b) }, c.phaseIndex)
	c.b.WriteString(`</g>`)
	c.legend(p, []legendKey{lineKey("sent", sentColor, 1.2, true), lineKey("served", servedColor, 1.8, false), faultKey()})
	c.close(p, false)
}

// shares draws the share of each class per bucket as stacked steps. The
// stack fills its panel, so the fault windows, drawn under it, show in a
// strip above it.
func (c *chart) shares() {
	p := c.open("shares", "share of requests by class", 80, shareStrip, false)
	y := func(v float64) float64 { return p.bottom - v/100*(p.bottom-p.top) }
	c.yAxis(p, []float64{0, 50, 100}, y, func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }, "share (%)")
	c.b.WriteString(`<g class="data">`)
	bottom := make([]float64, len(c.ser.Buckets))
	var keys []legendKey
	for _, cl := range contract.Classes {
		top := make([]float64, len(c.ser.Buckets))
		any := false
		for i, b := range c.ser.Buckets {
			top[i] = bottom[i]
			if b.Requests > 0 {
				top[i] += 100 * float64(b.Classes[cl]) / float64(b.Requests)
				any = any || b.Classes[cl] > 0
			}
		}
		if any {
			// The top edge left to right, then the bottom edge back: a
			// step per bucket.
			var pts [][2]float64
			for i, b := range c.ser.Buckets {
				t0, t1 := c.bucketSpan(b)
				pts = append(pts, [2]float64{c.x(t0), y(top[i])}, [2]float64{c.x(t1), y(top[i])})
			}
			for i := len(c.ser.Buckets) - 1; i >= 0; i-- {
				t0, t1 := c.bucketSpan(c.ser.Buckets[i])
				pts = append(pts, [2]float64{c.x(t1), y(bottom[i])}, [2]float64{c.x(t0), y(bottom[i])})
			}
			fmt.Fprintf(&c.b, `<path class="series share %s" d="%sZ" fill="%s"/>`, cl, polyline(pts), classColors[cl])
			keys = append(keys, boxKey(string(cl), classColors[cl], "1"))
		}
		bottom = top
	}
	c.b.WriteString(`</g>`)
	c.legend(p, append(keys, faultKey()))
	c.close(p, false)
}

// breakers draws each breaker's states as a band.
func (c *chart) breakers() {
	title := "breaker state"
	for _, band := range c.ser.Breakers {
		if band.From != "state samples" {
			title += " (read from the " + band.From + ")"
			break
		}
	}
	n := len(c.ser.Breakers)
	p := c.open("breakers", title, float64(n*rowHeight), 0, false)
	c.b.WriteString(`<g class="y-axis">`)
	for i, band := range c.ser.Breakers {
		fmt.Fprintf(&c.b, `<text class="row-label" x="%d" y="%s" text-anchor="end" dominant-baseline="middle" font-size="10" fill="#424242">%s</text>`,
			plotLeft-6, num(p.top+float64(i*rowHeight)+rowHeight/2), esc(band.Name))
	}
	c.b.WriteString(`</g><g class="data">`)
	var keys []legendKey
	seen := map[string]bool{}
	for i, band := range c.ser.Breakers {
		y0 := p.top + float64(i*rowHeight) + 3
		for _, sp := range band.Spans {
			color, ok := stateColors[sp.State]
			if !ok {
				color = otherState
			}
			x0, x1 := c.x(sec(sp.From)), c.x(sec(sp.To))
			fmt.Fprintf(&c.b, `<rect class="series state %s" x="%s" y="%s" width="%s" height="%d" fill="%s"><title>%s</title></rect>`,
				esc(sp.State), num(x0), num(y0), num(math.Max(x1-x0, 0.5)), rowHeight-6, color,
				esc(fmt.Sprintf("breaker %s %s from %s to %s (%s)", band.Name, sp.State, secs(sp.From), secs(sp.To), secs(sp.To-sp.From))))
			if !seen[sp.State] {
				seen[sp.State] = true
				keys = append(keys, boxKey(sp.State, color, "1"))
			}
		}
	}
	c.b.WriteString(`</g>`)
	c.legend(p, append(keys, faultKey()))
	c.close(p, false)
}

// contracts draws each contract's judged window as a bar in its verdict's
// colour, labelled with its name and verdict.
func (c *chart) contracts() {
	n := len(c.s.Contracts)
	p := c.open("contracts", "contract windows, coloured by verdict", float64(n*contractRow), 0, false)
	c.b.WriteString(`<g class="data">`)
	for i, v := range c.s.Contracts {
		color := verdictColors[v.Outcome]
		row := p.top + float64(i*contractRow)
		label := fmt.Sprintf("%s: %s", v.Name, v.Outcome)
		if v.Start.IsZero() || c.s.Start.IsZero() {
			fmt.Fprintf(&c.b, `<text class="contract-label nowindow %s" x="%d" y="%s" font-size="10" fill="%s">%s (no window on this run)</text>`,
				v.Outcome, plotLeft+2, num(row+11), color, esc(label))
			continue
		}
		t0, t1 := sec(v.Start.Sub(c.s.Start)), sec(v.End.Sub(c.s.Start))
		x0, x1 := c.x(t0), c.x(t1)
		detail := fmt.Sprintf("contract %q: %s\nwindow %s: %s to %s, %d requests", v.Name, v.Outcome, v.Window, secsF(t0), secsF(t1), v.Samples)
		if v.Measured != "" || v.Expected != "" {
			detail += fmt.Sprintf("\nmeasured %s, expected %s", v.Measured, v.Expected)
		}
		if v.Reason != "" {
			detail += "\n" + v.Reason
		}
		fmt.Fprintf(&c.b, `<rect class="contract-window %s" x="%s" y="%s" width="%s" height="8" fill="%s"><title>%s</title></rect>`,
			v.Outcome, num(x0), num(row+14), num(math.Max(x1-x0, 1.5)), color, esc(detail))
		// The label reads from the bar's start, or ends at its end when
		// the bar lies in the right part of the chart.
		anchor, lx := "start", x0
		if float64(len(label))*5.6 > plotRight-x0 {
			anchor, lx = "end", math.Max(x1, plotLeft+float64(len(label))*5.6)
		}
		fmt.Fprintf(&c.b, `<text class="contract-label %s" x="%s" y="%s" text-anchor="%s" font-size="10" fill="%s">%s<title>%s</title></text>`,
			v.Outcome, num(lx), num(row+11), anchor, color, esc(label), esc(detail))
	}
	c.b.WriteString(`</g>`)
	c.legend(p, []legendKey{boxKey("pass", verdictColors[contract.Pass], "1"), boxKey("fail", verdictColors[contract.Fail], "1"),
		boxKey("inconclusive", verdictColors[contract.Inconclusive], "1"), faultKey()})
	c.close(p, true)
}

// faultName is the failpoint's last path element and its term, or a proxy
// or process fault's description.
func faultName(f contract.FaultTiming) string {
	if label := (contract.FaultSpan{Point: f.Point, Term: f.Term}).Label(); label != f.Point {
		return label // a proxy or process fault says what it does
	}
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

// faultTitle is what hovering a fault window shows.
func faultTitle(f contract.FaultTiming) string {
	s := fmt.Sprintf("fault %s\nfailpoint %s", faultName(f), f.Point)
	switch {
	case faultName(f) == f.Term:
		s = "fault " + f.Term // a proxy or process fault: its point adds nothing
	case f.Term != "":
		s += "\nterm " + f.Term
	}
	if f.Phase != "" {
		s += "\nin phase " + f.Phase
	}
	s += fmt.Sprintf("\non at %s, off at %s (%s)", secs(f.On), secs(f.Off), secs(f.Off-f.On))
	if f.Open {
		s += ", never switched off on record"
	}
	if f.Hits != nil {
		s += fmt.Sprintf("\nmarker hits %d", *f.Hits)
	}
	return s
}

func secs(d time.Duration) string { return secsF(d.Seconds()) }

func secsF(s float64) string { return fmt.Sprintf("%.2fs", s) }

// num formats a coordinate: one decimal, no trailing zero.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

func esc(s string) string { return html.EscapeString(s) }
