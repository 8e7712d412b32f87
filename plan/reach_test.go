package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/internal/reach"
)

// reachScenario is a scenario of a running service at %[1]s, with
// allow_hosts %[2]s, a proxy whose upstream is %[3]s and a Prometheus
// server at %[4]s.
const reachScenario = `name: reach
%[2]s
target:
  url: http://%[1]s:8080
  failpoints: http://%[1]s:9090
  points: [svc/point]
proxies:
  - name: db
    upstream: "%[3]s:5432"
prometheus: {url: "http://%[4]s:9091"}
load:
  rate: 10/s
  requests: [{path: /}]
phases:
  - name: p
    duration: 1s
`

// TestAllowHosts: an address beyond loopback is refused where it is
// written unless allow_hosts lists its host, and a listed host is refused
// at its entry unless the command consents (Options.AllowHosts); the
// scenario's Reach holds what both name, and nothing else.
func TestAllowHosts(t *testing.T) {
	for _, tt := range []struct {
		name          string
		host, allow   string
		upstream, pro string
		flag          []string
		skipBodies    bool
		want          []string // errors; none means it loads
		not           []string // errors it must not have
	}{
		{name: "no allow_hosts", host: "10.9.0.2", upstream: "127.0.0.1", pro: "127.0.0.1",
			want: []string{`reach.yaml:4:8: "10.9.0.2" is not a loopback address (reach it through loopback (a port forward), or add allow_hosts: [10.9.0.2] to the scenario and --allow-host 10.9.0.2 to the command)`,
				`reach.yaml:5:15: "10.9.0.2" is not a loopback address`}},
		{name: "the flag alone", host: "10.9.0.2", upstream: "127.0.0.1", pro: "127.0.0.1", flag: []string{"10.9.0.2"},
			want: []string{`reach.yaml:4:8: "10.9.0.2" is not a loopback address`}},
		{name: "allow_hosts alone", host: "10.9.0.2", allow: "allow_hosts: [10.9.0.2]", upstream: "127.0.0.1", pro: "127.0.0.1",
			want: []string{`reach.yaml:2:15: allow_hosts: 10.9.0.2 is not allowed by the command (no --allow-host 10.9.0.2) (add --allow-host 10.9.0.2 to the command`},
			not:  []string{"reach.yaml:4:8", "reach.yaml:5:15"}},
		{name: "both", host: "10.9.0.2", allow: "allow_hosts: [10.9.0.2, svc.example., 10.7.0.0/16]", upstream: "svc.example", pro: "10.7.3.4",
			flag: []string{"10.9.0.2,other.example", "SVC.example", "10.7.0.0/16"}},
		{name: "a saved run needs no consent", host: "10.9.0.2", allow: "allow_hosts: [10.9.0.2]", upstream: "127.0.0.1", pro: "127.0.0.1", skipBodies: true},
		{name: "proxy upstream not listed", host: "127.0.0.1", allow: "allow_hosts: [10.9.0.2]", upstream: "10.9.0.3", pro: "127.0.0.1", flag: []string{"10.9.0.2"},
			want: []string{`reach.yaml:9:15: proxy "db": "10.9.0.3:5432" is not a loopback address`}},
		{name: "prometheus not listed", host: "127.0.0.1", allow: "allow_hosts: [10.9.0.2]", upstream: "127.0.0.1", pro: "10.9.0.4", flag: []string{"10.9.0.2"},
			want: []string{`reach.yaml:10:19: prometheus url "10.9.0.4" is not a loopback address`}},
		{name: "bad entries", host: "127.0.0.1", allow: "allow_hosts: [\"http://x\", 127.0.0.2, \"db:5432\"]", upstream: "127.0.0.1", pro: "127.0.0.1",
			want: []string{`reach.yaml:2:15: allow_hosts: "http://x" is a URL`, `reach.yaml:2:27: allow_hosts: 127.0.0.2 is loopback`, `reach.yaml:2:38: allow_hosts: "db:5432" has a port`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.ReplaceAll(reachScenario, "%[1]s", tt.host)
			src = strings.NewReplacer("%[2]s", tt.allow, "%[3]s", tt.upstream, "%[4]s", tt.pro).Replace(src)
			_, err := Parse("reach.yaml", []byte(src), Options{AllowHosts: splitFlag(tt.flag), SkipBodyFiles: tt.skipBodies})
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("loaded; want refused")
			}
			if !IsInvalid(err) {
				t.Errorf("IsInvalid(%v) = false", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("errors lack %s:\n%v", w, err)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(err.Error(), n) {
					t.Errorf("errors have one at %s, reported at its allow_hosts entry already:\n%v", n, err)
				}
			}
		})
	}
}

