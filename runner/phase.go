package runner

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/chaoskit/chaoskit/internal/reach"
	"github.com/chaoskit/chaoskit/internal/termline"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// progressEvery is how often the live progress line is redrawn.
const progressEvery = 250 * time.Millisecond

// phaseRun is the state of one running phase.
type phaseRun struct {
	r        *run
	p        *plan.Phase
	boundary time.Time
	stats    phaseStats
	// hits holds the last hit count read per failpoint, so each fault
	// window gets the hits made while it was on.
	hits   map[string]int64
	hitsOK bool
	hitsMu sync.Mutex
	// acks holds how long each fault switched on took to be acknowledged,
	// by the moment it was due; the lanes add to it at once.
	acks    []dueAck
	acksMu  sync.Mutex
	errOnce sync.Once
	err     error
	// delivery counts the requests by when they were sent.
	delivery *delivery
}

func (ph *phaseRun) fail(err error) {
	ph.errOnce.Do(func() { ph.err = err })
}

// runPhase drives one phase: its faults due at the start are switched on
// before the first request; the others at their offsets while the load
// runs; whatever is still on is switched off when the phase's load ends.
func (r *run) runPhase(ctx context.Context, p *plan.Phase) error {
	load := p.Effective
	gen, err := plan.NewGenerator(load, &r.reqSeq)
	if err != nil {
		return err
	}
	gen.SetCaptures(r.captures)
	client, closeClient := newClient(ctx, load, r.sc.Reach, r.tls.config)
	defer closeClient()
	reqs := &shardRequests{gen: gen, shard: r.opts.Shard}
	targeter := func(t *vegeta.Target) error {
		q := reqs.next()
		h := make(http.Header, len(q.Headers))
		for k, v := range q.Headers {
			h.Set(k, v)
		}
		*t = vegeta.Target{Method: q.Method, URL: withTemplate(r.tgt.baseURL+q.Path, q), Header: h, Body: q.Body}
		return nil
	}

	ph := &phaseRun{r: r, p: p}
	if p.HasPointFaults() {
		ph.readHits(nil)
	}
	steps := schedule(p)
	if err := r.faults.expect(p.Faults); err != nil {
		return err
	}
	r.phase.Store(p.Name)
	ph.boundary = time.Now()
	r.event(timeline.Event{Time: ph.boundary, Kind: timeline.PhaseStart, Phase: p.Name, Planned: p.Duration.D(),
		Data: map[string]any{"load": describeLoad(load)}})
	for len(steps) > 0 && steps[0].at == 0 {
		if err := ph.apply(ctx, steps[0]); err != nil {
			return err
		}
		steps = steps[1:]
	}

	pacer := r.opts.Shard.pacer(pacerFor(load, p.Duration.D()), p.Duration.D())
	if r.opts.FaultsOnly {
		pacer = idlePacer{}
	}
	ph.delivery = newDelivery(time.Now(), p.Duration.D())
	var results <-chan *vegeta.Result
	var atk interface{ Stop() }
	var chains *chainAttack
	switch {
	case r.opts.FaultsOnly:
		results, atk = idle(ctx, p.Duration.D()), stopNothing{}
	case load.HasGRPC():
		if r.grpc == nil {
			return errNoGRPC
		}
		ga := newGRPCAttack(r.grpc, reqs.next, load)
		results, atk = ga.Attack(ctx, pacer, p.Duration.D()), ga
	case load.HasChains():
		chains = newChainAttack(client, r.tgt.baseURL, r.sc.Name, reqs.nextIteration, load, ph.delivery.add)
		if len(r.sc.Verify) > 0 {
			chains.noted = r.noteChainStep
		}
		results, atk = chains.Attack(ctx, pacer, p.Duration.D()), chains
	default:
		va := vegeta.NewAttacker(vegeta.Client(client), vegeta.Workers(uint64(load.Workers)),
			vegeta.MaxWorkers(uint64(load.MaxWorkers)), vegeta.MaxBody(4<<20), vegeta.Redirects(vegeta.NoFollow))
		results, atk = va.Attack(targeter, pacer, p.Duration.D(), r.sc.Name), vegetaStop{va}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, lane := range lanes(steps) {
		wg.Add(1)
		go func() { // faults due later in the phase, each lane on its own
			defer wg.Done()
			for _, st := range lane {
				t := time.NewTimer(time.Until(ph.boundary.Add(st.at)))
				select {
				case <-done:
					t.Stop()
					return
				case <-t.C:
				}
				if err := ph.apply(ctx, st); err != nil {
					ph.fail(err)
					atk.Stop()
					return
				}
			}
		}()
	}
	if r.tgtProc != nil {
		wg.Add(1)
		go func() { // a crash is noticed at once; a planned kill is not one
			defer wg.Done()
			if err := watchExit(r.tgtProc, done); err != nil {
				r.noteExit()
				if !r.sc.Target.AllowExit {
					ph.fail(infra("the target exited during phase "+p.Name+" ("+err.Error()+")",
						"see target.stderr in the run directory; if the scenario expects the service to die, set target.allow_exit: true", nil))
					atk.Stop()
				}
			}
		}()
	}
	for _, d := range r.deps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := watchExit(d.managed, done); err != nil {
				p, _, _ := d.managed.current()
				ph.fail(infra(fmt.Sprintf("dependency %s exited during phase %s (%s); its last output: %s", d.name, ph.p.Name, p.endedWith(), lastLinesOf(p.output.String(), 5)),
					"see deps/"+d.name+".stderr in the run directory; to take it away on purpose, use a process fault", nil))
				atk.Stop()
			}
		}()
	}
	if r.opts.Live {
		// The planned time of the phases before this one, for the overall
		// progress.
		var before time.Duration
		for i := range r.sc.Phases {
			if &r.sc.Phases[i] == p {
				break
			}
			before += r.sc.Phases[i].Duration.D()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(progressEvery)
			defer tick.Stop()
			for {
				select {
				case <-done:
					fmt.Fprint(r.opts.Log, "\r\x1b[K")
					return
				case <-tick.C:
					elapsed := time.Since(ph.boundary)
					line := progressLine(p.Name, elapsed, p.Duration.D(), ph.stats.snapshot(), breakerStates(r.sampler.latest()))
					overall := ""
					if r.opts.Overall != nil {
						overall = r.opts.Overall(before + min(elapsed, p.Duration.D()))
					}
					fmt.Fprint(r.opts.Log, "\r\x1b[K"+termline.CutKeeping(line, overall, r.opts.LiveWidth))
				}
			}
		}()
	}
	stopOnCancel := context.AfterFunc(ctx, func() { atk.Stop() })
	// The loop only counts a result and hands it on: vegeta's workers wait
	// on this channel, so whatever the recording costs here would sit on
	// the request path and inflate the latencies the contracts judge.
	rec := r.startRecorder(p.Name, &ph.stats)
	for res := range results {
		if chains == nil { // a chain counts its iterations as they start
			ph.delivery.add(res.Timestamp)
		}
		rec.ch <- res
	}
	rec.stop()
	r.phaseBase += uint64(ph.stats.snapshot().n)
	stopOnCancel()
	close(done)
	wg.Wait()
	end := time.Now()
	// What the phase planned against what it sent, in total and at the
	// moment it was furthest behind: a load generator that fell behind (a
	// starved machine, too few workers, a paused process) did not run the
	// test the scenario describes, and contracts must be able to tell.
	if ctx.Err() != nil {
		r.summary.StoppedIn = p.Name
	}
	behindAt, plannedBy, sentBy := ph.delivery.behind(pacer)
	endData := map[string]any{
		timeline.PlannedRequests: plannedHits(pacer, p.Duration.D()), timeline.SentRequests: ph.stats.snapshot().n,
		timeline.MaxWorkers: load.MaxWorkers, timeline.BehindAt: int64(behindAt), timeline.PlannedBy: plannedBy, timeline.SentBy: sentBy}
	if chains != nil {
		chains.phaseEnd(r, p.Name, end, endData)
	}
	r.event(timeline.Event{Time: end, Kind: timeline.PhaseEnd, Phase: p.Name, Data: endData})

	// Whatever this phase switched on and is still on goes off now.
	var still []plan.Fault
	on := map[string]bool{}
	for _, path := range r.faults.stillOn() {
		on[path] = true
	}
	for _, f := range p.Faults {
		if on[f.Path] {
			still = append(still, f)
			delete(on, f.Path)
		}
	}
	var offErr error
	if len(still) > 0 {
		var alive []plan.Fault
		for _, f := range still {
			if f.Source().Marker && r.tgtProc != nil && r.tgtProc.down() {
				// The failpoint died with the service.
				r.faults.forget(f.Path)
				r.event(timeline.Event{Kind: timeline.FaultOff, Phase: p.Name, Point: f.Path, Message: "the target exited"})
				continue
			}
			alive = append(alive, f)
		}
		if len(alive) > 0 {
			why := ""
			if ctx.Err() != nil {
				why = rolledBack // the run was stopped in this phase
			}
			offErr = r.faults.disable(p.Name, end, paths(alive), why)
			ph.readHits(alive)
		}
	}
	if offErr == nil {
		r.faults.phaseOver()
	}
	st := ph.stats.snapshot()
	r.summary.addPhase(p, load, ph.boundary, end, st)
	for _, row := range termline.Wrap(phaseLine(p, describeLoad(load), end.Sub(ph.boundary), st, ph.ackNotes()), r.opts.Width, "      ") {
		fmt.Fprintln(r.opts.Log, row)
	}
	if chains != nil {
		f := chains.figures()
		r.summary.Phases[len(r.summary.Phases)-1].Chains = f
		fmt.Fprintf(r.opts.Log, "      chains: %d iterations started, %d cut by the phase's end, %d stopped\n", f.Iterations, f.Cut, f.Stopped)
		for _, stop := range f.Stops {
			fmt.Fprintln(r.opts.Log, "      "+stop)
		}
	}
	if ph.err != nil {
		return ph.err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if offErr != nil {
		return offErr
	}
	if r.tgtProc != nil && !r.sc.Target.AllowExit {
		if proc, planned, _ := r.tgtProc.current(); proc.exited() && !planned {
			return infra("the target exited during phase "+p.Name+" ("+proc.exitDescription()+")", "see target.stderr in the run directory", nil)
		}
	}
	return nil
}

