package runner

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pingcap/failpoint"
	vegeta "github.com/tsenart/vegeta/v12/lib"
	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(serveEnv); addr != "" {
		os.Exit(serveForTest(addr)) // a service or dependency of a test's run
	}
	goleak.VerifyTestMain(m)
}

// simulate runs a pacer on a fake clock for d and returns when each hit
// was sent.
func simulate(p vegeta.Pacer, d time.Duration) []time.Duration {
	var at []time.Duration
	elapsed := time.Duration(0)
	for hits := uint64(0); elapsed < d && hits < 1e6; {
		wait, stop := p.Pace(elapsed, hits)
		if stop {
			break
		}
		elapsed += wait
		if elapsed >= d {
			break
		}
		at = append(at, elapsed)
		hits++
	}
	return at
}

func countIn(at []time.Duration, from, to time.Duration) int {
	n := 0
	for _, t := range at {
		if t >= from && t < to {
			n++
		}
	}
	return n
}

func TestStepPacer(t *testing.T) {
	p := StepPacer{Steps: []PacerStep{{PerSecond: 10, For: time.Second}, {PerSecond: 100, For: 500 * time.Millisecond}, {PerSecond: 40}}}
	at := simulate(p, 3*time.Second)
	for _, w := range []struct {
		from, to time.Duration
		want     int
	}{{0, time.Second, 10}, {time.Second, 1500 * time.Millisecond, 50}, {1500 * time.Millisecond, 3 * time.Second, 60}} {
		if got := countIn(at, w.from, w.to); math.Abs(float64(got-w.want)) > 1 {
			t.Errorf("hits in [%v, %v) = %d, want %d", w.from, w.to, got, w.want)
		}
	}
	if p.Rate(0) != 10 || p.Rate(1200*time.Millisecond) != 100 || p.Rate(time.Hour) != 40 {
		t.Errorf("rates %v %v %v", p.Rate(0), p.Rate(1200*time.Millisecond), p.Rate(time.Hour))
	}
	// Behind schedule: send at once.
	if wait, stop := p.Pace(2*time.Second, 3); wait != 0 || stop {
		t.Errorf("behind: wait %v stop %v", wait, stop)
	}
	if _, stop := (StepPacer{}).Pace(0, 0); !stop {
		t.Error("an empty step pacer must stop")
	}
}

func TestPacerFor(t *testing.T) {
	rate := func(s string) plan.Rate { r, _ := plan.ParseRate(s); return r }
	linear := plan.Load{Pacer: &plan.Pacer{Linear: &plan.LinearPacer{From: rate("10/s"), To: rate("110/s")}}}
	at := simulate(pacerFor(linear, 2*time.Second), 2*time.Second)
	// The integral of 10 + 50t over 2s is 120.
	if len(at) < 118 || len(at) > 121 {
		t.Errorf("linear ramp sent %d, want 120", len(at))
	}
	sine := plan.Load{Pacer: &plan.Pacer{Sine: &plan.SinePacer{Mean: rate("100/s"), Amplitude: rate("50/s"), Period: plan.Duration(time.Second), Start: "peak"}}}
	sp := pacerFor(sine, time.Second)
	if r := sp.Rate(0); math.Abs(r-150) > 0.01 {
		t.Errorf("sine starting at the peak: rate %v, want 150", r)
	}
	if got := len(simulate(sp, 2*time.Second)); got < 198 || got > 201 {
		t.Errorf("sine over two periods sent %d, want 200", got)
	}
	if got := len(simulate(pacerFor(plan.Load{Rate: rate("12/100ms")}, time.Second), time.Second)); got != 120 {
		t.Errorf("constant 12/100ms sent %d in 1s", got)
	}
}

func TestSchedule(t *testing.T) {
	d := func(s string) plan.Duration { v, _ := time.ParseDuration(s); return plan.Duration(v) }
	p := &plan.Phase{Duration: d("4s"), Faults: []plan.Fault{
		{Path: "a"},
		{Path: "b", After: d("1s"), For: d("1s")},
		{Path: "c", After: d("2s")},
		{Path: "b", After: d("2s"), For: d("1s")},
	}}
	var got []string
	for _, s := range schedule(p) {
		verb := "off"
		if s.on {
			verb = "on"
		}
		got = append(got, s.at.String()+" "+verb+" "+strings.Join(paths(s.faults), ","))
	}
	want := "0s on a|1s on b|2s off b|2s on c,b|3s off b"
	if strings.Join(got, "|") != want {
		t.Errorf("schedule %s\nwant     %s", strings.Join(got, "|"), want)
	}
}