// splitFlag splits comma lists, as --allow-host does.
func splitFlag(flags []string) []string {
	var out []string
	for _, f := range flags {
		out = append(out, strings.Split(f, ",")...)
	}
	return out
}

// TestReachHoldsOnlyWhatBothName: Reach allows the hosts the scenario
// lists and the command consents to, and not a host only the command
// names.
func TestReachHoldsOnlyWhatBothName(t *testing.T) {
	src := strings.ReplaceAll(reachScenario, "%[1]s", "10.9.0.2")
	src = strings.NewReplacer("%[2]s", "allow_hosts: [10.9.0.2, 10.7.0.0/16]", "%[3]s", "127.0.0.1", "%[4]s", "10.7.0.9").Replace(src)
	sc, err := Parse("reach.yaml", []byte(src), Options{AllowHosts: []string{"10.9.0.2", "10.7.0.0/16", "10.9.0.3"}})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{"10.9.0.2": true, "10.7.200.1": true, "10.9.0.3": false, "127.0.0.1": true} {
		if got := sc.Reach.AllowsHost(host); got != want {
			t.Errorf("Reach allows %s: %v, want %v", host, got, want)
		}
	}
	if err := CheckReach("http://10.9.0.3:1", sc.Reach); err == nil {
		t.Error("CheckReach allowed a host only the command names")
	}
	// A saved run loads without consent, and reaches nothing beyond
	// loopback with it.
	sc, err = Parse("reach.yaml", []byte(src), Options{SkipBodyFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Reach.AllowsHost("10.9.0.2") {
		t.Error("a scenario loaded with SkipBodyFiles reaches 10.9.0.2 with no consent")
	}
}

// TestStartedServicesStayOnLoopback: a service chaoskit starts listens on
// loopback whatever allow_hosts says.
func TestStartedServicesStayOnLoopback(t *testing.T) {
	src := `name: started
allow_hosts: [10.9.0.2]
target:
  command: {argv: [./svc]}
  url: http://10.9.0.2:{port}
load:
  rate: 10/s
  requests: [{path: /}]
phases:
  - name: p
    duration: 1s
`
	_, err := Parse("s.yaml", []byte(src), Options{AllowHosts: []string{"10.9.0.2"}})
	if err == nil || !strings.Contains(err.Error(), `s.yaml:5:8: "10.9.0.2" is not a loopback address (a service chaoskit starts listens on loopback`) {
		t.Errorf("err = %v", err)
	}
}

func TestSchemaHasAllowHosts(t *testing.T) {
	b, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"allow_hosts"`) {
		t.Error("the JSON Schema has no allow_hosts")
	}
}

// TestCatalogNotAskedOfAnUnreachableTarget: the failpoints of a running
// service the run may not reach are not asked for; the one error says
// what consent is missing.
func TestCatalogNotAskedOfAnUnreachableTarget(t *testing.T) {
	src := `name: s
allow_hosts: [10.99.0.2]
target:
  url: http://10.99.0.2:8080
  failpoints: http://10.99.0.2:7070
load:
  rate: 10/s
  requests: [{path: /}]
phases:
  - name: p
    duration: 1s
    faults:
      - point: store/query
        action: error
`
	asked := 0
	opts := Options{Catalog: func(Target, *reach.Policy) (*inject.Catalog, error) {
		asked++
		return nil, errors.New("asked")
	}}
	_, err := Parse("s.yaml", []byte(src), opts)
	if asked != 0 || err == nil || strings.Count(err.Error(), "s.yaml:") != 1 || !strings.Contains(err.Error(), "s.yaml:2:15: allow_hosts: 10.99.0.2 is not allowed by the command") {
		t.Errorf("catalog asked %d times; err = %v", asked, err)
	}
	opts.AllowHosts = []string{"10.99.0.2"}
	if _, err = Parse("s.yaml", []byte(src), opts); asked != 1 || err == nil || !strings.Contains(err.Error(), "cannot list the target's failpoints: asked") {
		t.Errorf("with consent: catalog asked %d times; err = %v", asked, err)
	}
}