// stopNothing stops an idle phase, which sends nothing.
type stopNothing struct{}

func (stopNothing) Stop() {}

// vegetaStop stops a vegeta attack.
type vegetaStop struct{ a *vegeta.Attacker }

func (v vegetaStop) Stop() { v.a.Stop() }

// watchExit waits until m's process exits on its own, returning how, or
// done closes (nil). A process chaoskit kills on purpose is waited for
// again once it is started anew.
func watchExit(m *managed, done <-chan struct{}) error {
	for {
		p, planned, swapped := m.current()
		if again, err := watchOnce(m, p, planned, swapped, done); !again {
			return err
		}
	}
}

// watchOnce waits on one look at m (p, planned, swapped, as m.current
// gave them) and says how it ended: an exit of p's own, or nothing, or
// again when m changed and must be looked at anew.
func watchOnce(m *managed, p *process, planned bool, swapped <-chan struct{}, done <-chan struct{}) (again bool, err error) {
	if planned {
		select {
		case <-done:
			return false, nil
		case <-swapped:
			return true, nil
		}
	}
	select {
	case <-done:
		return false, nil
	case <-swapped:
		return true, nil
	case <-p.done:
		// Both may be ready at once: the exit counts only if it was not
		// planned meanwhile and the process is still the current one.
		if cur, planned, _ := m.current(); cur != p || planned {
			return true, nil
		}
		return false, errors.New(p.exitDescription())
	}
}

