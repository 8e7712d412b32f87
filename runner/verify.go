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

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// maxVerifications bounds the verification requests a run keeps to send
// after the last phase, so that a long run keeps its memory and its end
// bounded: the first ones are sent, and the rest are counted as not
// verified (unknown).
const maxVerifications = 10_000

// pendingVerify is one verification request, made when the request it
// verifies was recorded and sent after the read-back.
type pendingVerify struct {
	seq    uint64
	rule   *plan.Verify
	method string
	path   string
	header http.Header
	// err says why the request could not be made (a capture or an
	// answer value missing); it is recorded unsent, as unknown.
	err string
}

// noteChainStep keeps, until the recorder takes it, what a chain step's
// iteration captured, for a step a verify: rule may select.
func (r *run) noteChainStep(res *vegeta.Result, step plan.StepInfo, caps func() plan.Captures) {
	path := r.pathOf(strings.SplitN(res.URL, "#", 2)[0])
	for i := range r.sc.Verify {
		if r.sc.Verify[i].Selects(res.Method, path, step.Tags, step.Template, int(res.Code)) {
			r.stepCaps.Store(res, caps())
			return
		}
	}
}

// noteVerify makes the verification request of q when a verify: rule
// selects it, from what its chain iteration captured (or the setup) and
// what it was answered (res). The first rule that selects it makes it.
func (r *run) noteVerify(q *timeline.Request, res *vegeta.Result) {
	if len(r.sc.Verify) == 0 {
		return
	}
	caps := r.captures
	if c, ok := r.stepCaps.LoadAndDelete(res); ok {
		caps = c.(plan.Captures)
	}
	path := strings.TrimPrefix(q.Target, q.Method+" ")
	if i := strings.IndexByte(path, '#'); i >= 0 {
		path = path[:i]
	}
	for j := range r.sc.Verify {
		rule := &r.sc.Verify[j]
		if !rule.Selects(q.Method, path, q.Tags, q.Template, q.Status) {
			continue
		}
		if len(r.verifications) >= maxVerifications {
			r.verificationsDropped++
			return
		}
		method, p, hdr, err := rule.Render(caps, res.Headers, string(res.Body), nil)
		pv := pendingVerify{seq: q.Seq, rule: rule, method: method, path: p, header: hdr}
		if err != nil {
			pv.err = err.Error()
		}
		r.verifications = append(r.verifications, pv)
		return
	}
}

// Verification rounds, as the read-back's: every request is sent once,
// then those that got no answer or a transient one (408, 425, 429, 5xx)
// again after a backoff, round after round, while their rule's within
// lasts.
const verifyWorkers = 8

// verify sends the verification requests after the last phase and the
// read-back, with every fault off, and records each one's last answer on
// the timeline (timeline.Verify); VerifyDone marks that all were sent.
// The contracts judge them (violated_verifications).
func (r *run) verify(ctx context.Context) error {
	if len(r.sc.Verify) == 0 {
		return nil
	}
	jobs := r.verifications
	if r.verificationsDropped > 0 {
		fmt.Fprintf(r.opts.Log, "  verify: %d selected requests beyond the first %d are not verified\n", r.verificationsDropped, maxVerifications)
	}
	timeout := readBackTimeout
	if t := r.sc.Load.Timeout.D(); t > 0 && t < timeout {
		timeout = t
	}
	client := r.targetClient(timeout)
	defer client.CloseIdleConnections()

	begun := time.Now()
	results := make([]timeline.VerifyResult, len(jobs))
	pending := make([]int, 0, len(jobs))
	for i := range jobs {
		results[i] = timeline.VerifyResult{Request: jobs[i].seq, Rule: jobs[i].rule.Name, Target: jobs[i].method + " " + jobs[i].path,
			Expect: jobs[i].rule.ExpectText(), BodyContains: jobs[i].rule.BodyContains, Error: jobs[i].err}
		if jobs[i].err == "" {
			pending = append(pending, i)
		}
	}
	first := make([]time.Time, len(jobs))
	retryAfter := make([]time.Duration, len(jobs))
	wait := readBackFirstWait
	for attempt := 1; len(pending) > 0; attempt++ {
		next := make(chan int)
		var wg sync.WaitGroup
		for range min(verifyWorkers, len(pending)) {
			wg.Go(func() {
				for i := range next {
					if first[i].IsZero() {
						first[i] = time.Now()
					}
					retryAfter[i] = r.verifyAttempt(ctx, client, &jobs[i], &results[i])
					results[i].Attempts, results[i].Elapsed = attempt, time.Since(first[i])
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
			if retryable(results[i].Status) && retryAfter[i] > 0 {
				pause = max(pause, min(retryAfter[i], readBackMaxWait))
			}
		}
		again := pending[:0]
		for _, i := range pending {
			if retryable(results[i].Status) && !time.Now().Add(pause).After(begun.Add(jobs[i].rule.Deadline())) {
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
	unexpected := 0
	for i := range results {
		if !jobs[i].rule.Expected(results[i].Status) {
			unexpected++
		}
		r.event(timeline.Event{Kind: timeline.Verify, Message: results[i].Rule, Verified: &results[i]})
	}
	done := timeline.Event{Kind: timeline.VerifyDone, Message: fmt.Sprintf("%d verification requests", len(jobs))}
	if r.verificationsDropped > 0 {
		done.Data = map[string]any{timeline.NotVerified: r.verificationsDropped}
		done.Message += fmt.Sprintf(", %d requests not verified", r.verificationsDropped)
	}
	r.event(done)
	fmt.Fprintf(r.opts.Log, "  %-24s %6s  %5d requests  %5d not answered as expected\n", "verify", "", len(jobs), unexpected)
	return nil
}

// verifyAttempt sends one verification request and records its answer in
// res; it returns how long the service asked to wait before the next
// (Retry-After in seconds), if it did. The request goes to the target
// and nowhere else.
func (r *run) verifyAttempt(ctx context.Context, client *http.Client, pv *pendingVerify, res *timeline.VerifyResult) (retryAfter time.Duration) {
	res.Status, res.Error, res.Body, res.BodySize = 0, "", "", 0
	req, err := http.NewRequestWithContext(ctx, pv.method, r.tgt.baseURL+pv.path, nil)
	if err != nil {
		res.Error = err.Error()
		return 0
	}
	maps.Copy(req.Header, pv.header)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		res.Latency, res.Error = time.Since(start), err.Error()
		return 0
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
	return retryAfter
}
