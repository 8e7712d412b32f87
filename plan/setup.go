package plan

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/internal/suggest"
)

// SetupStep is one step of a scenario's setup, run in order before the
// first phase, or of its teardown, run in order after the last: SQL
// against a Postgres dependency chaoskit manages, a command against a
// Redis dependency, an HTTP request to the target, or a program chaoskit
// runs (Run). The setup steps up to the first HTTP step run once the
// dependencies are ready and before the target starts (a schema, seed
// rows, cache keys the service reads when it starts); the rest run once
// the target is ready. A setup step that fails stops the run (exit 3)
// with its output.
//
// The teardown steps run after the work of the last phase that needs the
// service (the final probes, the write read-back, the PromQL queries) and
// before the target and the dependencies are stopped, and also when the
// run stops early (Ctrl-C, a failed phase or setup step): a step whose
// dependency or target never started, or that uses a capture the setup
// never made, is skipped then. A teardown step that fails makes the run's
// exit 3 with its output (unless the run failed already) and the steps
// after it still run: teardown is cleanup, and each step cleans what it
// can.
//
// A step may capture values from what it got (Capture), for the steps
// after it, the load's requests and the write read-back to use as
// {capture.NAME}: a token created in the database, an id a login
// returned. The teardown steps use what the setup steps captured.
type SetupStep struct {
	// Name names the step on the timeline and in errors; default "setup
	// N".
	Name string `yaml:"name"`
	// Postgres names a dependency with postgres: {}; SQL or SQLFile runs
	// against its database as the user postgres.
	Postgres string `yaml:"postgres"`
	// SQL is one or more statements separated by ';'. SQLFile is a file
	// of them, or a directory whose *.sql files run in name order (a
	// folder of migrations), relative to the scenario file.
	SQL     string `yaml:"sql"`
	SQLFile string `yaml:"sql_file"`
	// Redis names a dependency that is a Redis server (on its
	// {port:NAME}, with {password:NAME} when its command gives one);
	// Command is the command sent, such as [SET, greeting, hello].
	Redis   string   `yaml:"redis"`
	Command []string `yaml:"command"`
	// HTTP is a request to the target: a method and a path, such as
	// "POST /api/tokens"; Headers and Body go with it. Status lists the
	// statuses that count as success; default 2xx.
	HTTP    string            `yaml:"http"`
	Headers map[string]string `yaml:"headers"`
	Body    string            `yaml:"body"`
	Status  []Status          `yaml:"status"`
	// Run is a program and its arguments, run without a shell: a name is
	// looked up in PATH, a path with a slash is relative to the scenario's
	// directory, which is also the directory it runs in. Env is added to
	// chaoskit's environment for it. It runs below chaoskit's supervisor
	// as a target does: when the step's timeout passes or the run is
	// killed, its whole process tree is killed. An exit status other than
	// 0 fails the step; its output is kept in the run directory (steps/)
	// and the end of it is shown.
	Run []string          `yaml:"run"`
	Env map[string]string `yaml:"env"`
	// Capture maps a name to what it takes from the step's result:
	// {json.PATH}, {header.NAME} or {regexp.PATTERN} (what the pattern's
	// group matched in the body) of an HTTP answer, {row.COLUMN} of the
	// first row an SQL step's last statement returned, {reply} of a Redis
	// command, {stdout} of a program (what it printed, trimmed of the
	// blanks around it; at most MaxStepOutput bytes are read) or
	// {regexp.PATTERN} of what it printed. A value that is not there
	// fails the step.
	Capture map[string]string `yaml:"capture"`
	// Timeout bounds the step; default 30s.
	Timeout Duration `yaml:"timeout"`

	// Dir is the directory a Run step runs in and resolves ./paths from:
	// the scenario's, filled in by validation.
	Dir string `yaml:"-"`

	// Scripts are the SQL texts the step runs, in order, filled in by
	// validation: SQL, or each file SQLFile names.
	Scripts []SQLScript `yaml:"-"`
	// Position is where the step is written.
	Position contract.Position `yaml:"-"`
}

// SQLScript is SQL text and where it comes from, so that an error the
// server reports at a character of it can be given as file:line:column.
type SQLScript struct {
	// File is the SQL file, or the scenario file for SQL written in it
	// (Inline), whose sql field is at Line and Column.
	File   string
	Text   string
	Inline bool
	Line   int
	Column int
}