// apply carries out one step of the phase's fault schedule.
func (ph *phaseRun) apply(ctx context.Context, st step) error {
	planned := ph.boundary.Add(st.at)
	r := ph.r
	if st.on {
		ack, err := r.faults.enable(ph.p.Name, planned, st.faults)
		if err != nil {
			return err
		}
		ph.acksMu.Lock()
		ph.acks = append(ph.acks, dueAck{st.at, ack})
		ph.acksMu.Unlock()
		return nil
	}
	err := r.faults.disable(ph.p.Name, planned, paths(st.faults), "")
	ph.readHits(st.faults)
	return err
}

// dueAck is how long a fault due at an offset into its phase took to be
// acknowledged.
type dueAck struct{ at, ack time.Duration }

// ackNotes are the phase's acknowledgement times as its line shows them,
// in the order the faults were due.
func (ph *phaseRun) ackNotes() []string {
	ph.acksMu.Lock()
	defer ph.acksMu.Unlock()
	sorted := slices.Clone(ph.acks)
	slices.SortStableFunc(sorted, func(a, b dueAck) int { return cmp.Compare(a.at, b.at) })
	out := make([]string, len(sorted))
	for i, a := range sorted {
		out[i] = fmt.Sprintf("on +%v", a.ack.Round(10*time.Microsecond))
	}
	return out
}

