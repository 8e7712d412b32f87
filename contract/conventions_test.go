package contract

import (
	"testing"

	"github.com/chaoskit/chaoskit/timeline"
)

// The fixtures of these tests answer as the demo shop does: its source, the
// age of a cached copy and its breaker's state in X-Chaoskit-* headers.
// The zero Classification reads none of them (a target profile names a
// service's headers), so the tests name them.

// conv fills the header names s's classification leaves empty with the
// fixtures' ones.
func conv(s Spec) Spec {
	s.Classify = convCls(s.Classify)
	return s
}

// convCls fills the header names c leaves empty with the fixtures' ones.
func convCls(c Classification) Classification {
	if c.SourceHeader == "" && c.SourceJSON == "" {
		c.SourceHeader = "X-Chaoskit-Source"
	}
	if c.AgeHeader == "" {
		c.AgeHeader = "X-Chaoskit-Age"
	}
	if c.BreakerHeader == "" {
		c.BreakerHeader = "X-Chaoskit-Breaker"
	}
	return c
}

// TestZeroClassificationKnowsNoService checks that no service's headers
// are built in: under the zero classification a copy the demo states it
// served from its cache is a primary answer without an age.
func TestZeroClassificationKnowsNoService(t *testing.T) {
	r := &timeline.Request{Status: 200, Headers: map[string]string{"X-Chaoskit-Source": "cache", "X-Chaoskit-Age": "1500"}}
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
