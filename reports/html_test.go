package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/timeline"
)

func renderHTML(t *testing.T, r *Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestHTMLIsSelfContained(t *testing.T) {
	page := renderHTML(t, brokenRun(t))
	// Nothing that makes a browser fetch: no script from elsewhere, no
	// stylesheets, images, fonts, frames or links; the only URLs are XML
	// namespace names. The one script is inline (zoom and crosshair) and
	// fetches nothing.
	if n := strings.Count(page, "<script"); n != 1 || !strings.Contains(page, "<script>\n") {
		t.Errorf("%d scripts, want the one inline script", n)
	}
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)<(link|img|iframe|object|embed|image|use)\b`),
		regexp.MustCompile(`(?i)<script[^>]`),
		regexp.MustCompile(`\b(fetch|XMLHttpRequest|import|WebSocket|EventSource)\s*\(`),
		regexp.MustCompile(`(?i)\b(src|xlink:href)\s*=`),
		// Links only within the page: the table of contents and the
		// summary rows point at sections.
		regexp.MustCompile(`(?i)\bhref\s*=\s*"[^#]`),
		regexp.MustCompile(`(?i)\bhref\s*=\s*[^"\s]`),
		// url(#id) names an element of the page itself.
		regexp.MustCompile(`(?i)url\([^#]`),
		regexp.MustCompile(`(?i)@import`),
	} {
		if m := re.FindString(page); m != "" {
			t.Errorf("the page would reach out: %q", m)
		}
	}
	if !strings.Contains(page, `href="#scenario-db-timeout-serves-cache"`) {
		t.Error("no link to the scenario's section")
	}
	for _, u := range regexp.MustCompile(`https?://[^"'\s<]+`).FindAllString(page, -1) {
		if u != "http://www.w3.org/2000/svg" && u != "http://www.w3.org/1999/xlink" {
			t.Errorf("URL in the page: %s", u)
		}
	}
	for _, want := range []string{
		"<svg", "fault: productQuery (timeout)", "latency per 100ms", "share of requests by class", "breaker state", "requests per second",
		"time_to_degrade &lt; 100ms", "12:00:03.000", "GET /products/2", "The run failed: the target exited during phase db-error",
		"fewer than min_samples 1000", "<td>db-timeout</td>", "412",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(page, "<svg"); n != 1 {
		t.Errorf("%d charts, want 1 (the broken run has no timeline)", n)
	}
}

func TestHTMLEscapes(t *testing.T) {
	r := fixtureReport(t)
	r.Scenarios[0].Name = `<script>alert(1)</script>`
	page := renderHTML(t, r)
	if strings.Contains(page, "<script>alert(1)") {
		t.Error("a scenario name was not escaped")
	}
}

func TestChartBreakerBandFromHeaders(t *testing.T) {
	r := fixtureReport(t)
	// Without state samples the band comes from the response header, and
	// says so.
	tl := shopTimeline()
	var kept = tl.Events[:0]
	for _, e := range tl.Events {
		if e.Kind != timeline.State {
			kept = append(kept, e)
		}
	}
	tl.Events = kept
	measureInto(&r.Scenarios[0], tl)
	svg, err := chartSVG(r.Scenarios[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg, "breaker state (read from the response header)") {
		t.Error("the band does not say it comes from response headers")
	}
}

// chromium returns the Chromium binary, or skips the test where there is
// none, except in CI, which installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("CHAOSKIT_CHROMIUM"), "/usr/bin/chromium", "chromium"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed; .ci/run installs it with apt-get install chromium")
	}
	t.Skip("chromium is not installed (apt-get install chromium)")
	return ""
}

// chromiumReport is the report the browser test renders: the broken run,
// with a finding.
func chromiumReport(t *testing.T) *Report {
	r := brokenRun(t)
	r.Scenarios[0].Findings = append(r.Scenarios[0].Findings, contract.Finding{Kind: "status_shift", Phase: "db-timeout",
		Message: "GET /products answered 4xx to 12% of its requests in db-timeout, 0% in warmup"})
	return r
}