// readHits reads the target's hit counts and, for each fault given, records
// the hits made since the last reading as a FaultHits event.
func (ph *phaseRun) readHits(faults []plan.Fault) {
	r := ph.r
	ph.hitsMu.Lock()
	defer ph.hitsMu.Unlock()
	hctx, cancel := context.WithTimeout(r.controlCtx(), 2*time.Second)
	defer cancel()
	rep, ok, err := r.tgt.hits(hctx)
	if !ok || err != nil {
		return
	}
	if ph.hits == nil {
		ph.hits = rep.Hits
		ph.hitsOK = true
		return
	}
	for _, f := range faults {
		if !f.Source().Marker {
			continue // a proxy or a process has no marker to count
		}
		h := rep.Hits[f.Path] - ph.hits[f.Path]
		ph.hits[f.Path] = rep.Hits[f.Path]
		r.event(timeline.Event{Kind: timeline.FaultHits, Phase: ph.p.Name, Point: f.Path, Hits: &h})
	}
}

func paths(fs []plan.Fault) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Path
	}
	return out
}

// phaseLine is the one line a phase leaves in the log.
func phaseLine(p *plan.Phase, load string, took time.Duration, st statsSnapshot, acks []string) string {
	rate := 0.0
	if took > 0 {
		rate = float64(st.n) / took.Seconds()
	}
	line := fmt.Sprintf("  %-20s %6v %6d requests %6.0f req/s (%s)", p.Name, took.Round(10*time.Millisecond), st.n, rate, load)
	if sh := st.shares(); sh != "" {
		line += "  " + sh
	}
	if o := (timeline.Phase{Planned: p.Duration.D(), End: time.Time{}.Add(took)}).Overrun(); o > 0 {
		line += fmt.Sprintf("  overran: planned %v, %v over", p.Duration.D(), o.Round(10*time.Millisecond))
	}
	if len(p.Faults) > 0 {
		var s []string
		for _, f := range p.Faults {
			s = append(s, f.Source().Label(f.Spec()))
		}
		line += "  faults: " + strings.Join(s, ", ")
		if len(acks) > 0 {
			line += " (" + strings.Join(acks, ", ") + ")"
		}
	}
	return line
}

// templateMark starts the fragment of a request's target URL in which
// the request carries what its template gave it besides method and path:
// its tags and the template's name. A fragment is never sent, yet vegeta hands the URL back in the
// request's result whatever became of it, so a request that got no
// response (a timeout, a refused connection, a reset) keeps its tags as
// one that got an answer does, and every window that selects them counts
// it.
const templateMark = "#chaoskit-template?"

// withTemplate returns u with q's tags and template name in its fragment.
func withTemplate(u string, q plan.Request) string {
	if len(q.Tags) == 0 && q.Template == "" {
		return u
	}
	v := url.Values{}
	if len(q.Tags) > 0 {
		v.Set("tags", strings.Join(q.Tags, ","))
	}
	if q.Template != "" {
		v.Set("template", q.Template)
	}
	return u + templateMark + v.Encode()
}

// fromTemplate takes the fragment withTemplate added out of res's URL and
// error, and returns the tags and template name it held.
func fromTemplate(res *vegeta.Result) (tags []string, template string) {
	i := strings.LastIndex(res.URL, templateMark)
	if i < 0 {
		return nil, ""
	}
	frag := res.URL[i:]
	res.URL = res.URL[:i]
	if res.Error != "" {
		res.Error = strings.ReplaceAll(res.Error, frag, "")
	}
	v, err := url.ParseQuery(frag[len(templateMark):])
	if err != nil {
		return nil, ""
	}
	if t := v.Get("tags"); t != "" {
		tags = strings.Split(t, ",")
	}
	return tags, v.Get("template")
}