// DefaultSetupTimeout bounds a setup step that gives no timeout.
const DefaultSetupTimeout = 30 * time.Second

// MaxSQLFile bounds an SQL file a setup step reads, and the files of a
// directory of them together.
const MaxSQLFile = 16 << 20

// MaxStepOutput bounds what a Run step's {stdout} capture reads of its
// output.
const MaxStepOutput = 1 << 20

// Kinds of setup steps.
const (
	StepSQL   = "sql"
	StepRedis = "redis"
	StepHTTP  = "http"
	StepRun   = "run"
)

// Kind is the step's kind: StepSQL, StepRedis, StepRun or StepHTTP.
func (s *SetupStep) Kind() string {
	switch {
	case s.Postgres != "":
		return StepSQL
	case s.Redis != "":
		return StepRedis
	case s.Run != nil:
		return StepRun
	}
	return StepHTTP
}

// StepTimeout is how long the step may take.
func (s *SetupStep) StepTimeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout.D()
	}
	return DefaultSetupTimeout
}

// Succeeded reports whether an HTTP step's answer is a success.
func (s *SetupStep) Succeeded(status int) bool {
	if len(s.Status) == 0 {
		return status/100 == 2
	}
	for _, r := range statusRanges(s.Status) {
		if r.Has(status) {
			return true
		}
	}
	return false
}

// Request returns an HTTP step's method and path with its captures
// filled.
func (s *SetupStep) Request(caps Captures) (method, path string) {
	method, path, _ = strings.Cut(strings.TrimSpace(s.HTTP), " ")
	return strings.ToUpper(method), caps.Fill(strings.TrimSpace(path))
}

// BeforeTarget says how many of the setup steps run before the target
// starts: those before the first HTTP step.
func (sc *Scenario) BeforeTarget() int {
	for i := range sc.Setup {
		if sc.Setup[i].Kind() == StepHTTP {
			return i
		}
	}
	return len(sc.Setup)
}

// Captures are the values setup steps captured, by name.
type Captures map[string]string

// captureRef matches {capture.NAME}.
var captureRef = regexp.MustCompile(`\{capture\.([A-Za-z_][A-Za-z0-9_]*)\}`)

// captureName is what a capture may be called.
var captureName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Fill replaces every {capture.NAME} in s with its value; one that has
// none stays as it is.
func (c Captures) Fill(s string) string {
	if !strings.Contains(s, "{capture.") {
		return s
	}
	return captureRef.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := c[captureRef.FindStringSubmatch(m)[1]]; ok {
			return v
		}
		return m
	})
}

// captureSource matches what a capture takes from a step's result.
var captureSource = regexp.MustCompile(`\{(json|header|row|regexp)\.([^{}]+)\}|\{(reply|stdout)\}`)

// captureKind is the kind of result a match of captureSource reads.
func captureKind(sub []string) string {
	if sub[1] != "" {
		return sub[1]
	}
	return sub[3]
}

// answerPatterns caches the compiled patterns of {regexp.PATTERN}
// captures: a scenario has a few, and a chain reads them per request.
var answerPatterns sync.Map

// AnswerValue returns what a capture's {json.PATH}, {header.NAME} or
// {regexp.PATTERN} reads from an HTTP answer: for a pattern, the text its
// first group matched in the body (the whole match when it has no group).
func AnswerValue(kind, name string, header http.Header, body string) (string, bool) {
	switch kind {
	case "header":
		return HeaderValue(header, name)
	case "regexp":
		re, ok := answerPatterns.Load(name)
		if !ok {
			c, err := regexp.Compile(name)
			if err != nil {
				return "", false
			}
			re, _ = answerPatterns.LoadOrStore(name, c)
		}
		m := re.(*regexp.Regexp).FindStringSubmatch(body)
		if m == nil {
			return "", false
		}
		return m[len(m)-1], true
	}
	return JSONValue(body, name)
}

// checkPattern says what is wrong with the pattern of a {regexp.PATTERN}
// capture, or "".
func checkPattern(p string) string {
	re, err := regexp.Compile(p)
	switch {
	case err != nil:
		return fmt.Sprintf("pattern %q does not compile: %v", p, err)
	case re.NumSubexp() > 1:
		return fmt.Sprintf("pattern %q has %d groups: a capture takes one", p, re.NumSubexp())
	}
	return ""
}

