package scenarios

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// Scenario is one chaos experiment: a target, the load to drive at it, the
// phases with the faults each switches on, and the contracts that must hold.
// See docs/scenarios.md for every field.
type Scenario struct {
	Name        string     `yaml:"name"`
	Description string     `yaml:"description"`
	Target      Target     `yaml:"target"`
	Load        Load       `yaml:"load"`
	Phases      []Phase    `yaml:"phases"`
	Contracts   []Contract `yaml:"contracts"`
	// Classify sorts requests into classes for the contracts; Writes says
	// which requests are writes and how to read them back.
	Classify *Classify `yaml:"classify"`
	Writes   []Write   `yaml:"writes"`

	// File is where the scenario was loaded from (not part of the YAML).
	File string `yaml:"-"`
}

// Target says which service to attack.
type Target struct {
	// Demo starts this chaoskit binary's bundled demo service.
	Demo *DemoTarget `yaml:"demo"`
	// URL attacks a service that is already running; Failpoints is then its
	// control endpoint (the address it was given in GO_FAILPOINTS_HTTP).
	URL        string `yaml:"url"`
	Failpoints string `yaml:"failpoints"`
	// Hits is the path of the service's fault-hit report (inject.HitsHandler);
	// default /debug/chaoskit/faults.
	Hits string `yaml:"hits"`
	// Points lists the service's failpoints (full paths) when chaoskit cannot
	// scan its source.
	Points []string `yaml:"points"`
}

// DemoTarget starts `chaoskit demo serve` with Args.
type DemoTarget struct {
	Args []string `yaml:"args"`
}

// Load describes the traffic chaoskit drives at the target.
type Load struct {
	// Rate is requests per period: "200/s", "12/100ms", "50" (per second).
	Rate Rate `yaml:"rate"`
	// Timeout bounds each request; default 2s.
	Timeout Duration `yaml:"timeout"`
	// Workers is the initial number of concurrent senders; default 10.
	// MaxWorkers caps them; default 500.
	Workers    int `yaml:"workers"`
	MaxWorkers int `yaml:"max_workers"`
	// Requests are the requests to send, used round-robin.
	Requests []RequestSpec `yaml:"requests"`
}

// RequestSpec is one kind of request. Path may hold a range template such as
// {1..50}, which expands to one request per value.
type RequestSpec struct {
	Method  string            `yaml:"method"`
	Path    string            `yaml:"path"`
	Headers map[string]string `yaml:"headers"`
	Body    string            `yaml:"body"`
}

// Phase is a stretch of the run with its own set of faults.
type Phase struct {
	Name     string   `yaml:"name"`
	Duration Duration `yaml:"duration"`
	Faults   []Fault  `yaml:"faults"`
}

// Fault is a fault switched on for a whole phase.
type Fault struct {
	// Point names the failpoint: its full path or a unique suffix of it.
	Point string `yaml:"point"`
	// Action is timeout, error, latency, panic, status or term.
	Action      string  `yaml:"action"`
	Value       string  `yaml:"value"`
	Probability float64 `yaml:"probability"`
	Count       int     `yaml:"count"`

	// Path is Point resolved against the target's failpoints, and Term the
	// failpoint term; both are filled in by validation.
	Path string `yaml:"-"`
	Term string `yaml:"-"`
}

// Duration is a time.Duration written as "500ms", "3s", "1m30s".
type Duration time.Duration

// UnmarshalYAML implements goccy/go-yaml's NodeUnmarshaler.
func (d *Duration) UnmarshalYAML(n ast.Node) error {
	s, ok := scalar(n)
	if !ok {
		return errAt(n, "write it like 500ms or 3s", "a duration must be a plain value")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		hint := "write it like 500ms or 3s"
		if _, e := strconv.ParseFloat(s, 64); e == nil {
			hint = fmt.Sprintf("add a unit: %ss or %sms", s, s)
		}
		return errAt(n, hint, "bad duration %q", s)
	}
	if v < 0 {
		return errAt(n, "", "duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Rate is a request rate: Freq requests every Per.
type Rate struct {
	Freq int
	Per  time.Duration
}

// PerSecond returns the rate in requests per second.
func (r Rate) PerSecond() float64 {
	if r.Per <= 0 {
		return 0
	}
	return float64(r.Freq) / r.Per.Seconds()
}

func (r Rate) String() string {
	if r.Per == time.Second {
		return fmt.Sprintf("%d/s", r.Freq)
	}
	return fmt.Sprintf("%d/%s", r.Freq, r.Per)
}

// ParseRate parses "200/s", "12/100ms", "3/1m" or a bare "50" (per second).
func ParseRate(s string) (Rate, error) {
	num, per, found := strings.Cut(strings.TrimSpace(s), "/")
	freq, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || freq <= 0 {
		return Rate{}, fmt.Errorf("bad rate %q: the count must be a positive integer", s)
	}
	r := Rate{Freq: freq, Per: time.Second}
	if found {
		per = strings.TrimSpace(per)
		switch per {
		case "s":
			r.Per = time.Second
		case "ms":
			r.Per = time.Millisecond
		case "m", "min":
			r.Per = time.Minute
		default:
			if len(per) > 0 && per[0] >= 'a' && per[0] <= 'z' {
				per = "1" + per
			}
			d, err := time.ParseDuration(per)
			if err != nil || d <= 0 {
				return Rate{}, fmt.Errorf("bad rate %q: the period must be a duration such as s, 100ms or 1m", s)
			}
			r.Per = d
		}
	}
	return r, nil
}

// UnmarshalYAML implements goccy/go-yaml's NodeUnmarshaler.
func (r *Rate) UnmarshalYAML(n ast.Node) error {
	s, ok := scalar(n)
	if !ok {
		return errAt(n, "write it like 200/s or 12/100ms", "a rate must be a plain value")
	}
	v, err := ParseRate(s)
	if err != nil {
		return errAt(n, "write it like 200/s or 12/100ms", "%v", err)
	}
	*r = v
	return nil
}

// scalar returns the text of a scalar node.
func scalar(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.IntegerNode, *ast.FloatNode:
		return v.GetToken().Value, true
	case *ast.LiteralNode:
		return v.Value.Value, true
	}
	return "", false
}