// TestHTMLRendersInChromium opens the report in headless Chromium with its
// background networking off, checks that it renders without a console
// error, an exception or a request beyond the file itself, and reads the
// rendered DOM: in every panel the fault windows lie under the data, each
// contract's window is drawn with its verdict's class where its window is,
// every panel has x tick labels, windows have hover titles, every bucket's
// figures are in the page, the
// table of contents and summary rows link to sections that exist, the
// throughput has a line per phase, the latency axis says it is log scale,
// findings show; and in the screenshot the shares inside a fault window
// keep their legend's colour. The screenshot is kept as a test artifact
// (go test -artifacts).
func TestHTMLRendersInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser; runs without -short")
	}
	bin := chromium(t)
	dir := t.ArtifactDir()
	page := filepath.Join(dir, FileHTML)
	r := chromiumReport(t)
	if err := os.WriteFile(page, []byte(renderHTML(t, r)), 0o644); err != nil {
		t.Fatal(err)
	}
	var browserLog bytes.Buffer
	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.CombinedOutput(&syncWriter{w: &browserLog}),
	)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	// A bound on a browser that hangs, not a measurement.
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	var mu sync.Mutex
	var problems, requests []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				problems = append(problems, fmt.Sprintf("console.%s", ev.Type))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
				problems = append(problems, fmt.Sprintf("%s %s: %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text))
			}
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate("file://"+page),
		chromedp.WaitVisible(chromedp.CSS(".chart svg")),
	); err != nil {
		t.Fatalf("%v\n%s", err, browserLog.String())
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	overflow, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > document.documentElement.clientWidth`))
	if err != nil {
		t.Fatal(err)
	}
	facts, err := chromedp.Run(ctx, chromedp.Evaluate[string](domFacts))
	if err != nil {
		t.Fatal(err)
	}
	var dom renderedDOM
	if err := json.Unmarshal([]byte(facts), &dom); err != nil {
		t.Fatalf("%v: %s", err, facts)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", filepath.Join(dir, "report.png"))

	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("browser reported %s", p)
	}
	for _, u := range requests {
		if u != "file://"+page && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page requested %s", u)
		}
	}
	if !strings.Contains(text, "degrade fast") || !strings.Contains(text, "FAIL") {
		t.Errorf("rendered text lacks the verdicts:\n%s", text)
	}
	if overflow {
		t.Error("the page is wider than a 1280px window")
	}
	checkDOM(t, r, dom)

	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	// The fault window is shaded: its colour over white covers a large
	// area of the screenshot.
	if n := countNear(img, 255, 218, 206, 5); n < 20000 {
		t.Errorf("the shaded fault window covers %d pixels, want a visible area", n)
	}
	// Inside the fault window the stacked shares keep the colour of their
	// legend's key: the shading is under them, not over.
	for _, probe := range dom.Probes {
		got := img.At(int(probe.DataX), int(probe.DataY))
		key := img.At(int(probe.KeyX), int(probe.KeyY))
		gr, gg, gb, _ := got.RGBA()
		kr, kg, kb, _ := key.RGBA()
		if !near(int(gr>>8), int(kr>>8), 3) || !near(int(gg>>8), int(kg>>8), 3) || !near(int(gb>>8), int(kb>>8), 3) {
			t.Errorf("%s inside the fault window is %v on screen, its legend key %v", probe.Name, got, key)
		}
	}
	if len(dom.Probes) == 0 {
		t.Error("no share to compare with its legend inside the fault window")
	}
}

// renderedDOM is what domFacts reads from the rendered page.
type renderedDOM struct {
	Charts int `json:"charts"`
	Panels []struct {
		Class       string   `json:"class"`
		Faults      int      `json:"faults"`
		FaultTitled int      `json:"faultTitled"`
		Data        int      `json:"data"`
		FaultsFirst bool     `json:"faultsFirst"`
		XTicks      []string `json:"xTicks"`
	} `json:"panels"`
	Windows []struct {
		Class string  `json:"class"`
		Title string  `json:"title"`
		Left  float64 `json:"left"`
		Right float64 `json:"right"`
	} `json:"windows"`
	Labels []string `json:"labels"`
	Phases []struct {
		Name  string  `json:"name"`
		Left  float64 `json:"left"`
		Right float64 `json:"right"`
	} `json:"phases"`
	// Buckets is how many buckets the chart carries figures of.
	Buckets     int        `json:"buckets"`
	SpanTitles  int        `json:"spanTitles"`
	Spans       int        `json:"spans"`
	Anchors     []pageLink `json:"anchors"`
	TOC         []pageLink `json:"toc"`
	Summary     []pageLink `json:"summary"`
	Throughput  []string   `json:"throughput"`
	LatencyAxis string     `json:"latencyAxis"`
	Findings    []string   `json:"findings"`
	Probes      []struct {
		Name  string  `json:"name"`
		DataX float64 `json:"dataX"`
		DataY float64 `json:"dataY"`
		KeyX  float64 `json:"keyX"`
		KeyY  float64 `json:"keyY"`
	} `json:"probes"`
}

type pageLink struct {
	Href     string `json:"href"`
	Resolves bool   `json:"resolves"`
}

// domFacts collects, in the browser, what checkDOM asserts. Positions are
// in page pixels, as in a full-page screenshot.
const domFacts = `(() => {
  const all = (root, sel) => [...root.querySelectorAll(sel)];
  const title = el => { const t = el.querySelector(':scope > title'); return t ? t.textContent : ''; };
  const box = el => { const r = el.getBoundingClientRect(); return {left: r.left + scrollX, right: r.right + scrollX, top: r.top + scrollY, bottom: r.bottom + scrollY}; };
  const link = a => { const h = a.getAttribute('href'); return {href: h, resolves: h.startsWith('#') && document.getElementById(h.slice(1)) !== null}; };
  const out = {charts: all(document, '.chart svg.timeline').length, panels: [], probes: []};
  for (const p of all(document, '.chart svg g.panel')) {
    const faults = all(p, 'rect.fault');
    const data = all(p, 'g.data .series, g.data .point, g.data .contract-window');
    out.panels.push({
      class: p.getAttribute('class'),
      faults: faults.length,
      faultTitled: faults.filter(f => title(f).startsWith('fault ')).length,
      data: data.length,
      faultsFirst: faults.every(f => data.every(d => f.compareDocumentPosition(d) & Node.DOCUMENT_POSITION_FOLLOWING)),
      xTicks: all(p, 'text.x-tick').filter(t => t.getBBox().width > 0).map(t => t.textContent),
    });
  }
  out.windows = all(document, 'rect.contract-window').map(r => ({class: r.getAttribute('class'), title: title(r), left: box(r).left, right: box(r).right}));
  out.labels = all(document, 'text.contract-label').map(t => t.childNodes[0].textContent);
  out.phases = all(document, 'rect.phase').map(r => ({name: title(r).split(':')[0].replace('phase ', ''), left: box(r).left, right: box(r).right}));
  out.buckets = all(document, 'svg.timeline').map(s => JSON.parse(s.dataset.buckets || '[]').length).reduce((a, b) => a + b, 0);
  out.spans = all(document, 'rect.state').length;
  out.spanTitles = all(document, 'rect.state').filter(r => title(r).startsWith('breaker ')).length;
  out.anchors = all(document, 'a[href]').map(link);
  out.toc = all(document, 'nav.toc a').map(link);
  out.summary = all(document, '#summary td.scenario a').map(link);
  out.throughput = all(document, 'g.panel.throughput path.series.sent').map(p => p.dataset.phase || '');
  const yTitle = document.querySelector('g.panel.latency text.y-title');
  out.latencyAxis = yTitle ? yTitle.textContent : '';
  out.findings = all(document, 'ul.findings li').filter(li => li.getBoundingClientRect().height > 0 && getComputedStyle(li).visibility === 'visible').map(li => li.textContent);
  // A point inside the first fault window, mid-height of the share panel,
  // for each share drawn there, and that share's legend key.
  const shares = document.querySelector('g.panel.shares');
  if (shares) {
    const f = box(shares.querySelector('rect.fault'));
    for (const path of all(shares, 'path.share')) {
      const name = path.getAttribute('class').split(' ').pop();
      const svg = path.ownerSVGElement;
      const pt = svg.createSVGPoint();
      const m = path.getScreenCTM();
      // Scan the window's middle column for a pixel of this share.
      const x = (f.left + f.right) / 2;
      const fb = shares.querySelector('rect.fault').getBBox();
      for (let y = fb.y + fb.height - 2; y > fb.y; y -= 1) {
        pt.x = (x - scrollX - m.e) / m.a; pt.y = y;
        if (path.isPointInFill(pt)) {
          const key = [...shares.querySelectorAll('g.legend g.key')].find(k => k.textContent === name);
          if (!key) break;
          const kb = box(key.querySelector('rect'));
          const screen = pt.matrixTransform(m);
          out.probes.push({name, dataX: screen.x + scrollX, dataY: screen.y + scrollY, keyX: (kb.left + kb.right) / 2, keyY: (kb.top + kb.bottom) / 2});
          break;
        }
      }
    }
  }
  return JSON.stringify(out);
})()`

// checkDOM asserts what the rendered page must show of r.
func checkDOM(t *testing.T, r *Report, dom renderedDOM) {
	t.Helper()
	s := r.Scenarios[0]
	if dom.Charts != 1 {
		t.Errorf("%d charts, want 1", dom.Charts)
	}
	seen := map[string]bool{}
	for _, p := range dom.Panels {
		seen[strings.TrimPrefix(p.Class, "panel ")] = true
		if p.Faults != len(s.Faults) || p.FaultTitled != p.Faults {
			t.Errorf("panel %q: %d fault windows, %d with a title; want %d", p.Class, p.Faults, p.FaultTitled, len(s.Faults))
		}
		if p.Data == 0 {
			t.Errorf("panel %q draws no data", p.Class)
		}
		if !p.FaultsFirst {
			t.Errorf("panel %q: a fault window is drawn over the data", p.Class)
		}
		if len(p.XTicks) < 3 || p.XTicks[0] != "0s" {
			t.Errorf("panel %q: x tick labels %q", p.Class, p.XTicks)
		}
	}
	for _, want := range []string{"latency", "throughput", "shares", "breakers", "contracts"} {
		if !seen[want] {
			t.Errorf("no %s panel", want)
		}
	}
	// Each contract's window, with its verdict's class, where it is.
	if len(dom.Windows) != len(s.Contracts) {
		t.Fatalf("%d contract windows, want %d", len(dom.Windows), len(s.Contracts))
	}
	phase := map[string][2]float64{}
	for _, p := range dom.Phases {
		phase[p.Name] = [2]float64{p.Left, p.Right}
	}
	for i, c := range s.Contracts {
		w := dom.Windows[i]
		if w.Class != "contract-window "+string(c.Outcome) {
			t.Errorf("contract %q: window class %q, want verdict %s", c.Name, w.Class, c.Outcome)
		}
		if !strings.Contains(w.Title, c.Name) || !strings.Contains(w.Title, string(c.Outcome)) {
			t.Errorf("contract %q: window title %q", c.Name, w.Title)
		}
		if want := c.Name + ": " + string(c.Outcome); dom.Labels[i] != want {
			t.Errorf("contract label %q, want %q", dom.Labels[i], want)
		}
		ph, ok := phase[c.Phase]
		if !ok {
			t.Errorf("no phase %s in the chart", c.Phase)
			continue
		}
		// A window lies within its phase; one with no settle time starts
		// with it, one with a settle time after it.
		spec := fixtureSpecs[i]
		startsWith := math.Abs(w.Left-ph[0]) < 1
		if w.Left < ph[0]-1 || w.Right > ph[1]+1 || startsWith != (spec.Settle == 0) {
			t.Errorf("contract %q: window drawn from %.0f to %.0f px, its phase %s from %.0f to %.0f (settle %v)",
				c.Name, w.Left, w.Right, c.Phase, ph[0], ph[1], spec.Settle)
		}
	}
	if dom.Buckets != len(s.Series.Buckets) {
		t.Errorf("the chart carries the figures of %d buckets, want %d", dom.Buckets, len(s.Series.Buckets))
	}
	if dom.Spans == 0 || dom.SpanTitles != dom.Spans {
		t.Errorf("%d of %d breaker spans have a title", dom.SpanTitles, dom.Spans)
	}
	for _, a := range dom.Anchors {
		if !a.Resolves {
			t.Errorf("link %s leads nowhere in the page", a.Href)
		}
	}
	var toc []string
	for _, a := range dom.TOC {
		toc = append(toc, a.Href)
	}
	for _, want := range []string{"#summary", "#scenario-db-timeout-serves-cache", "#scenario-db-timeout-serves-cache-contract-2",
		"#scenario-db-timeout-serves-cache-contract-4", "#scenario-db-timeout-serves-cache-findings", "#scenario-orders"} {
		if !slices.Contains(toc, want) {
			t.Errorf("the table of contents lacks %s: %q", want, toc)
		}
	}
	// Grouped by scenario: each scenario's name once, spanning its rows,
	// not repeated in each of the 11.
	if len(dom.Summary) != len(r.Scenarios) {
		t.Errorf("%d summary cells link to their scenario, want one for each of the %d scenarios", len(dom.Summary), len(r.Scenarios))
	}
	for _, a := range dom.Summary {
		if a.Href != "#scenario-db-timeout-serves-cache" && a.Href != "#scenario-orders" {
			t.Errorf("a summary row links to %s", a.Href)
		}
	}
	var phases []string
	for _, p := range s.Phases {
		phases = append(phases, p.Name)
	}
	if !slices.Equal(dom.Throughput, phases) {
		t.Errorf("throughput lines for phases %q, want one per phase %q", dom.Throughput, phases)
	}
	if !strings.Contains(dom.LatencyAxis, "log scale") {
		t.Errorf("the latency axis %q does not say it is log scale", dom.LatencyAxis)
	}
	if len(dom.Findings) != len(s.Findings) || !strings.Contains(dom.Findings[0], "answered 4xx") {
		t.Errorf("visible findings %q, want %d", dom.Findings, len(s.Findings))
	}
}

// countNear counts the pixels within tol of the colour r, g, b.
func countNear(img image.Image, r, g, b, tol int) int {
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(int(pr>>8), r, tol) && near(int(pg>>8), g, tol) && near(int(pb>>8), b, tol) {
				n++
			}
		}
	}
	return n
}

func near(a, b, tol int) bool { return a-b <= tol && b-a <= tol }

// syncWriter lets the browser's output goroutine and the test share a
// buffer.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// TestChartSVG reads the chart as XML, as a browser that is not there
// would: it parses, and in each panel the fault windows come before the
// first data element.
func TestChartSVG(t *testing.T) {
	svg, err := chartSVG(fixtureReport(t).Scenarios[0])
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(svg))
	panel, faults, data := "", 0, 0
	panels := map[string]bool{}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the chart is not well-formed XML: %v", err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		var class string
		for _, a := range el.Attr {
			if a.Name.Local == "class" {
				class = a.Value
			}
		}
		switch {
		case strings.HasPrefix(class, "panel "):
			panel, faults, data = strings.TrimPrefix(class, "panel "), 0, 0
			panels[panel] = true
		case class == "fault":
			faults++
			if data > 0 {
				t.Errorf("panel %s: a fault window after %d data elements", panel, data)
			}
		case strings.HasPrefix(class, "series ") || strings.HasPrefix(class, "point ") || strings.HasPrefix(class, "contract-window "):
			data++
			if faults == 0 {
				t.Errorf("panel %s: data before any fault window", panel)
			}
		}
	}
	if len(panels) != 5 {
		t.Errorf("panels %v, want latency, throughput, shares, breakers and contracts", panels)
	}
}

// TestHTMLOpensOnTheAnswer opens a report in headless Chromium at 1280×800
// and checks what shows before any scrolling: the headline figures
// (requests, error share, p99, verdict counts) and the start of the verdict
// per scenario; then that the charts come before the table of every check.
// The screenshot of the first screen is kept as a test artifact
// (above-the-fold.png). CHAOSKIT_REPORT_HTML names another report to check,
// such as make demo's out/report.html; by default the fixture's.
func TestHTMLOpensOnTheAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser; runs without -short")
	}
	bin := chromium(t)
	dir := t.ArtifactDir()
	page := os.Getenv("CHAOSKIT_REPORT_HTML")
	if page == "" {
		page = filepath.Join(dir, FileHTML)
		if err := os.WriteFile(page, []byte(renderHTML(t, chromiumReport(t))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true), chromedp.UserDataDir(t.TempDir()))
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	// A bound on a browser that hangs, not a measurement.
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate("file://"+abs),
		chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
		t.Fatal(err)
	}
	facts, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({
  figures: Array.from(document.querySelectorAll('#headline .figure')).map(f => ({
    label: f.querySelector('.label').innerText, value: f.querySelector('.value').innerText,
    bottom: f.getBoundingClientRect().bottom})),
  verdicts: (document.querySelector('nav.toc li') || {getBoundingClientRect: () => ({top: 1e9})}).getBoundingClientRect().top,
  chartsFirst: !!document.querySelector('.chart') && !!(document.querySelector('.chart').compareDocumentPosition(document.getElementById('summary')) & Node.DOCUMENT_POSITION_FOLLOWING),
  height: window.innerHeight})`))
	if err != nil {
		t.Fatal(err)
	}
	var dom struct {
		Figures []struct {
			Label, Value string
			Bottom       float64
		}
		Verdicts    float64
		ChartsFirst bool
		Height      float64
	}
	if err := json.Unmarshal([]byte(facts), &dom); err != nil {
		t.Fatalf("%v: %s", err, facts)
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "above-the-fold.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, f := range dom.Figures {
		labels = append(labels, f.Label)
		if f.Bottom > dom.Height || f.Value == "" {
			t.Errorf("headline %s (%q) ends at %.0fpx, below the fold at %.0fpx", f.Label, f.Value, f.Bottom, dom.Height)
		}
	}
	for _, want := range []string{"requests", "errors and timeouts", "p99, worst phase", "contracts passed", "failed", "inconclusive"} {
		if !slices.Contains(labels, want) {
			t.Errorf("no headline figure %q: %q", want, labels)
		}
	}
	if dom.Verdicts > dom.Height {
		t.Errorf("the verdict per scenario starts at %.0fpx, below the fold", dom.Verdicts)
	}
	if !dom.ChartsFirst {
		t.Error("the table of every check comes before the charts")
	}
}

