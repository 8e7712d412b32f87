package reports

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

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
	// Nothing that makes a browser fetch: no scripts, stylesheets, images,
	// fonts, frames or links; the only URLs are XML namespace names.
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)<(script|link|img|iframe|object|embed|image|use)\b`),
		regexp.MustCompile(`(?i)\b(src|href|xlink:href)\s*=`),
		regexp.MustCompile(`(?i)url\(`),
		regexp.MustCompile(`(?i)@import`),
	} {
		if m := re.FindString(page); m != "" {
			t.Errorf("the page would reach out: %q", m)
		}
	}
	for _, u := range regexp.MustCompile(`https?://[^"'\s<]+`).FindAllString(page, -1) {
		if u != "http://www.w3.org/2000/svg" && u != "http://www.w3.org/1999/xlink" {
			t.Errorf("URL in the page: %s", u)
		}
	}
	for _, want := range []string{
		"<svg", "fault: productQuery (timeout)", "latency per 100ms", "share of requests by class", "breaker state",
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
	if strings.Contains(page, "<script>") {
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
	r.Scenarios[0].AddMeasurement(contract.Measure(tl, contract.Classification{}))
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

// TestHTMLRendersInChromium opens the report in headless Chromium with its
// background networking off, checks that it renders without a console
// error, an exception or a request beyond the file itself, that the chart
// shows the fault window, and keeps a screenshot as a test artifact (run
// go test -artifacts to keep it).
func TestHTMLRendersInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser; runs without -short")
	}
	bin := chromium(t)
	dir := t.ArtifactDir()
	page := filepath.Join(dir, FileHTML)
	if err := os.WriteFile(page, []byte(renderHTML(t, brokenRun(t))), 0o644); err != nil {
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
	// The fault window is shaded: its colour over white covers a large
	// area of the screenshot.
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	if n := countNear(img, 255, 218, 206, 5); n < 20000 {
		t.Errorf("the shaded fault window covers %d pixels, want a visible area", n)
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
