package plan

import (
	"regexp"
	"sort"
	"strconv"
)

// portRef matches the {port} and {port:NAME} placeholders of a target.
var portRef = regexp.MustCompile(`\{port(?::([A-Za-z0-9_-]+))?\}`)

// PortNames returns the distinct port placeholders the target uses, sorted;
// {port} is named "".
func (t Target) PortNames() []string {
	seen := map[string]bool{}
	for _, s := range t.templated() {
		for _, m := range portRef.FindAllStringSubmatch(s, -1) {
			seen[m[1]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (t Target) templated() []string {
	out := []string{t.URL, t.Failpoints}
	if t.GRPC != nil {
		out = append(out, t.GRPC.Address)
	}
	if t.Command != nil {
		out = append(out, t.Command.Argv...)
		for _, v := range t.Command.Env {
			out = append(out, v)
		}
	}
	return out
}

// FillPorts replaces every port placeholder in s with its port.
func FillPorts(s string, ports map[string]int) string {
	return portRef.ReplaceAllStringFunc(s, func(m string) string {
		name := portRef.FindStringSubmatch(m)[1]
		if p, ok := ports[name]; ok {
			return strconv.Itoa(p)
		}
		return m
	})
}

// WithPorts returns a copy of the target with its placeholders filled.
func (t Target) WithPorts(ports map[string]int) Target {
	t.URL = FillPorts(t.URL, ports)
	t.Failpoints = FillPorts(t.Failpoints, ports)
	if t.GRPC != nil {
		g := *t.GRPC
		g.Address = FillPorts(g.Address, ports)
		t.GRPC = &g
	}
	if t.Command != nil {
		c := *t.Command
		c.Argv = make([]string, len(t.Command.Argv))
		for i, a := range t.Command.Argv {
			c.Argv[i] = FillPorts(a, ports)
		}
		c.Env = make(map[string]string, len(t.Command.Env))
		for k, v := range t.Command.Env {
			c.Env[k] = FillPorts(v, ports)
		}
		t.Command = &c
	}
	return t
}
