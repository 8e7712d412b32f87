package contract

import (
	"testing"

	"github.com/chaoskit/chaoskit/timeline"
)

// The fixtures of these tests answer as a shop does: the source that
// served, the age of a cached copy and the breaker's state in headers of
// their own (X-Served-From, X-Copy-Age, X-Breaker-State). The zero
// Classification reads none of them (a scenario or its target profile
// names a service's headers), so the tests name them.

// conv fills the header names s's classification leaves empty with the
// fixtures' ones.
func conv(s Spec) Spec {
	s.Classify = convCls(s.Classify)
	return s
}

// convCls fills the header names c leaves empty with the fixtures' ones.
func convCls(c Classification) Classification {
	if c.SourceHeader == "" && c.SourceJSON == "" {
		c.SourceHeader = "X-Served-From"
	}
	if c.AgeHeader == "" {
		c.AgeHeader = "X-Copy-Age"
	}
	if c.BreakerHeader == "" {
		c.BreakerHeader = "X-Breaker-State"
	}
	return c
}

// TestZeroClassificationKnowsNoService checks that no service's headers
// are built in: under the zero classification a copy a service states it
// served from its cache is a primary answer without an age.
func TestZeroClassificationKnowsNoService(t *testing.T) {
	r := &timeline.Request{Status: 200, Headers: map[string]string{"X-Served-From": "cache", "X-Copy-Age": "1500"}}
	var zero Classification
	if class, src := zero.Classify(r); class != Primary || src != "" {
		t.Errorf("zero classification: %s from %q, want primary", class, src)
	}
	if _, ok, err := zero.Age(r); ok || err != nil {
		t.Errorf("zero classification reads an age: %v %v", ok, err)
	}
	demo := convCls(zero)
	if class, src := demo.Classify(r); class != Fallback || src != "cache" {
		t.Errorf("demo's headers: %s from %q, want a fallback from cache", class, src)
	}
}
