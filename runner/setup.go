package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/runner/depclients"
	"github.com/chaoskit/chaoskit/timeline"
)

// runSetup runs the scenario's setup steps from..to-1 in order, each
// recorded on the timeline with the time it took. The first that fails
// stops the run: an InfraError (exit 3) with what the step got.
func (r *run) runSetup(ctx context.Context, from, to int) error {
	if r.captures == nil {
		r.captures = plan.Captures{}
	}
	for i := from; i < to; i++ {
		s := &r.sc.Setup[i]
		start := time.Now()
		if err := r.runStep(ctx, timeline.Setup, i, s); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var ie *InfraError
			if errors.As(err, &ie) {
				return ie
			}
			return infra(fmt.Sprintf("%s: setup step %q failed: %v", s.Position, s.Name, err), "fix the step, or what it runs against", nil)
		}
		fmt.Fprintf(r.opts.Log, "  setup %-20s %v\n", s.Name, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// runTeardown runs every teardown step in order, each bounded by its own
// timeout and none cut short by the run's context: it runs when the run
// was interrupted too, and a second Ctrl-C (which exits at once) is the
// way to stop it. A step whose dependency or target never started, or
// that uses a capture the setup never made, is recorded as skipped. A
// step that fails does not stop the others: teardown is cleanup, and each
// step cleans what it can. The error names the first step that failed.
func (r *run) runTeardown(ctx context.Context) error {
	if len(r.sc.Teardown) == 0 {
		return nil
	}
	if r.captures == nil {
		r.captures = plan.Captures{}
	}
	ctx = context.WithoutCancel(ctx)
	var first error
	for i := range r.sc.Teardown {
		s := &r.sc.Teardown[i]
		if why := r.cannotRun(s); why != "" {
			r.event(timeline.Event{Kind: timeline.Teardown, Message: s.Name, Data: map[string]any{"kind": s.Kind(), "skipped": why}})
			fmt.Fprintf(r.opts.Log, "  teardown %-17s skipped: %s\n", s.Name, why)
			continue
		}
		start := time.Now()
		if err := r.runStep(ctx, timeline.Teardown, i, s); err != nil {
			fmt.Fprintf(r.opts.Log, "  teardown %-17s failed: %v\n", s.Name, err)
			if first == nil {
				var ie *InfraError
				if errors.As(err, &ie) {
					first = ie
				} else {
					first = infra(fmt.Sprintf("%s: teardown step %q failed: %v", s.Position, s.Name, err), "fix the step, or what it runs against", nil)
				}
			}
			continue
		}
		fmt.Fprintf(r.opts.Log, "  teardown %-17s %v\n", s.Name, time.Since(start).Round(time.Millisecond))
	}
	return first
}

// cannotRun says why a teardown step cannot run, or "": its dependency or
// the target never started, or a capture it uses was never made (the
// setup stopped before).
func (r *run) cannotRun(s *plan.SetupStep) string {
	switch s.Kind() {
	case plan.StepSQL, plan.StepRedis:
		name := s.Postgres + s.Redis
		if _, err := r.depByName(name); err != nil {
			return "dependency " + name + " never started"
		}
	case plan.StepHTTP:
		if !r.targetUp {
			return "the target never became ready"
		}
	}
	fields := append([]string{s.SQL, s.Body, s.HTTP}, s.Command...)
	fields = append(fields, s.Run...)
	for _, v := range s.Headers {
		fields = append(fields, v)
	}
	for _, v := range s.Env {
		fields = append(fields, v)
	}
	for _, sc := range s.Scripts {
		fields = append(fields, sc.Text)
	}
	for _, f := range fields {
		if f = r.captures.Fill(f); strings.Contains(f, "{capture.") {
			return "it uses a capture the setup never made: " + captureRef.FindString(f)
		}
	}
	return ""
}

// captureRef finds a {capture.NAME} left unfilled.
var captureRef = regexp.MustCompile(`\{capture\.[A-Za-z_][A-Za-z0-9_]*\}`)

// runStep runs step i of the setup or the teardown (kind says which) and
// takes its captures, and records it on the timeline with the time it
// took and, when it failed, why.
func (r *run) runStep(ctx context.Context, kind timeline.EventKind, i int, s *plan.SetupStep) error {
	sctx, cancel := context.WithTimeout(ctx, s.StepTimeout())
	start := time.Now()
	var (
		got map[string]string
		err error
	)
	lookup := func(kind, name string) (string, bool) { v, ok := got[kind+"."+name]; return v, ok }
	switch s.Kind() {
	case plan.StepSQL:
		got, err = r.setupSQL(sctx, s)
	case plan.StepRedis:
		got, err = r.setupRedis(sctx, s)
		lookup = func(kind, _ string) (string, bool) { v, ok := got[kind]; return v, ok }
	case plan.StepRun:
		got, err = r.setupRun(sctx, string(kind), i, s)
		lookup = func(kind, name string) (string, bool) {
			if kind == "regexp" {
				return plan.AnswerValue(kind, name, nil, got["stdout"])
			}
			v, ok := got[kind]
			return v, ok
		}
	default:
		var resp *setupResponse
		resp, err = r.setupHTTP(sctx, s)
		if resp != nil {
			lookup = resp.lookup
		}
	}
	timedOut := errors.Is(sctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()
	if err != nil && timedOut {
		err = fmt.Errorf("did not finish within %v: %v", s.StepTimeout(), err)
	}
	var captured []string
	if err == nil {
		names := make([]string, 0, len(s.Capture))
		for name := range s.Capture {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			v, cerr := plan.CaptureFrom(s.Capture[name], lookup)
			if cerr != nil {
				err = fmt.Errorf("capture %s: %v", name, cerr)
				break
			}
			r.captures[name] = v
			captured = append(captured, name)
		}
	}
	data := map[string]any{"kind": s.Kind(), "duration_ns": int64(time.Since(start))}
	if len(captured) > 0 {
		data["captured"] = captured
	}
	if err != nil {
		data["error"] = err.Error()
	}
	r.event(timeline.Event{Time: start, Kind: kind, Message: s.Name, Data: data})
	return err
}

// depByName is the started dependency called name.
func (r *run) depByName(name string) (*dependency, error) {
	for _, d := range r.deps {
		if d.name == name {
			return d, nil
		}
	}
	return nil, fmt.Errorf("dependency %s is not running", name)
}

// setupSQL runs a step's SQL against its Postgres dependency, each script
// in one simple-protocol exchange (several statements, as psql -f runs
// them), and returns the first row the last statement returned, by
// column as "row.COLUMN".
func (r *run) setupSQL(ctx context.Context, s *plan.SetupStep) (map[string]string, error) {
	d, err := r.depByName(s.Postgres)
	if err != nil {
		return nil, err
	}
	c, err := managedClients()
	if err != nil {
		return nil, err
	}
	dsn := "postgres://postgres:" + url.QueryEscape(d.password) + "@" + d.ownAddr() + "/postgres?sslmode=disable&connect_timeout=5"
	if err := c.PostgresPing(ctx, dsn); err != nil {
		return nil, fmt.Errorf("cannot connect to dependency %s: %v", s.Postgres, err)
	}
	row := map[string]string{}
	for _, sc := range s.Scripts {
		text := r.captures.Fill(sc.Text)
		results, err := c.PostgresExec(ctx, dsn, text)
		if err != nil {
			return nil, sqlError(sc, text, len(results), err)
		}
		for _, res := range results {
			if len(res.Rows) == 0 {
				continue
			}
			clear(row)
			if len(res.Rows[0]) > 0 && res.Rows[0][0] != nil {
				row[firstColumn] = string(res.Rows[0][0])
			}
			for i, name := range res.Columns {
				if i < len(res.Rows[0]) && res.Rows[0][i] != nil {
					row["row."+name] = string(res.Rows[0][i])
				}
			}
		}
	}
	return row, nil
}

// firstColumn is the key of the first column's value in what setupSQL
// returns, for probes; no capture can name it.
const firstColumn = "first"

// sqlError names where in its script the server says a statement
// failed: file:line:column of an SQL file, or the line and column of
// the statement written in the scenario.
// done is how many statements of the script completed before the one
// that failed.
func sqlError(sc plan.SQLScript, text string, done int, err error) error {
	var pe *depclients.SQLError
	if !errors.As(err, &pe) {
		return err
	}
	msg := pe.Severity + ": " + pe.Message
	if pe.Detail != "" {
		msg += " (" + pe.Detail + ")"
	}
	if pe.Hint != "" {
		msg += "; hint: " + pe.Hint
	}
	line, col := 0, 0
	if pe.Position > 0 {
		line, col = charPosition(text, int(pe.Position))
	} else if i := statementStart(text, done); i >= 0 {
		// An error found when the statement ran (a constraint, a missing
		// table) has no position: the statement's start is the place.
		line, col = charPosition(text, utf8.RuneCountInString(text[:i])+1)
	}
	switch {
	case line == 0 && sc.Inline:
		return errors.New(msg)
	case line == 0:
		return fmt.Errorf("%s: %s", sc.File, msg)
	case sc.Inline:
		return fmt.Errorf("%s (line %d, column %d of the sql)", msg, line, col)
	}
	return fmt.Errorf("%s:%d:%d: %s", sc.File, line, col, msg)
}

// statementStart returns the byte offset of the n-th statement (from 0)
// of an SQL script, past the blanks and comments before it, or -1. It
// knows enough SQL to find the semicolons that end statements: not those
// in quotes (”, "", $tag$ $tag$) or comments (--, /* */).
func statementStart(text string, n int) int {
	i, seen := 0, 0
	skipBlank := func() {
		for i < len(text) {
			switch {
			case text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r':
				i++
			case strings.HasPrefix(text[i:], "--"):
				if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
					i += j + 1
				} else {
					i = len(text)
				}
			case strings.HasPrefix(text[i:], "/*"):
				if j := strings.Index(text[i+2:], "*/"); j >= 0 {
					i += j + 4
				} else {
					i = len(text)
				}
			default:
				return
			}
		}
	}
	skipBlank()
	for i < len(text) {
		if seen == n {
			return i
		}
		switch c := text[i]; {
		case c == '\'' || c == '"':
			j := strings.IndexByte(text[i+1:], c)
			if j < 0 {
				return -1
			}
			i += j + 2
		case c == '$' && dollarTag.MatchString(text[i:]):
			tag := dollarTag.FindString(text[i:])
			j := strings.Index(text[i+len(tag):], tag)
			if j < 0 {
				return -1
			}
			i += len(tag) + j + len(tag)
		case strings.HasPrefix(text[i:], "--") || strings.HasPrefix(text[i:], "/*"):
			skipBlank()
		case c == ';':
			i++
			seen++
			skipBlank()
		default:
			i++
		}
	}
	return -1
}

// dollarTag matches the opening of a dollar-quoted string: $$ or $tag$.
var dollarTag = regexp.MustCompile(`^\$[A-Za-z_]?[A-Za-z0-9_]*\$`)

// charPosition turns a 1-based character offset into a 1-based line and
// column.
func charPosition(text string, pos int) (line, col int) {
	line, col = 1, 1
	n := 1
	for _, c := range text {
		if n == pos {
			return line, col
		}
		n++
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// setupRedis sends a step's command to its Redis dependency and returns
// the reply as "reply".
func (r *run) setupRedis(ctx context.Context, s *plan.SetupStep) (map[string]string, error) {
	d, err := r.depByName(s.Redis)
	if err != nil {
		return nil, err
	}
	c, err := managedClients()
	if err != nil {
		return nil, err
	}
	opts := depclients.Redis{Addr: d.ownAddr(), Dial: dialLoopback(&net.Dialer{Control: loopbackOnly})}
	if r.sc.RedisPassword(s.Redis) {
		opts.Password = d.password
	}
	args := make([]any, len(s.Command))
	for i, a := range s.Command {
		args[i] = r.captures.Fill(a)
	}
	v, err := c.RedisDo(ctx, opts, args)
	if err != nil {
		return nil, fmt.Errorf("redis %s: %v", strings.Join(s.Command, " "), err)
	}
	out := map[string]string{}
	if reply := redisText(v); reply != "" {
		out["reply"] = reply
	}
	return out, nil
}

// redisText writes a Redis reply as text: a string or number as it is,
// the first element of an array.
func redisText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case []any:
		if len(v) > 0 {
			return redisText(v[0])
		}
	}
	return ""
}

// setupResponse is what an HTTP setup step got.
type setupResponse struct {
	header http.Header
	body   string
}

func (s *setupResponse) lookup(kind, name string) (string, bool) {
	return plan.AnswerValue(kind, name, s.header, s.body)
}

// setupHTTP sends an HTTP step's request to the target.
func (r *run) setupHTTP(ctx context.Context, s *plan.SetupStep) (*setupResponse, error) {
	return r.httpStep(ctx, s, r.tgt.baseURL, r.targetClient(s.StepTimeout()))
}

// httpStep sends an HTTP step to base (a URL on loopback) with client.
func (r *run) httpStep(ctx context.Context, s *plan.SetupStep, base string, client *http.Client) (*setupResponse, error) {
	method, path := s.Request(r.captures)
	var body io.Reader
	if s.Body != "" {
		body = strings.NewReader(r.captures.Fill(s.Body))
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return nil, err
	}
	for k, v := range s.Headers {
		req.Header.Set(k, r.captures.Fill(v))
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v", method, path, err)
	}
	if !s.Succeeded(resp.StatusCode) {
		return nil, fmt.Errorf("%s %s answered %s: %s", method, path, resp.Status, shortBody(data))
	}
	return &setupResponse{header: resp.Header, body: string(data)}, nil
}

// shortBody is the start of a body, on one line, for an error.
func shortBody(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return "(no body)"
	}
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// managedClients returns the clients of the dependencies chaoskit starts
// itself, or an error naming the import that registers them.
func managedClients() (depclients.Clients, error) {
	if c := depclients.Get(); c != nil {
		return c, nil
	}
	return nil, infra("this program has no PostgreSQL or Redis client for the dependencies chaoskit starts",
		`import _ "`+depclients.Import+`" in it (chaoskit's CLI does)`, nil)
}

// StepsDir is the folder of the run directory that keeps the output of
// the setup and teardown steps that run a program: setup-N.stdout,
// setup-N.stderr, teardown-N.stdout and teardown-N.stderr.
const StepsDir = "steps"

// setupRun runs a step's program below a supervisor, as the target runs
// (see supervisorEnv): when the step's context ends (its timeout, the
// run stopping) the program and every process it started are killed, and
// a chaoskit killed with SIGKILL takes them with it. The program gets the
// dependencies' ports in {port:NAME} and their passwords in its
// environment as the target does. It returns what it printed on stdout
// (at most plan.MaxStepOutput bytes, trimmed) as "stdout".
func (r *run) setupRun(ctx context.Context, section string, i int, s *plan.SetupStep) (map[string]string, error) {
	argv := make([]string, len(s.Run))
	for j, a := range s.Run {
		argv[j] = plan.FillPorts(r.captures.Fill(a), r.ports)
	}
	argv0, err := resolveProgram(argv[0], s.Dir)
	if err != nil {
		return nil, err
	}
	argv[0] = argv0
	env := append(r.scratchEnv(), r.passwordEnv()...)
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+plan.FillPorts(r.captures.Fill(s.Env[k]), r.ports))
	}
	dir := filepath.Join(r.dir, StepsDir)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	// steps/ is removed with an earlier run's files; anything else there
	// now, a link above all, is not chaoskit's to write through.
	if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("will not write the step's output into %s: it is not a directory chaoskit made", dir)
	}
	out := filepath.Join(dir, fmt.Sprintf("%s-%d", section, i+1))
	p, err := startProcessWith(argv, env, s.Dir, out+".stdout", out+".stderr", startOptions{})
	if err != nil {
		return nil, err
	}
	if !p.subreaper {
		fmt.Fprintln(r.opts.Log, "  note: the kernel refused PR_SET_CHILD_SUBREAPER: processes a step's program starts that leave its process group may outlive it")
	}
	show := strings.Join(r.masked(s.Run), " ")
	select {
	case <-p.done:
	case <-ctx.Done():
		p.kill()
		return nil, fmt.Errorf("%s: killed with every process it started (%v); its output: %s", show, context.Cause(ctx), lastLinesOf(p.output.String(), 10))
	}
	if p.err != nil {
		return nil, fmt.Errorf("%s: %v; its output: %s", show, p.err, lastLinesOf(p.output.String(), 10))
	}
	f, err := os.Open(out + ".stdout")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, plan.MaxStepOutput))
	if err != nil {
		return nil, err
	}
	got := map[string]string{}
	if v := strings.TrimSpace(string(data)); v != "" {
		got["stdout"] = v
	}
	return got, nil
}