// The target's process faults and the failpoints share a lane; a proxy
// and a dependency's process each have their own, so that a slow restart
// holds up nothing else.
func TestLanes(t *testing.T) {
	d := func(s string) plan.Duration { v, _ := time.ParseDuration(s); return plan.Duration(v) }
	p := &plan.Phase{Duration: d("4s"), Faults: []plan.Fault{
		{Path: "process/target", Process: "target", After: d("1s"), For: d("1s")},
		{Path: "shop/itemQuery", Point: "shop/itemQuery", After: d("2s"), For: d("1s")},
		{Path: "proxy/px", Proxy: "px", After: d("1s"), For: d("2s")},
		{Path: "process/dep", Process: "dep", After: d("2s")},
	}}
	var got []string
	for _, lane := range lanes(schedule(p)) {
		var ss []string
		for _, s := range lane {
			verb := "off"
			if s.on {
				verb = "on"
			}
			ss = append(ss, s.at.String()+" "+verb+" "+strings.Join(paths(s.faults), ","))
		}
		got = append(got, strings.Join(ss, "|"))
	}
	want := []string{
		"1s on process/target|2s off process/target|2s on shop/itemQuery|3s off shop/itemQuery",
		"1s on proxy/px|3s off proxy/px",
		"2s on process/dep",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lanes\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestAckSummary(t *testing.T) {
	var acks []time.Duration
	for i := 1; i <= 200; i++ {
		acks = append(acks, time.Duration(i)*time.Millisecond)
	}
	s := AckSummary(acks)
	if s.Count != 200 || s.P99 != 198*time.Millisecond || s.Max != 200*time.Millisecond {
		t.Errorf("summary %+v", s)
	}
	if s := AckSummary([]time.Duration{3 * time.Millisecond}); s.P99 != 3*time.Millisecond {
		t.Errorf("one ack: %+v", s)
	}
	if s := AckSummary(nil); s.Count != 0 {
		t.Errorf("none: %+v", s)
	}
}

func TestProgress(t *testing.T) {
	var st phaseStats
	for _, c := range []timeline.Class{timeline.Primary, timeline.Fallback, timeline.Primary, timeline.Rejected, timeline.Timeout} {
		st.add(c)
	}
	line := progressLine("db-timeout", 2*time.Second, 4*time.Second, st.snapshot(), breakerStates(map[string]any{
		"breakers": map[string]any{"db": map[string]any{"state": "open"}, "cache": "closed"}}))
	want := "  db-timeout           2.0s/4.0s         2 req/s  primary  40.0%  fallback  20.0%  rejected  20.0%  timeout  20.0%  breaker cache=closed db=open"
	if line != want {
		t.Errorf("progress\n%q\nwant\n%q", line, want)
	}
	if breakerStates(map[string]any{"other": 1}) != "" {
		t.Error("no breakers must say nothing")
	}
	// Without a classifier the line says only how fast load goes.
	var bare phaseStats
	bare.add("")
	if line := progressLine("p", time.Second, time.Second, bare.snapshot(), ""); line != "  p                    1.0s/1.0s         1 req/s" {
		t.Errorf("unclassified progress %q", line)
	}
}

func TestHeaderFilter(t *testing.T) {
	for _, tc := range []struct {
		names []string
		all   bool
		name  string
		keep  bool
	}{
		{nil, false, "X-Served-From", false}, // a service's headers only when a scenario names them
		{nil, false, "Retry-After", true},
		{nil, false, "X-Served-By", false},
		{[]string{"x-served-by"}, false, "X-Served-By", true},
		{[]string{"x-served-by"}, false, "X-Cache", false},
		{nil, true, "X-Cache", true},
	} {
		if got := headerFilter(tc.names, tc.all)(tc.name); got != tc.keep {
			t.Errorf("%v (all %v) keeps %s: %v, want %v", tc.names, tc.all, tc.name, got, tc.keep)
		}
	}
}

func TestRetry(t *testing.T) {
	var slept []time.Duration
	rt := retry{attempts: 4, wait: 10 * time.Millisecond, timeout: time.Second, sleep: func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		return nil
	}}
	calls := 0
	err := rt.do(context.Background(), func(context.Context) error {
		calls++
		if calls < 3 {
			return inject.ErrUnreachable
		}
		return nil
	})
	if err != nil || calls != 3 || len(slept) != 2 || slept[0] != 10*time.Millisecond || slept[1] != 20*time.Millisecond {
		t.Errorf("err %v, %d calls, slept %v", err, calls, slept)
	}
	// A refusal is final: no retry.
	calls, slept = 0, nil
	refused := errors.New("refused")
	if err := rt.do(context.Background(), func(context.Context) error { calls++; return refused }); err != refused || calls != 1 {
		t.Errorf("refusal retried: %v after %d calls", err, calls)
	}
	calls = 0
	if err := rt.do(context.Background(), func(context.Context) error { calls++; return inject.ErrUnreachable }); !errors.Is(err, inject.ErrUnreachable) || calls != 4 {
		t.Errorf("gave up with %v after %d calls", err, calls)
	}
}

// flakyEndpoint is a real failpoint control endpoint whose connections
// are dropped while down is set, as a restarting or overloaded endpoint's
// would be.
func flakyEndpoint(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var drops atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if drops.Load() > 0 {
			drops.Add(-1)
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		(&failpoint.HttpHandler{}).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &drops
}

func testRun(t *testing.T, control string) *run {
	r := &run{dir: t.TempDir(), tw: timeline.NewWriter(io.Discard), tl: &timeline.Timeline{}}
	r.tgt = &target{controlAddr: control, control: inject.NewHTTPController(control)}
	r.faults = &faults{run: r, on: map[string]bool{}}
	r.opts.StateDir = t.TempDir()
	return r
}

func TestFaultsSurviveALostEndpoint(t *testing.T) {
	srv, drops := flakyEndpoint(t)
	r := testRun(t, srv.URL)
	const point = "example.com/svc/store/q"
	fault := plan.Fault{Path: point, Term: `return("x")`}
	drops.Store(2)
	if err := r.faults.expect([]plan.Fault{fault}); err != nil {
		t.Fatal(err)
	}
	due := time.Now()
	if _, err := r.faults.enable("p", due, []plan.Fault{fault}); err != nil {
		t.Fatalf("enable through two dropped connections: %v", err)
	}
	if st, _ := failpoint.Status(point); st != `return("x")` {
		t.Fatalf("failpoint status %q", st)
	}
	rec, err := readRecord(filepath.Join(r.dir, FaultRecord))
	if err != nil || len(rec.Points) != 1 || rec.Control != srv.URL || len(rec.Enabled) != 1 {
		t.Fatalf("record %+v, %v", rec, err)
	}
	if _, err := readRecord(pendingFile(r.opts.StateDir, srv.URL)); err != nil {
		t.Fatalf("no pending entry: %v", err)
	}
	drops.Store(4)
	if err := r.faults.rollback(); err != nil {
		t.Fatalf("rollback through four dropped connections: %v", err)
	}
	if _, err := failpoint.Status(point); err == nil {
		t.Error("fault still on after rollback")
	}
	if rec, _ := readRecord(filepath.Join(r.dir, FaultRecord)); len(rec.Points) != 0 {
		t.Errorf("record still lists %v", rec.Points)
	}
	if _, err := readRecord(pendingFile(r.opts.StateDir, srv.URL)); err == nil {
		t.Error("pending entry kept after a clean rollback")
	}
	var on, off int
	for _, e := range r.tl.Events {
		switch e.Kind {
		case timeline.FaultOn:
			on++
			if e.Ack <= 0 || e.Point != point {
				t.Errorf("on event %+v", e)
			}
		case timeline.FaultOff:
			off++
		}
	}
	if on != 1 || off != 1 {
		t.Errorf("on/off events %d/%d", on, off)
	}
}

func TestRollbackPendingOnlyWhatIsOn(t *testing.T) {
	srv, _ := flakyEndpoint(t)
	r := testRun(t, srv.URL)
	const a, b = "example.com/svc/store/a", "example.com/svc/store/b"
	list := []plan.Fault{{Path: a, Term: "return(1)"}, {Path: b, Term: "return(2)"}}
	if err := r.faults.expect(list); err != nil {
		t.Fatal(err)
	}
	if _, err := r.faults.enable("p", time.Now(), list); err != nil {
		t.Fatal(err)
	}
	// The run is "killed": nothing rolls back. b is switched off by hand.
	failpoint.Disable(b)
	res, err := rollbackPending(context.Background(), r.opts.StateDir, srv.URL, nil)
	if err != nil || len(res.Disabled) != 1 || res.Disabled[0] != a || res.Dir != r.dir {
		t.Fatalf("rollbackPending = %+v, %v", res, err)
	}
	if _, err := failpoint.Status(a); err == nil {
		t.Error("a still on")
	}
	if res, err := rollbackPending(context.Background(), r.opts.StateDir, srv.URL, nil); err != nil || len(res.Disabled) != 0 {
		t.Errorf("second rollbackPending = %+v, %v", res, err)
	}
	if rec, _ := readRecord(filepath.Join(r.dir, FaultRecord)); len(rec.Points) != 0 {
		t.Errorf("the killed run's record still lists %v", rec.Points)
	}
}

func TestSampler(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 2, 3:
			http.Error(w, "down", http.StatusServiceUnavailable)
		default:
			w.Write([]byte(`{"breakers":{"db":{"state":"open"}}}`))
		}
	}))
	defer srv.Close()
	type rec struct {
		doc map[string]any
		err error
	}
	got := make(chan rec, 10)
	s := &sampler{url: srv.URL, client: srv.Client(), record: func(_ time.Time, doc map[string]any, err error) { got <- rec{doc, err} }}
	tick := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.run(ctx, tick); close(done) }()
	for range 3 {
		tick <- time.Now()
	}
	cancel()
	<-done
	close(got)
	var recs []rec
	for r := range got {
		recs = append(recs, r)
	}
	// Samples 1 and 4 are good; 2 and 3 fail, recorded once.
	if len(recs) != 2 || recs[0].err != nil || recs[1].err == nil {
		t.Fatalf("records %+v", recs)
	}
	if breakerStates(s.latest()) != "breaker db=open" {
		t.Errorf("latest %v", s.latest())
	}
}