// CaptureFrom fills a capture's template from a step's result: lookup
// answers a kind ("json", "header", "row", "reply", "stdout") and a name. It fails
// when a value is not there (an empty one included): a later request would
// otherwise go out with a hole in it.
func CaptureFrom(tmpl string, lookup func(kind, name string) (string, bool)) (string, error) {
	var err error
	out := captureSource.ReplaceAllStringFunc(tmpl, func(m string) string {
		sub := captureSource.FindStringSubmatch(m)
		kind, name := captureKind(sub), sub[2]
		v, ok := lookup(kind, name)
		if (!ok || v == "") && err == nil {
			what := kind
			if name != "" {
				what += "." + name
			}
			err = fmt.Errorf("the result has no %s", what)
		}
		return v
	})
	return out, err
}

// JSONValue returns the value at a JSON path of body as text, the way
// {json.PATH} placeholders read it.
func JSONValue(body, path string) (string, bool) {
	return fillPlaceholder("json", path, nil, body)
}

// HeaderValue returns a header as {header.NAME} placeholders read it.
func HeaderValue(h http.Header, name string) (string, bool) {
	v := h.Get(name)
	return v, v != ""
}

// validateSetup checks the setup and teardown steps: one kind each, a
// dependency of the right kind, SQL files that can be read, programs that
// can be found, captures that are valid and used only after they are
// made. The teardown steps use what the setup steps captured.
func (v *validator) validateSetup() {
	sc := v.sc
	made := map[string]bool{}
	v.validateSteps("setup", sc.Setup, made)
	setupMade := maps.Clone(made)
	v.validateSteps("teardown", sc.Teardown, made)
	made = setupMade
	// The load and the read-back use what the whole setup captured.
	loads := sc.loadsAt()
	for _, l := range loads {
		for j, r := range l.l.Requests {
			at := fmt.Sprintf("%s.requests[%d]", l.at, j)
			if r.Chain != nil {
				v.validateChainCaptures(at, &r, made)
				continue
			}
			v.checkCaptureRefs(at+".path", made, r.Path)
			v.checkCaptureRefs(at+".body", made, r.Body)
			for k, h := range r.Headers {
				v.checkCaptureRefs(at+".headers."+k, made, h)
			}
		}
	}
	for i, w := range sc.Writes {
		at := fmt.Sprintf("$.writes[%d]", i)
		v.checkCaptureRefs(at+".read", made, w.Read)
		for k, h := range w.ReadHeaders {
			v.checkCaptureRefs(at+".read_headers."+k, made, h)
		}
	}
	v.validateProbes(made)
	withChains := maps.Clone(made)
	sc.chainCaptures(withChains)
	v.validateVerify(withChains)
}

// validateSteps checks the steps of section ("setup" or "teardown"),
// adding what they capture to made.
func (v *validator) validateSteps(section string, steps []SetupStep, made map[string]bool) {
	sc := v.sc
	deps := map[string]*Dependency{}
	var pgNames, depNames []string
	for i := range sc.Dependencies {
		d := &sc.Dependencies[i]
		deps[d.Name] = d
		depNames = append(depNames, d.Name)
		if d.Postgres != nil {
			pgNames = append(pgNames, d.Name)
		}
	}
	for i := range steps {
		s := &steps[i]
		at := fmt.Sprintf("$.%s[%d]", section, i)
		s.Position.File, s.Position.Line, s.Position.Column = v.locate(at)
		if s.Name == "" {
			s.Name = fmt.Sprintf("%s %d", section, i+1)
		}
		kinds := 0
		for _, set := range []bool{s.Postgres != "", s.Redis != "", s.HTTP != "", s.Run != nil} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			v.errorf(at, "write postgres: DEPENDENCY with sql or sql_file, redis: DEPENDENCY with command, http: \"POST /path\" or run: [PROGRAM, ARGS...]", "%s step %q needs exactly one of postgres, redis, http or run", section, s.Name)
			continue
		}
		// What the step itself uses must be captured by an earlier one.
		v.checkCaptureRefs(at, made, s.SQL, s.Body, s.HTTP)
		for k, h := range s.Headers {
			v.checkCaptureRefs(at+".headers."+k, made, h)
		}
		v.checkCaptureRefs(at+".command", made, s.Command...)
		v.checkCaptureRefs(at+".run", made, s.Run...)
		for k, e := range s.Env {
			v.checkCaptureRefs(at+".env."+k, made, e)
		}
		switch s.Kind() {
		case StepSQL:
			v.validateSQLStep(at, s, deps, pgNames)
		case StepRedis:
			v.validateRedisStep(at, s, deps, depNames)
		case StepRun:
			v.validateRunStep(at, s)
		default:
			v.validateHTTPStep(at, s)
		}
		names := make([]string, 0, len(s.Capture))
		for name := range s.Capture {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			v.validateCapture(at+".capture."+name, s, name, made)
			made[name] = true
		}
	}
}

