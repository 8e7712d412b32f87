package plan

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxExpansion bounds how many values the in-turn templates of one string
// may walk through together.
const maxExpansion = 1000000

// partKind is what one piece of a template stands for.
type partKind int

const (
	literal partKind = iota
	rangeInTurn
	choiceInTurn
	rangeRandom
	choiceRandom
	sequence
	captured
)

type part struct {
	kind    partKind
	text    string // literal
	lo, hi  int
	choices []string
}

func (p part) size() int {
	switch p.kind {
	case rangeInTurn:
		return p.hi - p.lo + 1
	case choiceInTurn:
		return len(p.choices)
	}
	return 1
}

// template is a string with {…} placeholders compiled.
type template struct {
	parts []part
	// size is how many distinct strings the in-turn parts walk through.
	size  uint64
	plain bool
}

var (
	rangeBody  = regexp.MustCompile(`^(-?[0-9]+)\.\.(-?[0-9]+)$`)
	braceGroup = regexp.MustCompile(`\{[^{}]*\}`)
)

// compileTemplate parses s. Braces that hold none of the template forms
// (such as JSON in a body) are kept as they are.
func compileTemplate(s string) (*template, error) {
	t := &template{size: 1}
	last := 0
	for _, loc := range braceGroup.FindAllStringIndex(s, -1) {
		inner := s[loc[0]+1 : loc[1]-1]
		p, ok, err := parsePart(inner)
		if err != nil {
			return nil, fmt.Errorf("template %s in %q: %v", s[loc[0]:loc[1]], s, err)
		}
		if !ok {
			continue
		}
		if loc[0] > last {
			t.parts = append(t.parts, part{kind: literal, text: s[last:loc[0]]})
		}
		t.parts = append(t.parts, p)
		last = loc[1]
		t.size *= uint64(p.size())
		if t.size > maxExpansion {
			return nil, fmt.Errorf("%q walks through more than %d values", s, maxExpansion)
		}
	}
	if last < len(s) {
		t.parts = append(t.parts, part{kind: literal, text: s[last:]})
	}
	t.plain = len(t.parts) <= 1 && (len(t.parts) == 0 || t.parts[0].kind == literal)
	return t, nil
}

func parsePart(inner string) (part, bool, error) {
	if inner == "seq" {
		return part{kind: sequence}, true, nil
	}
	if name, ok := strings.CutPrefix(inner, "capture."); ok && captureName.MatchString(name) {
		return part{kind: captured, text: name}, true, nil
	}
	random := false
	if rest, ok := strings.CutPrefix(inner, "random:"); ok {
		random, inner = true, rest
	}
	if m := rangeBody.FindStringSubmatch(inner); m != nil {
		lo, err1 := strconv.Atoi(m[1])
		hi, err2 := strconv.Atoi(m[2])
		if err1 != nil || err2 != nil || hi < lo {
			return part{}, false, fmt.Errorf("a range must go from low to high")
		}
		if hi-lo >= maxExpansion {
			return part{}, false, fmt.Errorf("a range may hold at most %d values", maxExpansion)
		}
		if random {
			return part{kind: rangeRandom, lo: lo, hi: hi}, true, nil
		}
		return part{kind: rangeInTurn, lo: lo, hi: hi}, true, nil
	}
	if strings.Contains(inner, "|") && !strings.ContainsAny(inner, "\"\n") {
		kind := choiceInTurn
		if random {
			kind = choiceRandom
		}
		return part{kind: kind, choices: strings.Split(inner, "|")}, true, nil
	}
	if random {
		return part{}, false, fmt.Errorf("random: takes a range such as 1..50 or choices such as a|b|c")
	}
	return part{}, false, nil
}

// render returns the n-th string of the template: in-turn parts count like
// the digits of a number, the last one fastest; seq is the request's
// sequence number, caps the values setup steps captured.
func (t *template) render(n, seq uint64, rnd *rand.Rand, caps Captures) string {
	if t.plain {
		if len(t.parts) == 0 {
			return ""
		}
		return t.parts[0].text
	}
	n %= t.size
	vals := make([]string, len(t.parts))
	for i := len(t.parts) - 1; i >= 0; i-- {
		p := t.parts[i]
		switch p.kind {
		case literal:
			vals[i] = p.text
		case rangeInTurn:
			size := uint64(p.size())
			vals[i] = strconv.Itoa(p.lo + int(n%size))
			n /= size
		case choiceInTurn:
			size := uint64(p.size())
			vals[i] = p.choices[n%size]
			n /= size
		case rangeRandom:
			vals[i] = strconv.Itoa(p.lo + rnd.IntN(p.hi-p.lo+1))
		case choiceRandom:
			vals[i] = p.choices[rnd.IntN(len(p.choices))]
		case sequence:
			vals[i] = strconv.FormatUint(seq, 10)
		case captured:
			v, ok := caps[p.text]
			if !ok {
				v = "{capture." + p.text + "}"
			}
			vals[i] = v
		}
	}
	return strings.Join(vals, "")
}