func TestClientSpeaksHTTP2WhenAsked(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Proto", r.Proto)
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	defer srv.Close()
	on, off := true, false
	for _, tt := range []struct {
		http2 *bool
		want  string
	}{{&on, "HTTP/2.0"}, {&off, "HTTP/1.1"}, {nil, "HTTP/1.1"}} {
		c, _ := newClient(nil, plan.Load{Timeout: plan.Duration(time.Second), MaxWorkers: 2, HTTP2: tt.http2}, nil, nil)
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Proto"); got != tt.want {
			t.Errorf("http2 %v: server saw %s, want %s", tt.http2, got, tt.want)
		}
		c.CloseIdleConnections()
	}
}

func TestLoadGoesToLoopbackOnly(t *testing.T) {
	// The load's client refuses a URL naming another address.
	c, _ := newClient(nil, plan.Load{Timeout: plan.Duration(time.Second)}, nil, nil)
	_, err := c.Get("http://192.0.2.1:9/")
	if err == nil || !strings.Contains(err.Error(), errNotLoopback.Error()) {
		t.Errorf("dial to 192.0.2.1: %v", err)
	}
}

func TestStopEscalates(t *testing.T) {
	dir := t.TempDir()
	start := func(script string) *process {
		p, err := startProcess([]string{"/bin/sh", "-c", script}, nil, "", filepath.Join(dir, "out"), filepath.Join(dir, "err"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.waitLine(context.Background(), "ready", 5*time.Second); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if killed := start("echo ready; exec sleep 30").stop(5 * time.Second); killed {
		t.Error("a process that honours SIGTERM was killed")
	}
	p := start(`trap "" TERM; echo ready; while :; do sleep 0.05; done`)
	if killed := p.stop(200 * time.Millisecond); !killed || !p.exited() {
		t.Errorf("a process that ignores SIGTERM: killed %v exited %v", killed, p.exited())
	}
}

func TestFreePortIsFree(t *testing.T) {
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		t.Fatalf("port %d not free: %v", p, err)
	}
	l.Close()
}

func TestPlannedHits(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    vegeta.Pacer
		d    time.Duration
		want uint64
	}{
		{"constant 200/s for 4s", vegeta.Rate{Freq: 200, Per: time.Second}, 4 * time.Second, 800},
		{"constant 12/100ms for 1s", vegeta.Rate{Freq: 12, Per: 100 * time.Millisecond}, time.Second, 120},
		{"linear 100/s rising 100/s² for 2s", vegeta.LinearPacer{StartAt: vegeta.Rate{Freq: 100, Per: time.Second}, Slope: 100}, 2 * time.Second, 400},
		{"steps 100/s for 1s then 300/s", StepPacer{Steps: []PacerStep{{PerSecond: 100, For: time.Second}, {PerSecond: 300, For: time.Second}}}, 2 * time.Second, 400},
	} {
		got := plannedHits(tt.p, tt.d)
		if got+1 < tt.want || got > tt.want+1 {
			t.Errorf("%s: planned %d, want %d±1", tt.name, got, tt.want)
		}
	}
}

func TestPacerForRatesBeyondANanosecond(t *testing.T) {
	rate := func(s string) plan.Rate { r, _ := plan.ParseRate(s); return r }
	// vegeta's constant pacer divides by its interval in whole
	// nanoseconds, zero above 10⁹/s: the runner must not hand it such a
	// rate.
	func() {
		defer func() { recover() }()
		vegeta.Rate{Freq: 2e9, Per: time.Second}.Pace(time.Millisecond, 5e6)
		t.Log("vegeta's constant pacer no longer divides by zero above 10⁹/s")
	}()
	for _, tt := range []struct {
		rate string
		d    time.Duration
		want uint64
	}{
		{"2000000000/s", time.Second, 2e9},
		{"1000000000/s", 2 * time.Second, 2e9},
		{"200/s", time.Second, 200},
	} {
		p := pacerFor(plan.Load{Rate: rate(tt.rate)}, tt.d)
		if wait, stop := p.Pace(tt.d/2, 0); wait > 0 || stop {
			t.Errorf("%s: far behind, pacer says wait %v stop %v", tt.rate, wait, stop)
		}
		if got := plannedHits(p, tt.d); got+1 < tt.want || got > tt.want+1 {
			t.Errorf("%s over %v: planned %d, want %d", tt.rate, tt.d, got, tt.want)
		}
	}
	if got := plannedHits(StepPacer{Steps: []PacerStep{{PerSecond: 1e18}}}, time.Hour); got != maxPlanned {
		t.Errorf("a plan beyond 2⁵³: %d", got)
	}
}

func TestDeliveryFindsWhereTheLoadFellBehind(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const d = 4 * time.Second
	p := vegeta.Rate{Freq: 100, Per: time.Second}
	for _, tt := range []struct {
		name string
		// send returns when the hit due at offset due was sent.
		send               func(due time.Duration) time.Duration
		at                 time.Duration
		planned, sent, lag uint64
	}{
		{"on time", func(due time.Duration) time.Duration { return due }, 0, 0, 0, 2},
		// Paused from 1.5s to 3s, then every late hit at once.
		{"paused, then a burst", func(due time.Duration) time.Duration {
			if due >= 1500*time.Millisecond && due < 3*time.Second {
				return 3 * time.Second
			}
			return due
		}, 3 * time.Second, 300, 150, 150},
		// Stopped at 2s for good.
		{"stopped", func(due time.Duration) time.Duration {
			if due >= 2*time.Second {
				return -1
			}
			return due
		}, d, 400, 200, 200},
	} {
		dl := newDelivery(start, d)
		for _, due := range simulate(p, d) {
			if at := tt.send(due); at >= 0 {
				dl.add(start.Add(at))
			}
		}
		at, planned, sent := dl.behind(p)
		lag := planned - min(sent, planned)
		if tt.lag <= 2 {
			if lag > tt.lag {
				t.Errorf("%s: lag %d at %v (planned %d, sent %d), want at most %d", tt.name, lag, at, planned, sent, tt.lag)
			}
			continue
		}
		if at < tt.at-10*time.Millisecond || at > tt.at || lag+2 < tt.lag || lag > tt.lag+2 || planned+2 < tt.planned || planned > tt.planned+2 {
			t.Errorf("%s: behind at %v by %d (planned %d, sent %d); want at %v by %d (planned %d, sent %d)", tt.name, at, lag, planned, sent, tt.at, tt.lag, tt.planned, tt.sent)
		}
	}
}

// A stall is measured against the plan by its moment: a second's pause
// two seconds in (half of what was due) weighs more than a pause of 1.5 s
// late in the phase (a fifth of what was due), though it left fewer
// requests behind.
func TestDeliveryMeasuresAStallByItsMoment(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const d = 10 * time.Second
	p := vegeta.Rate{Freq: 100, Per: time.Second}
	dl := newDelivery(start, d)
	for _, due := range simulate(p, d) {
		switch {
		case due >= time.Second && due < 2*time.Second:
			due = 2 * time.Second
		case due >= 6*time.Second && due < 7500*time.Millisecond:
			due = 7500 * time.Millisecond
		}
		dl.add(start.Add(due))
	}
	at, planned, sent := dl.behind(p)
	if at < 1990*time.Millisecond || at > 2*time.Second || planned < 199 || planned > 201 || sent > 101 {
		t.Errorf("behind at %v: sent %d of %d; want at 2s: 100 of 200", at, sent, planned)
	}
}
