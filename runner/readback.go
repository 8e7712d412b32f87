package runner

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// Read-backs run a few at a time, each bounded.
const (
	readBackWorkers = 8
	readBackTimeout = 5 * time.Second
)

// readBack reads back every write the target acknowledged, after the last
// phase with every fault off, and records each result on the timeline
// (Jepsen's "no acknowledged write lost", in its simplest form). The
// contracts judge the results; this only records them. ReadBackDone marks
// that every acknowledged write was read.
func (r *run) readBack(ctx context.Context) error {
	if len(r.sc.Writes) == 0 {
		return nil
	}
	type job struct {
		write *timeline.Request
		rule  *plan.Write
	}
	jobs := make([]job, len(r.writes))
	for i := range r.writes {
		jobs[i] = job{&r.writes[i].req, r.writes[i].rule}
	}
	if r.writesDropped > 0 {
		fmt.Fprintf(r.opts.Log, "  read-back: %d acknowledged writes beyond the first %d are not read back\n", r.writesDropped, maxReadBacks)
	}
	timeout := readBackTimeout
	if t := r.sc.Load.Timeout.D(); t > 0 && t < timeout {
		timeout = t
	}
	client := r.targetClient(timeout)
	defer client.CloseIdleConnections()

	// The phases have just ended: each rule's read_within counts from here.
	begun := time.Now()
	results := make([]timeline.ReadBackResult, len(jobs))
	// Rounds: every write is read once, then those that got no answer or
	// a transient one are read again after a backoff, round after round,
	// while their rule's read_within lasts. Rounds spend the time on the
	// writes that need it, however many there are.
	pending := make([]int, len(jobs))
	for i := range pending {
		pending[i] = i
	}
	first := make([]time.Time, len(jobs))
	retryAfter := make([]time.Duration, len(jobs))
	wait := readBackFirstWait
	for attempt := 1; len(pending) > 0; attempt++ {
		next := make(chan int)
		var wg sync.WaitGroup
		for range min(readBackWorkers, len(pending)) {
			wg.Go(func() {
				for i := range next {
					if first[i].IsZero() {
						first[i] = time.Now()
					}
					res, sent, after := readAttempt(ctx, client, r.tgt.baseURL, jobs[i].write, jobs[i].rule, r.captures)
					if sent {
						res.Attempts, res.Elapsed = attempt, time.Since(first[i])
					}
					results[i], retryAfter[i] = res, after
				}
			})
		}
	feed:
		for _, i := range pending {
			select {
			case next <- i:
			case <-ctx.Done():
				break feed
			}
		}
		close(next)
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return err
		}
		pause := wait/2 + rand.N(wait/2+1)
		for _, i := range pending {
			if results[i].Attempts > 0 && retryable(results[i].Status) && retryAfter[i] > 0 {
				pause = max(pause, min(retryAfter[i], readBackMaxWait))
			}
		}
		again := pending[:0]
		for _, i := range pending {
			if results[i].Attempts > 0 && retryable(results[i].Status) && !time.Now().Add(pause).After(begun.Add(jobs[i].rule.Within())) {
				again = append(again, i)
			}
		}
		pending = again
		if len(pending) == 0 {
			break
		}
		if err := sleepCtx(ctx, pause); err != nil {
			return err
		}
		wait = min(2*wait, readBackMaxWait)
	}
	missing := 0
	for i := range results {
		if results[i].Status/100 != 2 {
			missing++
		}
		r.event(timeline.Event{Kind: timeline.ReadBack, Read: &results[i]})
	}
	done := timeline.Event{Kind: timeline.ReadBackDone, Message: fmt.Sprintf("%d acknowledged writes read back", len(jobs))}
	if r.writesDropped > 0 {
		done.Data = map[string]any{timeline.NotReadBack: r.writesDropped}
		done.Message += fmt.Sprintf(", %d not", r.writesDropped)
	}
	r.event(done)
	fmt.Fprintf(r.opts.Log, "  %-24s %6s  %5d writes    %5d not read back as 2xx\n", "read-back", "", len(jobs), missing)
	return nil
}