// Request is one concrete request a load generator sends.
type Request struct {
	Method  string
	Path    string
	Headers map[string]string
	Body    []byte
	Tags    []string
	// Template is the name of the template the request was made from ("" when
	// it has none).
	Template string
	// GRPC, for a gRPC call, is the call it was made from: Path is then
	// /package.Service/Method, Body the message in JSON and Headers the
	// metadata.
	GRPC *GRPCCall
}

// HasGRPC says whether any request of the load is a gRPC call.
func (l Load) HasGRPC() bool {
	for _, r := range l.Requests {
		if r.GRPC != nil {
			return true
		}
	}
	return false
}

// Target returns the request's key in a timeline, e.g. "GET /products/7".
func (r Request) Target() string { return r.Method + " " + r.Path }

type compiledSpec struct {
	compiledStep
	grpc    *GRPCCall
	chain   []*compiledStep
	weight  int
	n       uint64 // how many requests (iterations, for a chain) this spec has made
	current int    // smooth weighted round-robin state
}

// Generator makes the requests of a load: specs are chosen by smooth
// weighted round-robin (as nginx balances upstreams), so a 3:1 weighting
// sends exactly three of one for each of the other, interleaved.
type Generator struct {
	mu    sync.Mutex
	specs []*compiledSpec
	total int
	seq   *atomic.Uint64
	rnd   *rand.Rand
	caps  Captures
}

// SetCaptures gives the generator the values setup steps captured, for
// the {capture.NAME} templates of its requests. Call it before Next.
func (g *Generator) SetCaptures(c Captures) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.caps = c
}

// NewGenerator compiles the load's requests. seq numbers requests for {seq}
// templates and may be shared between generators so numbers stay unique
// across a run; nil gives the generator its own counter.
func NewGenerator(l Load, seq *atomic.Uint64) (*Generator, error) {
	if seq == nil {
		seq = new(atomic.Uint64)
	}
	seed := uint64(l.Seed)
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	g := &Generator{seq: seq, rnd: rand.New(rand.NewPCG(seed, seed>>1|1))}
	for _, s := range l.Requests {
		c := &compiledSpec{compiledStep: compiledStep{method: s.Method, tags: s.Tags, name: s.Name}, weight: max(s.Weight, 1)}
		for _, st := range s.Chain {
			cs, err := compileStep(s.Name, s.Tags, st)
			if err != nil {
				return nil, err
			}
			c.chain = append(c.chain, cs)
		}
		path, body, headers := s.Path, s.Body, s.Headers
		if s.GRPC != nil {
			c.method, c.grpc = "POST", s.GRPC
			path, body, headers = s.GRPC.Path(), string(s.GRPC.Message), s.GRPC.Metadata
		}
		c.rawPath = path
		var err error
		if c.path, err = compileTemplate(path); err != nil {
			return nil, err
		}
		if c.body, err = compileTemplate(body); err != nil {
			return nil, err
		}
		for k, v := range headers {
			t, err := compileTemplate(v)
			if err != nil {
				return nil, err
			}
			if c.headers == nil {
				c.headers = map[string]*template{}
			}
			c.headers[k] = t
		}
		g.specs = append(g.specs, c)
		g.total += c.weight
	}
	if len(g.specs) == 0 {
		return nil, fmt.Errorf("the load has no requests")
	}
	return g, nil
}

// pick chooses the next spec and returns it with its count of uses
// before this one. g.mu is held.
func (g *Generator) pick() (*compiledSpec, uint64) {
	var best *compiledSpec
	for _, s := range g.specs {
		s.current += s.weight
		if best == nil || s.current > best.current {
			best = s
		}
	}
	best.current -= g.total
	n := best.n
	best.n++
	return best, n
}

// Next returns the next request. It is safe for concurrent use. A chain
// chosen gives its first step: a load with chains runs by NextIteration.
func (g *Generator) Next() Request {
	g.mu.Lock()
	defer g.mu.Unlock()
	best, n := g.pick()
	step := &best.compiledStep
	if len(best.chain) > 0 {
		step = best.chain[0]
	}
	r := g.render(step, n, g.caps)
	r.GRPC = best.grpc
	return r
}

// render renders step s as its n-th request with caps. g.mu is held.
func (g *Generator) render(s *compiledStep, n uint64, caps Captures) Request {
	seq := g.seq.Add(1)
	r := Request{Method: s.method, Path: s.path.render(n, seq, g.rnd, caps), Tags: s.tags, Template: s.name}
	if b := s.body.render(n, seq, g.rnd, caps); b != "" {
		r.Body = []byte(b)
	}
	if len(s.headers) > 0 {
		r.Headers = make(map[string]string, len(s.headers))
		for k, t := range s.headers {
			r.Headers[k] = t.render(n, seq, g.rnd, caps)
		}
	}
	return r
}
