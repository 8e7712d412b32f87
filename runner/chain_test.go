package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/runner"
	"github.com/chaoskit/chaoskit/timeline"
)

// links is a small link shortener: POST /api/links creates a link and
// answers its code, GET /{code} reads it, DELETE /api/links/{code}
// deletes it. With failEvery set, every failEvery-th create answers 500.
// It notes what chains need checked: the reads of codes it never made,
// and the shortest time between a create's answer and the read of its
// code.
type links struct {
	failEvery int

	mu       sync.Mutex
	n        int
	created  map[string]time.Time
	failed   int
	unknown  []string
	minThink time.Duration
}

func (l *links) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("POST /api/links", func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.n++
		if l.failEvery > 0 && l.n%l.failEvery == 0 {
			l.failed++
			http.Error(w, `{"error":"db down"}`, http.StatusInternalServerError)
			return
		}
		code := fmt.Sprintf("c%d", l.n)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]string{"code": code})
		l.created[code] = time.Now()
	})
	mux.HandleFunc("GET /{code}", func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		defer l.mu.Unlock()
		at, ok := l.created[r.PathValue("code")]
		if !ok {
			l.unknown = append(l.unknown, r.PathValue("code"))
			http.NotFound(w, r)
			return
		}
		if gap := time.Since(at); l.minThink == 0 || gap < l.minThink {
			l.minThink = gap
		}
		_, _ = w.Write([]byte(`{"url":"https://example.com"}`))
	})
	mux.HandleFunc("DELETE /api/links/{code}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

const linksScenario = `name: links
target:
  url: %s
load:
  rate: 40/s
  workers: 2
  requests:
    - name: link-lifecycle
      chain:
        - {name: create, method: POST, path: /api/links, body: '{"url":"https://example.com/{seq}"}', capture: {code: "{json.code}"}}
        - {name: read, path: "/{capture.code}", think: 100ms}
        - {name: delete, method: DELETE, path: "/api/links/{capture.code}", think: 50ms}
phases:
  - name: p
    duration: 1s
`

func runLinks(t *testing.T, l *links) (*timeline.Timeline, *runner.Summary) {
	t.Helper()
	l.created = map[string]time.Time{}
	srv := httptest.NewServer(l.handler())
	defer srv.Close()
	sc, err := plan.Parse("links.yaml", []byte(fmt.Sprintf(linksScenario, srv.URL)), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(context.Background(), sc, runner.Options{Dir: t.TempDir(), Self: "unused"})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := timeline.Load(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return tl, res.Summary
}

// chainFigures counts a chain run's requests by step and reads its phase's
// end event.
func chainFigures(t *testing.T, tl *timeline.Timeline) (steps map[string]int, end timeline.Event, stops []timeline.Event) {
	t.Helper()
	steps = map[string]int{}
	for _, r := range tl.Requests {
		steps[r.Template]++
	}
	for _, e := range tl.Events {
		switch e.Kind {
		case timeline.PhaseEnd:
			end = e
		case timeline.ChainStop:
			stops = append(stops, e)
		}
	}
	return steps, end, stops
}

// TestChainReadsWhatItCreated runs create → read → delete chains against
// a real loopback server: each read asks for the code its own create got,
// after the think time; the pacer paces the starts of the chains at the
// planned rate (with 2 workers for chains that take 150ms each, so
// workers are added), and every chain ends or is cut by the phase's end.
func TestChainReadsWhatItCreated(t *testing.T) {
	l := &links{}
	tl, _ := runLinks(t, l)
	steps, end, stops := chainFigures(t, tl)
	if len(l.unknown) > 0 {
		t.Errorf("reads of codes never created: %v", l.unknown)
	}
	if l.minThink < 100*time.Millisecond {
		t.Errorf("a read came %v after its create's answer, before the think time of 100ms", l.minThink)
	}
	planned, _ := timeline.Number(end.Data[timeline.PlannedRequests])
	sent, _ := timeline.Number(end.Data[timeline.SentRequests])
	cut, _ := timeline.Number(end.Data[timeline.ChainCut])
	creates, reads, deletes := steps["link-lifecycle/create"], steps["link-lifecycle/read"], steps["link-lifecycle/delete"]
	if planned != 40 || sent < 36 || int(sent) != creates {
		t.Errorf("%v chains planned, %v started, %d creates: want 40 planned, at least 36 started, one create each", planned, sent, creates)
	}
	if reads > creates || deletes+int(cut) != creates || cut == 0 {
		t.Errorf("%d creates, %d reads, %d deletes, %v chains cut by the phase's end: every chain ends or is cut, and the last ones are cut", creates, reads, deletes, cut)
	}
	if len(stops) > 0 {
		t.Errorf("chains stopped with every create answered: %v", stops)
	}
	for _, r := range tl.Requests {
		if r.Template == "link-lifecycle/read" && (r.Status != 200 || !strings.HasPrefix(r.Target, "GET /c")) {
			t.Errorf("read %s got %d", r.Target, r.Status)
		}
	}
}

// TestChainStopsWhenItsCaptureIsMissing: a create that answers 500 gives
// no code, so its chain's read is not sent, and the stop is counted with
// its cause.
func TestChainStopsWhenItsCaptureIsMissing(t *testing.T) {
	l := &links{failEvery: 3}
	tl, sum := runLinks(t, l)
	steps, _, stops := chainFigures(t, tl)
	if len(l.unknown) > 0 {
		t.Errorf("reads of codes never created: %v", l.unknown)
	}
	if len(stops) != 1 {
		t.Fatalf("%d chain stop events, want 1: %v", len(stops), stops)
	}
	e := stops[0]
	n, _ := timeline.Number(e.Data[timeline.ChainCount])
	lost, _ := e.Data[timeline.ChainLost].([]any)
	if len(lost) != 2 || lost[1].(map[string]any)[timeline.ChainTemplate] != "link-lifecycle/delete" || lost[1].(map[string]any)[timeline.ChainPath] != "/api/links/{capture.code}" {
		t.Errorf("the stop lost %v, want read and delete", lost)
	}
	if l.failed == 0 || int(n) != l.failed || e.Data[timeline.ChainTemplate] != "link-lifecycle/read" || e.Data[timeline.ChainCapture] != "code" {
		t.Errorf("%d creates failed; stop event %+v", l.failed, e.Data)
	}
	want := fmt.Sprintf("%d iterations of chain link-lifecycle stopped before read: capture code missing (create got 500 ×%d)", l.failed, l.failed)
	if e.Message != want {
		t.Errorf("stop says %q, want %q", e.Message, want)
	}
	if f := sum.Phases[0].Chains; f == nil || f.Stopped != int64(l.failed) || len(f.Stops) != 1 || f.Stops[0] != want || f.Iterations != int64(steps["link-lifecycle/create"]) {
		t.Errorf("run.json says the chains did %+v", f)
	}
	if steps["link-lifecycle/create"]-l.failed < steps["link-lifecycle/read"] {
		t.Errorf("%d creates, %d failed, %d reads", steps["link-lifecycle/create"], l.failed, steps["link-lifecycle/read"])
	}
}