// checkCaptureRefs refuses a {capture.NAME} that no earlier setup step
// captures.
func (v *validator) checkCaptureRefs(at string, made map[string]bool, ss ...string) {
	for _, s := range ss {
		for _, m := range captureRef.FindAllStringSubmatch(s, -1) {
			if made[m[1]] {
				continue
			}
			known := make([]string, 0, len(made))
			for k := range made {
				known = append(known, k)
			}
			hint := "capture it in a setup step before it is used: capture: {" + m[1] + ": \"{json.PATH}\"}"
			if len(known) > 0 {
				if h := suggest.Hint(m[1], known); h != "" {
					hint = h
				}
			}
			v.errorf(at, hint, "{capture.%s} is used before any setup step captures it", m[1])
		}
		if strings.Contains(s, "{capture.") && len(captureRef.FindAllString(s, -1)) != strings.Count(s, "{capture.") {
			v.errorf(at, "a capture is written {capture.NAME}, NAME letters, digits and _", "bad capture placeholder in %q", s)
		}
	}
}

func (v *validator) validateCapture(at string, s *SetupStep, name string, made map[string]bool) {
	tmpl := s.Capture[name]
	if !captureName.MatchString(name) {
		v.errorf(at, "name it with letters, digits and _, such as token", "capture name %q cannot be used", name)
		return
	}
	if made[name] {
		v.errorf(at, "give each capture its own name", "capture %q is made by an earlier step already", name)
		return
	}
	allowed := map[string]string{StepHTTP: "{json.PATH}, {header.NAME} or {regexp.PATTERN}", StepSQL: "{row.COLUMN}", StepRedis: "{reply}", StepRun: "{stdout} or {regexp.PATTERN}"}[s.Kind()]
	refs := captureSource.FindAllStringSubmatch(tmpl, -1)
	if len(refs) == 0 || strings.Count(tmpl, "{") != len(refs) {
		v.errorf(at, "take it from the step's result with "+allowed, "capture %q takes nothing from the step's result: %q", name, tmpl)
		return
	}
	for _, m := range refs {
		kind := captureKind(m)
		ok := map[string][]string{StepHTTP: {"json", "header", "regexp"}, StepSQL: {"row"}, StepRedis: {"reply"}, StepRun: {"stdout", "regexp"}}[s.Kind()]
		if !slices.Contains(ok, kind) {
			v.errorf(at, "a "+s.Kind()+" step's result is read with "+allowed, "capture %q reads %s, which a %s step does not give", name, m[0], s.Kind())
			return
		}
		if kind == "regexp" {
			if msg := checkPattern(m[2]); msg != "" {
				v.errorf(at, "write a Go regular expression without braces, with at most one group: {regexp.id=([0-9]+)}", "capture %q: %s", name, msg)
				return
			}
		}
	}
}

