package contract

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

func asSyntax(err error, se **SyntaxError) bool { return errors.As(err, se) }

func TestClassify(t *testing.T) {
	req := func(status int, lat time.Duration, headers map[string]string, body, errText string) *timeline.Request {
		return &timeline.Request{Status: status, Latency: lat, Headers: headers, Body: body, Error: errText}
	}
	src := func(s string) map[string]string { return map[string]string{"X-Served-From": s} }
	ms := time.Millisecond
	demo := convCls(Classification{})
	custom := Classification{
		SourceJSON:   "meta.served_by",
		Primary:      []string{"origin"},
		RejectStatus: []StatusRange{{429, 429}},
		RejectWithin: 200 * ms,
		Rules: []Rule{
			{Class: Fallback, Source: "edge", Header: map[string]string{"x-cache": "HIT"}},
			{Class: Fallback, Source: "degraded", Status: []StatusRange{{200, 299}}, JSON: map[string]string{"degraded": "true"}},
			{Class: Rejected, Status: []StatusRange{{500, 599}}, Header: map[string]string{"Retry-After": "*"}, MaxLatency: 10 * ms},
		},
	}
	tests := []struct {
		name   string
		cls    Classification
		r      *timeline.Request
		class  Class
		source string
	}{
		{"db is primary", demo, req(200, ms, src("db"), "", ""), Primary, "db"},
		{"upstream is primary", demo, req(200, ms, src("upstream"), "", ""), Primary, "upstream"},
		{"no header is primary", demo, req(200, ms, nil, "", ""), Primary, ""},
		{"a 404 from the db is primary", demo, req(404, ms, src("db"), "", ""), Primary, "db"},
		{"cache is a fallback", demo, req(200, ms, src("cache"), "", ""), Fallback, "cache"},
		{"default is a fallback", demo, req(200, ms, src("default"), "", ""), Fallback, "default"},
		{"fast 503 is rejected", demo, req(503, 3*ms, src("none"), "", ""), Rejected, "none"},
		{"fast 429 is rejected", demo, req(429, ms, nil, "", ""), Rejected, ""},
		{"slow 503 is an error", demo, req(503, 80*ms, src("none"), "", ""), Error, "none"},
		{"slow 429 is an error", demo, req(429, 80*ms, nil, "", ""), Error, ""},
		{"500 is an error", demo, req(500, ms, nil, "", ""), Error, ""},
		{"504 is a timeout", demo, req(504, ms, nil, "", ""), Timeout, ""},
		{"client timeout", demo, req(0, time.Second, nil, "", "Get \"x\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"), Timeout, ""},
		{"connection refused", demo, req(0, ms, nil, "", "dial tcp 127.0.0.1:1: connect: connection refused"), Error, ""},
		{"source from the body", custom, req(200, ms, nil, `{"meta":{"served_by":"origin"}}`, ""), Primary, "origin"},
		{"other source from the body", custom, req(200, ms, nil, `{"meta":{"served_by":"replica"}}`, ""), Fallback, "replica"},
		{"header rule", custom, req(200, ms, map[string]string{"X-Cache": "HIT"}, `{"meta":{"served_by":"origin"}}`, ""), Fallback, "edge"},
		{"header rule needs its value", custom, req(200, ms, map[string]string{"X-Cache": "MISS"}, `{"meta":{"served_by":"origin"}}`, ""), Primary, "origin"},
		{"json rule", custom, req(200, ms, nil, `{"degraded":true,"meta":{"served_by":"origin"}}`, ""), Fallback, "degraded"},
		{"json rule needs its status", custom, req(500, ms, nil, `{"degraded":true}`, ""), Error, ""},
		{"present-header rule", custom, req(503, 5*ms, map[string]string{"Retry-After": "1"}, "", ""), Rejected, ""},
		{"rule latency bound", custom, req(503, 50*ms, map[string]string{"Retry-After": "1"}, "", ""), Error, ""},
		{"own reject statuses", custom, req(429, 150*ms, nil, "", ""), Rejected, ""},
		{"503 is no refusal there", custom, req(503, ms, nil, "", ""), Error, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, s := tt.cls.Classify(tt.r)
			if c != tt.class || s != tt.source {
				t.Errorf("Classify = %s %q, want %s %q", c, s, tt.class, tt.source)
			}
		})
	}
}

func TestClassificationRulesDecideVerdicts(t *testing.T) {
	// The service states its source in the body: the demo's defaults see
	// only primaries; its own classification sees the fallbacks.
	tl := newShop(10, faultPhase(all, func(r *timeline.Request) {
		served(r, 200, "", time.Millisecond)
		r.Headers = nil
		r.Body = `{"meta":{"source":"stale"}}`
	})).tl
	spec := Spec{Name: "c", Phase: "fault", Expect: []string{`fallback("stale") >= 99%`}}
	for _, tt := range []struct {
		cls  Classification
		want Outcome
	}{{convCls(Classification{}), Fail}, {Classification{SourceJSON: "meta.source"}, Pass}} {
		spec.Classify = tt.cls
		c, err := Compile(conv(spec))
		if err != nil {
			t.Fatal(err)
		}
		if v := c.Evaluate(tl); v.Outcome != tt.want {
			t.Errorf("with %+v: %s (%s), want %s", tt.cls, v.Outcome, v.Measured, tt.want)
		}
	}
}