// alwaysKept says which response headers every timeline keeps: Retry-After,
// Content-Type and a gRPC call's Grpc-Status. Options.Headers adds the ones a scenario names.
func alwaysKept(name string) bool {
	return name == "Retry-After" || name == "Content-Type" || name == timeline.GRPCStatusHeader
}

// Bounds on the headers a request keeps, so that a service answering with
// thousands of headers cannot grow the record without limit.
const (
	maxKeptHeaders    = 32
	maxKeptHeaderSize = 1 << 10
)

// headerFilter returns the function that says which response headers the
// timeline keeps: those always kept and names, or every one when all is
// set (at most 32 per request, each cut at 1 KiB).
func headerFilter(names []string, all bool) func(string) bool {
	if all {
		return func(string) bool { return true }
	}
	named := map[string]bool{}
	for _, h := range names {
		named[http.CanonicalHeaderKey(h)] = true
	}
	return func(name string) bool { return alwaysKept(name) || named[name] }
}

// recordBuffer is how many results may wait for the recorder: at 10,000
// requests a second, more than a second's worth, so that a pause of the
// recorder (a block compressed, the disk slow) never blocks the workers.
const recordBuffer = 16 << 10

// recordYield is how many results the recorder records between two
// yields to the other goroutines.
const recordYield = 32

// flushEvery is how often the recorder writes out what it holds, so that
// a crash loses at most that much of the record.
const flushEvery = time.Second

// recorder records a phase's results off the request path, in its own
// goroutine: the results file, the timeline's request stream, the
// phase's counts.
type recorder struct {
	ch   chan *vegeta.Result
	done chan struct{}
}

func (r *run) startRecorder(phase string, stats *phaseStats) *recorder {
	rec := &recorder{ch: make(chan *vegeta.Result, recordBuffer), done: make(chan struct{})}
	go func() {
		defer close(rec.done)
		tick := time.NewTicker(flushEvery)
		defer tick.Stop()
		var q timeline.Request
		n := 0
		for {
			select {
			case res, ok := <-rec.ch:
				if !ok {
					r.flushRecord()
					return
				}
				stats.add(r.recordResult(phase, res, &q))
				// The recorder works through a backlog in bursts; between
				// results it lets the load generator's goroutines run, so
				// that a burst does not hold a core from them (Go's
				// scheduler would let it run for 10ms).
				if n++; n%recordYield == 0 {
					runtime.Gosched()
				}
			case <-tick.C:
				r.flushRecord()
			}
		}
	}()
	return rec
}

// stop waits until every result handed to the recorder is recorded and
// flushed.
func (rec *recorder) stop() {
	close(rec.ch)
	<-rec.done
}

// flushRecord writes out the results and the requests recorded so far.
func (r *run) flushRecord() {
	if err := r.resBuf.Flush(); err != nil {
		r.writeFailed(ResultsFile, err)
	}
	if r.rw != nil {
		if err := r.rw.Flush(); err != nil {
			r.writeFailed(timeline.RequestsFile, err)
		}
	}
}