// TestHTMLChartZoomsAndCrosshair drags across a chart in headless Chromium
// with the mouse: every panel zooms to the span dragged over (the x tick
// labels name the new span), the pointer draws a crosshair through every
// panel at the same x, the panels say the figures of the bucket under it,
// and a double click zooms out again.
func TestHTMLChartZoomsAndCrosshair(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser; runs without -short")
	}
	bin := chromium(t)
	page := filepath.Join(t.TempDir(), FileHTML)
	if err := os.WriteFile(page, []byte(renderHTML(t, chromiumReport(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true), chromedp.UserDataDir(t.TempDir()))
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	// A bound on a browser that hangs, not a measurement.
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate("file://"+page),
		chromedp.WaitVisible(chromedp.CSS("svg.timeline"))); err != nil {
		t.Fatal(err)
	}
	type state struct {
		Ticks      []string
		Zoomed     bool
		Transforms int
		Crosshairs []string
		Panels     int
		Time       string
		// Readouts are the figures the panels show of the bucket under
		// the pointer, by panel.
		Readouts map[string]string
		// Where the plot area is on screen, and a row inside the first
		// panel.
		Left, Right, Y, End float64
	}
	read := func() state {
		t.Helper()
		js, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
  const svg = document.querySelector('svg.timeline');
  svg.scrollIntoView();
  const box = svg.getBoundingClientRect(), k = box.width / svg.viewBox.baseVal.width;
  const grid = svg.querySelector('g.panel line.grid');
  return JSON.stringify({
    ticks: Array.from(svg.querySelector('g.panel').querySelectorAll('text.x-tick')).map(t => t.textContent),
    zoomed: svg.classList.contains('zoomed'),
    transforms: Array.from(svg.querySelectorAll('g.zoom')).filter(g => (g.getAttribute('transform') || '').startsWith('matrix')).length,
    crosshairs: Array.from(svg.querySelectorAll('line.crosshair')).filter(l => l.getAttribute('visibility') === 'visible').map(l => l.getAttribute('x1')),
    panels: svg.querySelectorAll('g.panel').length,
    time: (svg.querySelector('text.crosshair-time') || {}).textContent || '',
    readouts: Object.fromEntries(Array.from(svg.querySelectorAll('text.readout')).filter(t => t.getAttribute('visibility') === 'visible')
      .map(t => [t.getAttribute('class').replace('readout ', ''), t.textContent])),
    left: box.left + k * +svg.dataset.left, right: box.left + k * +svg.dataset.right,
    y: box.top + k * (+grid.getAttribute('y1') + 10), end: +svg.dataset.end});
})()`))
		if err != nil {
			t.Fatal(err)
		}
		var s state
		if err := json.Unmarshal([]byte(js), &s); err != nil {
			t.Fatalf("%v: %s", err, js)
		}
		return s
	}
	before := read()
	if before.Zoomed || before.Transforms != 0 || len(before.Ticks) < 3 || before.Ticks[0] != "0s" {
		t.Fatalf("before zooming: %+v", before)
	}
	x0 := before.Left + 0.25*(before.Right-before.Left)
	x1 := before.Left + 0.5*(before.Right-before.Left)
	if err := chromedp.Do(ctx,
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x0, before.Y),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, x0, before.Y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, (x0+x1)/2, before.Y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x1, before.Y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x1, before.Y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
	); err != nil {
		t.Fatal(err)
	}
	zoomed := read()
	if shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
		_ = os.WriteFile(filepath.Join(t.ArtifactDir(), "zoomed.png"), shot, 0o644)
	}
	if !zoomed.Zoomed || zoomed.Transforms < zoomed.Panels {
		t.Fatalf("after dragging over a quarter of the chart: %+v", zoomed)
	}
	// The first tick is now where the drag started: a quarter of the run.
	var first float64
	if _, err := fmt.Sscanf(zoomed.Ticks[0], "%gs", &first); err != nil || math.Abs(first-zoomed.End/4) > zoomed.End/50 {
		t.Errorf("zoomed ticks %q, want the first at %.2fs (a quarter of %.2fs)", zoomed.Ticks, zoomed.End/4, zoomed.End)
	}
	// The crosshair: one line in every panel, all at the pointer's x.
	if len(zoomed.Crosshairs) != zoomed.Panels || slices.Compact(slices.Clone(zoomed.Crosshairs))[0] != zoomed.Crosshairs[len(zoomed.Crosshairs)-1] || zoomed.Time == "" {
		t.Errorf("crosshairs %q over %d panels, time %q", zoomed.Crosshairs, zoomed.Panels, zoomed.Time)
	}
	checkReadouts(t, chromiumReport(t).Scenarios[0], zoomed.Time, zoomed.Readouts)
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(x1, before.Y, chromedp.ClickCount(2))); err != nil {
		t.Fatal(err)
	}
	if back := read(); back.Zoomed || back.Transforms != 0 || !slices.Equal(back.Ticks, before.Ticks) {
		t.Errorf("after a double click: %+v, want the ticks %q", back, before.Ticks)
	}
}

// crosshairLabel is the crosshair's label over a bucket: the time, then the
// bucket's span and requests.
var crosshairLabel = regexp.MustCompile(`^([\d.]+)s · ([\d.]+)s–([\d.]+)s: (\d+) requests$`)

// checkReadouts checks what the crosshair says of the bucket under it
// against the bucket's figures in s: the label names a bucket of the run
// that holds the pointer's time, and the latency, throughput and share
// panels show that bucket's p50 and p99, rates and class shares.
func checkReadouts(t *testing.T, s ScenarioReport, label string, readouts map[string]string) {
	t.Helper()
	m := crosshairLabel.FindStringSubmatch(label)
	if m == nil {
		t.Fatalf("crosshair label %q names no bucket", label)
	}
	at, _ := strconv.ParseFloat(m[1], 64)
	from, _ := strconv.ParseFloat(m[2], 64)
	var b *Bucket
	for i := range s.Series.Buckets {
		if math.Abs(s.Series.Buckets[i].At.Seconds()-from) < 1e-6 {
			b = &s.Series.Buckets[i]
		}
	}
	if b == nil {
		t.Fatalf("crosshair label %q: no bucket starts at %gs", label, from)
	}
	if at < from-0.005 || at > (b.At+s.Series.Bucket).Seconds()+0.005 {
		t.Errorf("crosshair label %q: the pointer's time is not in the bucket", label)
	}
	if m[4] != strconv.Itoa(b.Requests) {
		t.Errorf("crosshair label %q, want %d requests", label, b.Requests)
	}
	// The page rounds as the tables do; allow the last digit.
	near := func(text string, want float64) bool {
		got, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(text, "ms"), "s"), "%"), 64)
		if strings.HasSuffix(text, "s") && !strings.HasSuffix(text, "ms") {
			got *= 1000
		}
		return err == nil && math.Abs(got-want) <= math.Max(0.011, 0.006*want)
	}
	var p50, p99 string
	if _, err := fmt.Sscanf(readouts["latency"], "p50 %s p99 %s", &p50, &p99); err != nil ||
		!near(strings.TrimSuffix(p50, ","), ms(b.P50)) || !near(p99, ms(b.P99)) {
		t.Errorf("latency readout %q, want p50 %s, p99 %s", readouts["latency"], fmtMs(b.P50), fmtMs(b.P99))
	}
	span := math.Min(s.Series.Bucket.Seconds(), s.Series.End.Seconds()-b.At.Seconds())
	served := b.Classes[contract.Primary] + b.Classes[contract.Fallback]
	if want := fmt.Sprintf("sent %.0f/s, served %.0f/s", float64(b.Requests)/span, float64(served)/span); readouts["throughput"] != want {
		t.Errorf("throughput readout %q, want %q", readouts["throughput"], want)
	}
	for _, cl := range contract.Classes {
		n := b.Classes[cl]
		_, share, found := strings.Cut(readouts["shares"], string(cl)+" ")
		share, _, _ = strings.Cut(share, ",")
		if found != (n > 0) || (n > 0 && !near(share, 100*float64(n)/float64(b.Requests))) {
			t.Errorf("shares readout %q: %s has %d of %d requests", readouts["shares"], cl, n, b.Requests)
		}
	}
}