func (v *validator) validateSQLStep(at string, s *SetupStep, deps map[string]*Dependency, pgNames []string) {
	if d := deps[s.Postgres]; d == nil || d.Postgres == nil {
		hint := "declare it: dependencies: [{name: " + s.Postgres + ", postgres: {}}]"
		if len(pgNames) > 0 {
			hint = suggest.Hint(s.Postgres, pgNames)
			if hint == "" {
				hint = "the Postgres dependencies are " + strings.Join(pgNames, ", ")
			}
		}
		if d != nil {
			v.errorf(at+".postgres", "SQL steps run against a dependency with postgres: {}", "dependency %q is not a postgres one", s.Postgres)
			return
		}
		v.errorf(at+".postgres", hint, "no dependency named %q", s.Postgres)
		return
	}
	if len(s.Command) > 0 || s.Headers != nil || s.Body != "" || len(s.Status) > 0 || s.Env != nil {
		v.errorf(at, "an SQL step takes sql or sql_file (and name, capture, timeout)", "%s %q mixes postgres with fields of another kind of step", stepWord(at), s.Name)
	}
	switch {
	case (s.SQL == "") == (s.SQLFile == ""):
		v.errorf(at, "write sql: \"INSERT ...\" or sql_file: migrations/", "%s %q needs exactly one of sql or sql_file", stepWord(at), s.Name)
	case s.SQL != "":
		file, line, col := v.locate(at + ".sql")
		s.Scripts = []SQLScript{{File: file, Text: s.SQL, Inline: true, Line: line, Column: col}}
	default:
		if v.opts.SkipBodyFiles {
			return
		}
		scripts, err := readSQLFiles(v.path(s.SQLFile))
		if err != nil {
			v.errorf(at+".sql_file", "name an SQL file or a directory of *.sql files, relative to the scenario", "%v", err)
			return
		}
		s.Scripts = scripts
	}
}

