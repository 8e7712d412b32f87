package netfault_test

import (
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/chaoskit/chaoskit/netfault"
)

// A scenario loader fills Proxy and Fault straight from YAML, with the
// names the documentation and the FieldErrors use.
func TestFaultAndProxyDecodeFromYAML(t *testing.T) {
	var doc struct {
		Proxies []netfault.Proxy `yaml:"proxies"`
		Faults  []netfault.Fault `yaml:"faults"`
	}
	src := `
proxies:
  - {name: postgres, listen: "127.0.0.1:0", upstream: "127.0.0.1:5432"}
faults:
  - {proxy: postgres, kind: latency, latency: 300ms, jitter: 50ms, direction: upstream, probability: 0.5}
  - {proxy: postgres, kind: slicer, average_size: 64, size_variation: 8, delay: 10us}
`
	if err := yaml.UnmarshalWithOptions([]byte(src), &doc, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	want := []netfault.Fault{
		{Proxy: "postgres", Kind: netfault.Latency, Latency: 300 * time.Millisecond, Jitter: 50 * time.Millisecond, Direction: netfault.Upstream, Probability: 0.5},
		{Proxy: "postgres", Kind: netfault.Slicer, AverageSize: 64, SizeVariation: 8, Delay: 10 * time.Microsecond},
	}
	if len(doc.Faults) != 2 || doc.Faults[0] != want[0] || doc.Faults[1] != want[1] {
		t.Fatalf("faults %+v, want %+v", doc.Faults, want)
	}
	if doc.Proxies[0] != (netfault.Proxy{Name: "postgres", Listen: "127.0.0.1:0", Upstream: "127.0.0.1:5432"}) {
		t.Fatalf("proxy %+v", doc.Proxies[0])
	}
	for _, f := range doc.Faults {
		if err := f.Validate(); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