// Read-back retries: a read that gets no answer or a transient one (408,
// 425, 429, 5xx) is tried again after a backoff that starts at
// readBackFirstWait and doubles up to readBackMaxWait (with jitter, or the
// service's Retry-After), until the write's read_within after the last
// phase has passed. What it last got is recorded; the judge calls a write
// whose read never got a decisive answer unknown, not lost.
const (
	readBackFirstWait = 50 * time.Millisecond
	readBackMaxWait   = time.Second
)

// retryable reports whether a read-back's answer may change on its own: no
// answer, a timeout, a refusal for load, a server error.
func retryable(status int) bool {
	switch {
	case status == 0, status == http.StatusRequestTimeout, status == http.StatusTooEarly, status == http.StatusTooManyRequests:
		return true
	}
	return status/100 == 5
}

// readAttempt makes one read of write w, says whether it sent one (a
// read that cannot be made is not), and how long the service asked to
// wait before the next (Retry-After in seconds), if it did.
func readAttempt(ctx context.Context, client *http.Client, baseURL string, w *timeline.Request, rule *plan.Write, caps plan.Captures) (res timeline.ReadBackResult, sent bool, retryAfter time.Duration) {
	res = timeline.ReadBackResult{Write: w.Seq, Compare: rule.Compare, Missing: rule.MissingStatuses()}
	method, path, err := rule.ReadTargetWith(w.Headers, w.Body, caps)
	res.Target = method + " " + path
	if err != nil {
		res.Error = err.Error()
		return res, false, 0
	}
	url := path
	if !strings.Contains(path, "://") {
		url = baseURL + path
	} else if res.Target = method + " " + strings.TrimPrefix(path, baseURL); !strings.HasPrefix(path, baseURL+"/") {
		// A read-back goes to the target and nowhere else.
		res.Error = fmt.Sprintf("read-back URL %s is not on the target %s", path, baseURL)
		return res, false, 0
	}
	hdr, err := rule.ReadHeaderValuesWith(w.Headers, w.Body, nil, caps)
	if err != nil {
		res.Error = err.Error()
		return res, false, 0
	}
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		res.Error = err.Error()
		return res, false, 0
	}
	maps.Copy(req.Header, hdr)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		res.Latency, res.Error = time.Since(start), err.Error()
		return res, true, 0
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	res.Latency, res.Status, res.BodySize = time.Since(start), resp.StatusCode, len(body)
	if err != nil {
		res.Error = err.Error()
	}
	if len(body) <= timeline.MaxBody {
		res.Body = string(body)
	}
	if s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && s > 0 {
		retryAfter = time.Duration(s) * time.Second
	}
	return res, true, retryAfter
}

// maxReadBacks bounds the acknowledged writes a run keeps to read back, so
// that a long run of writes keeps its memory bounded: the first ones are
// read back, and the log says how many were not.
const maxReadBacks = 100_000

// ackedWrite is an acknowledged write kept for the read-back.
type ackedWrite struct {
	req  timeline.Request
	rule *plan.Write
}

// noteWrite keeps q for the read-back when the scenario declares it an
// acknowledged write. q is the recorder's scratch request: what is kept
// is copied.
func (r *run) noteWrite(q *timeline.Request) {
	if len(r.sc.Writes) == 0 {
		return
	}
	path := strings.TrimPrefix(q.Target, q.Method+" ")
	for j := range r.sc.Writes {
		if !r.sc.Writes[j].Acknowledged(q.Method, path, q.Tags, q.Template, q.Status) {
			continue
		}
		if len(r.writes) >= maxReadBacks {
			r.writesDropped++
			return
		}
		w := *q
		w.Headers = maps.Clone(q.Headers)
		r.writes = append(r.writes, ackedWrite{w, &r.sc.Writes[j]})
		return
	}
}