// readSQLFiles reads an SQL file, or every *.sql file of a directory in
// name order. Only regular files are read: a link or a device is refused.
func readSQLFiles(name string) ([]SQLScript, error) {
	st, err := os.Lstat(name)
	if err != nil {
		return nil, fmt.Errorf("cannot read sql_file: %v", err)
	}
	var files []string
	switch {
	case st.Mode().IsRegular():
		files = []string{name}
	case st.IsDir():
		entries, err := os.ReadDir(name)
		if err != nil {
			return nil, fmt.Errorf("cannot read sql_file: %v", err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".sql") {
				files = append(files, filepath.Join(name, e.Name()))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("sql_file %s holds no *.sql file", name)
		}
	default:
		return nil, fmt.Errorf("sql_file %s is not a regular file or a directory", name)
	}
	var out []SQLScript
	total := 0
	for _, f := range files {
		st, err := os.Lstat(f)
		if err != nil {
			return nil, fmt.Errorf("cannot read sql_file: %v", err)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("sql_file %s is not a regular file", f)
		}
		data, err := readBoundedScenario(f, MaxSQLFile)
		if err != nil {
			return nil, fmt.Errorf("cannot read sql_file %s: %v", f, err)
		}
		if total += len(data); total > MaxSQLFile {
			return nil, fmt.Errorf("sql_file %s: the SQL files hold more than %d bytes", name, MaxSQLFile)
		}
		out = append(out, SQLScript{File: f, Text: string(data), Line: 1, Column: 1})
	}
	return out, nil
}

func (v *validator) validateRedisStep(at string, s *SetupStep, deps map[string]*Dependency, names []string) {
	d := deps[s.Redis]
	switch {
	case d == nil:
		hint := "declare it under dependencies, with command: {argv: [redis-server, --port, \"{port:" + s.Redis + "}\", --save, \"\"]}"
		if h := suggest.Hint(s.Redis, names); h != "" {
			hint = h
		}
		v.errorf(at+".redis", hint, "no dependency named %q", s.Redis)
		return
	case d.Command == nil:
		v.errorf(at+".redis", "Redis steps run against a dependency started with command: [redis-server, ...]", "dependency %q is not a command dependency", s.Redis)
		return
	}
	if s.SQL != "" || s.SQLFile != "" || s.Headers != nil || s.Body != "" || len(s.Status) > 0 || s.Env != nil {
		v.errorf(at, "a Redis step takes command (and name, capture, timeout)", "%s %q mixes redis with fields of another kind of step", stepWord(at), s.Name)
	}
	if len(s.Command) == 0 {
		v.errorf(at, "write command: [SET, greeting, hello]", "%s %q has no command", stepWord(at), s.Name)
	}
}

func (v *validator) validateHTTPStep(at string, s *SetupStep) {
	method, p, _ := strings.Cut(strings.TrimSpace(s.HTTP), " ")
	p = strings.TrimSpace(p)
	if !methods[strings.ToUpper(method)] || !strings.HasPrefix(p, "/") {
		v.errorf(at+".http", "write a method and a path, such as POST /api/tokens", "bad http %q", s.HTTP)
	}
	if s.SQL != "" || s.SQLFile != "" || len(s.Command) > 0 || s.Env != nil {
		v.errorf(at, "an HTTP step takes http, headers, body and status (and name, capture, timeout)", "%s %q mixes http with fields of another kind of step", stepWord(at), s.Name)
	}
	for k := range s.Headers {
		if !headerName.MatchString(k) {
			v.errorf(at+".headers."+k, "write a header name such as Authorization", "%q is not a header name", k)
		}
	}
}

// validateRunStep checks a step that runs a program: a program named,
// arguments and environment a program can be given, and the program
// there (a name in PATH, a path relative to the scenario's directory)
// unless it is made of captures or the run directory's copy of the
// scenario is being read again, far from where it ran.
func (v *validator) validateRunStep(at string, s *SetupStep) {
	s.Dir = v.dir
	if s.SQL != "" || s.SQLFile != "" || len(s.Command) > 0 || s.Headers != nil || s.Body != "" || len(s.Status) > 0 {
		v.errorf(at, "a run step takes run and env (and name, capture, timeout)", "%s %q mixes run with fields of another kind of step", stepWord(at), s.Name)
	}
	if len(s.Run) == 0 || strings.TrimSpace(s.Run[0]) == "" {
		v.errorf(at+".run", "write run: [./scripts/seed.sh, --rows, \"100\"]: the program, then its arguments", "%s %q names no program to run", stepWord(at), s.Name)
		return
	}
	v.checkNUL(at+".run", s.Run...)
	names := make([]string, 0, len(s.Env))
	for k := range s.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if k == "" || strings.ContainsAny(k, "= \x00") {
			v.errorf(at+".env", "", "environment variable name %q is not valid", k)
		}
		v.checkNUL(at+".env."+k, s.Env[k])
	}
	prog := s.Run[0]
	if v.opts.SkipBodyFiles || strings.Contains(prog, "{capture.") || strings.ContainsRune(prog, 0) {
		return
	}
	if !strings.Contains(prog, "/") {
		if _, err := exec.LookPath(prog); err != nil {
			v.errorf(at+".run", "install it, or give its path (./bin/"+prog+", relative to the scenario)", "%s %q runs %s, which is not in PATH", stepWord(at), s.Name, prog)
		}
		return
	}
	p := prog
	if !filepath.IsAbs(p) {
		p = filepath.Join(v.dir, p)
	}
	switch st, err := os.Stat(p); {
	case err != nil:
		v.errorf(at+".run", "a path is relative to the scenario's directory", "%s %q runs %s, which does not exist", stepWord(at), s.Name, p)
	case st.IsDir() || st.Mode()&0o111 == 0:
		v.errorf(at+".run", "make it executable (chmod +x)", "%s %q runs %s, which is not an executable file", stepWord(at), s.Name, p)
	}
}

// stepWord names the kind of step written at a path: a setup or a
// teardown step, or a probe.
func stepWord(at string) string {
	switch {
	case strings.HasPrefix(at, "$.teardown"):
		return "teardown step"
	case strings.HasPrefix(at, "$.probes"):
		return "probe"
	}
	return "setup step"
}

// RedisPassword says whether dependency name is given its
// {password:NAME}, so that a Redis step must authenticate with it.
func (sc *Scenario) RedisPassword(name string) bool {
	for _, d := range sc.Dependencies {
		if d.Name != name {
			continue
		}
		for _, s := range d.templated() {
			if strings.Contains(s, "{password:"+name+"}") {
				return true
			}
		}
	}
	return false
}

// loadAt is a load of the scenario and the path it is written at.
type loadAt struct {
	at string
	l  *Load
}

// loadsAt returns the scenario's load and each phase's own, with their
// paths: every load whose requests validation reads.
func (sc *Scenario) loadsAt() []loadAt {
	loads := []loadAt{{"$.load", &sc.Load}}
	for i := range sc.Phases {
		if sc.Phases[i].Load != nil {
			loads = append(loads, loadAt{fmt.Sprintf("$.phases[%d].load", i), sc.Phases[i].Load})
		}
	}
	return loads
}