// recordResult records one result on the timeline and in the results
// file, and returns its class. q is the recorder's scratch request,
// reused from one result to the next.
func (r *run) recordResult(phase string, res *vegeta.Result, q *timeline.Request) timeline.Class {
	tags, template := fromTemplate(res)
	// One numbering across the run's phases, in send order: vegeta numbers
	// each attack's hits from 0 as it sends them, and `vegeta plot` draws
	// one point per number, in the order of the numbers. A request's Seq on
	// the timeline is its number in results.bin plus one.
	res.Seq += r.phaseBase
	seq := res.Seq + 1
	// The results file is for vegeta's report and plot, which read
	// neither bodies nor headers: the timeline keeps those, once.
	body, hdr := res.Body, res.Headers
	res.Body, res.Headers = nil, nil
	if err := r.resEnc.Encode(res); err != nil {
		r.writeFailed(ResultsFile, err)
	}
	res.Body, res.Headers = body, hdr
	headers := q.Headers
	clear(headers)
	*q = timeline.Request{
		Seq: seq, Phase: phase, Time: res.Timestamp, Method: res.Method, URL: res.URL,
		Target: res.Method + " " + r.pathOf(res.URL), Status: int(res.Code),
		Latency: res.Latency, Error: res.Error, Tags: tags, Template: template,
	}
	for k, v := range res.Headers {
		if len(v) > 0 && len(headers) < maxKeptHeaders && r.keep(k) {
			if headers == nil {
				headers = map[string]string{}
			}
			headers[k] = truncateHeader(v[0])
		}
	}
	q.Headers = headers
	if r.rw != nil {
		if err := r.rw.Add(q, res.Body); err != nil {
			r.writeFailed(timeline.RequestsFile, err)
		}
	}
	var class timeline.Class
	if r.classify != nil {
		class = r.classify(q)
	}
	r.noteWrite(q)
	r.noteVerify(q, res)
	return class
}

// pathOf is the path of a request's URL: the URL without the target's
// base URL, or for a gRPC call without grpc://ADDRESS.
func (r *run) pathOf(u string) string {
	if r.grpc != nil && strings.HasPrefix(u, r.grpc.base) {
		return u[len(r.grpc.base):]
	}
	return strings.TrimPrefix(u, r.tgt.baseURL)
}

func truncateHeader(v string) string {
	if len(v) > maxKeptHeaderSize {
		return v[:maxKeptHeaderSize]
	}
	return v
}

// newClient returns the client of a phase's load: loopback and the hosts
// allow allows only, no redirects followed. When stop ends (nil: never), the requests still in
// flight are cut short: vegeta cannot cancel the requests it sent, and a
// stopping run must not wait for a service that hangs. done releases the
// client.
func newClient(stop context.Context, l plan.Load, allow *reach.Policy, tlsConfig *tls.Config) (client *http.Client, done func()) {
	dialer := &net.Dialer{Timeout: l.Timeout.D(), KeepAlive: 30 * time.Second}
	open := &openConns{open: map[*trackedConn]struct{}{}}
	tr := &http.Transport{
		DialContext:         open.dial(allow.Dial(dialer)),
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: max(l.MaxWorkers, l.Connections),
		MaxConnsPerHost:     l.Connections,
		IdleConnTimeout:     30 * time.Second,
	}
	var protos http.Protocols
	if l.HTTP2 != nil && *l.HTTP2 {
		protos.SetUnencryptedHTTP2(true)
		protos.SetHTTP2(true)
	} else {
		protos.SetHTTP1(true)
	}
	tr.Protocols = &protos
	client = &http.Client{
		Timeout:       l.Timeout.D(),
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	unhook := func() bool { return false }
	if stop != nil {
		unhook = context.AfterFunc(stop, open.closeAll)
	}
	return client, func() {
		unhook()
		client.CloseIdleConnections()
	}
}

// openConns tracks the connections of a load client, so that a stopping
// run cuts the requests in flight short by closing them: a cost per
// connection, not per request.
type openConns struct {
	mu     sync.Mutex
	open   map[*trackedConn]struct{}
	closed bool
}

var errStopped = errors.New("the run stopped")

func (o *openConns) dial(dial func(ctx context.Context, network, address string) (net.Conn, error)) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := dial(ctx, network, address)
		if err != nil {
			return nil, err
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.closed {
			c.Close()
			return nil, errStopped
		}
		tc := &trackedConn{Conn: c, open: o}
		o.open[tc] = struct{}{}
		return tc, nil
	}
}

// closeAll closes every connection, and those dialled from now on.
func (o *openConns) closeAll() {
	o.mu.Lock()
	o.closed = true
	conns := make([]*trackedConn, 0, len(o.open))
	for c := range o.open {
		conns = append(conns, c)
	}
	o.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// trackedConn leaves its openConns when closed.
type trackedConn struct {
	net.Conn
	open *openConns
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.open.mu.Lock()
		delete(c.open.open, c)
		c.open.mu.Unlock()
	})
	return c.Conn.Close()
}