func TestParseStatus(t *testing.T) {
	for in, want := range map[string]StatusRange{"503": {503, 503}, "5xx": {500, 599}, "2XX": {200, 299}, " 429 ": {429, 429}} {
		got, err := ParseStatus(in)
		if err != nil || got != want {
			t.Errorf("ParseStatus(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"6xx", "99", "abc", "50x", ""} {
		if _, err := ParseStatus(in); err == nil {
			t.Errorf("ParseStatus(%q) accepted", in)
		}
	}
	if (StatusRange{500, 599}).String() != "5xx" || (StatusRange{503, 503}).String() != "503" {
		t.Error("StatusRange.String")
	}
}

func TestJSONPath(t *testing.T) {
	body := `{"a":{"b":[{"c":1},{"c":"x"}]},"s":"t"}`
	for path, want := range map[string]any{"s": "t", "a.b.0.c": 1.0, "a.b.1.c": "x"} {
		if got, ok := JSONPath(body, path); !ok || got != want {
			t.Errorf("JSONPath(%q) = %v, %v", path, got, ok)
		}
	}
	for _, path := range []string{"x", "a.b.2", "a.b.x", "s.t"} {
		if _, ok := JSONPath(body, path); ok {
			t.Errorf("JSONPath(%q) found something", path)
		}
	}
	if _, ok := JSONPath("not json", "a"); ok {
		t.Error("JSONPath on a non-JSON body")
	}
}

func TestFilter(t *testing.T) {
	f := Filter{Method: "GET", Path: "/products/*", Tag: "reads", Template: "product"}
	tags := []string{"reads"}
	if !f.Match("get", "/products/7?x=1", tags, "product") {
		t.Error("should match")
	}
	for _, c := range []struct {
		m, p     string
		tags     []string
		template string
	}{{"POST", "/products/7", tags, "product"}, {"GET", "/products/7/reviews", tags, "product"}, {"GET", "/products/7", nil, "product"},
		{"GET", "/products/7", tags, "other"}, {"GET", "/products/7", tags, ""}} {
		if f.Match(c.m, c.p, c.tags, c.template) {
			t.Errorf("%+v should not match", c)
		}
	}
	if !(Filter{}).Match("PUT", "/x", nil, "") || (Filter{Path: "["}).Match("GET", "/x", nil, "") {
		t.Error("empty filter matches all; a bad glob matches nothing")
	}
}

func TestAge(t *testing.T) {
	custom := Classification{AgeHeader: "x-cache-age"}
	tests := []struct {
		name    string
		cls     Classification
		headers map[string]string
		age     time.Duration
		ok      bool
		err     string
	}{
		{"no header, no copy", convCls(Classification{}), nil, 0, false, ""},
		{"milliseconds", convCls(Classification{}), map[string]string{"X-Copy-Age": "1500"}, 1500 * time.Millisecond, true, ""},
		{"fractions", convCls(Classification{}), map[string]string{"X-Copy-Age": "0.5"}, 500 * time.Microsecond, true, ""},
		{"zero", convCls(Classification{}), map[string]string{"X-Copy-Age": "0"}, 0, true, ""},
		{"custom header", custom, map[string]string{"X-Cache-Age": "20"}, 20 * time.Millisecond, true, ""},
		{"custom header ignores the default", custom, map[string]string{"X-Copy-Age": "-1"}, 0, false, ""},
		{"beyond any duration", convCls(Classification{}), map[string]string{"X-Copy-Age": "1e300"}, time.Duration(math.MaxInt64), true, ""},
		{"negative", convCls(Classification{}), map[string]string{"X-Copy-Age": "-5"}, 0, false, `age header X-Copy-Age: "-5" is not a non-negative number of milliseconds`},
		{"unparsable", convCls(Classification{}), map[string]string{"X-Copy-Age": "soon"}, 0, false, `"soon" is not`},
		{"empty", convCls(Classification{}), map[string]string{"X-Copy-Age": ""}, 0, false, `"" is not`},
		{"not a number", convCls(Classification{}), map[string]string{"X-Copy-Age": "NaN"}, 0, false, `"NaN" is not`},
		{"infinite", convCls(Classification{}), map[string]string{"X-Copy-Age": "+Inf"}, 0, false, `"+Inf" is not`},
		{"custom header, bad", custom, map[string]string{"X-Cache-Age": "-0.1"}, 0, false, `age header X-Cache-Age: "-0.1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			age, ok, err := tt.cls.Age(&timeline.Request{Headers: tt.headers})
			if age != tt.age || ok != tt.ok || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("Age = %v, %v, %v; want %v, %v, %q", age, ok, err, tt.age, tt.ok, tt.err)
			}
			var ae *AgeError
			if tt.err != "" && !errors.As(err, &ae) {
				t.Errorf("error %T is not an *AgeError", err)
			}
		})
	}
}

// TestBadAgesAreFindings checks that a service stating ages that are none
// gets a finding per route, naming the value, even with no contract on age.
func TestBadAgesAreFindings(t *testing.T) {
	tl := newShop(10, faultPhase(every(4), func(r *timeline.Request) { r.Headers["X-Copy-Age"] = "-3" })).tl
	got := BadAges(tl, convCls(Classification{}))
	if len(got) != 1 {
		t.Fatalf("findings = %+v, want one", got)
	}
	f := got[0]
	if f.Kind != "bad_age" || f.Route != "GET /products/{id}" || f.Phase != "fault" || f.Total != 300 || f.Share != 25.0/3 ||
		!strings.Contains(f.Message, `25 of 300 responses`) || !strings.Contains(f.Message, `X-Copy-Age: "-3"`) {
		t.Errorf("finding = %+v", f)
	}
	if m := Measure(tl, convCls(Classification{})); len(m.Findings) != 1 || m.Findings[0].Kind != "bad_age" {
		t.Errorf("Measure findings = %+v", m.Findings)
	}
	if got := BadAges(newShop(10, normal).tl, convCls(Classification{})); len(got) != 0 {
		t.Errorf("good ages: findings %+v", got)
	}
}
