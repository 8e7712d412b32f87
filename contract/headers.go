package contract

import "github.com/expr-lang/expr/ast"

// Headers names the response headers the classification reads: the
// source, age and breaker headers it names and every header a rule matches
// on, in canonical form. A run must record them for the classification to
// see them.
func (c *Classification) Headers() []string {
	var out []string
	for _, h := range []string{c.AgeHeader, c.BreakerHeader} {
		if h != "" {
			out = append(out, canonical(h))
		}
	}
	if c.SourceJSON == "" && c.SourceHeader != "" {
		out = append(out, canonical(c.SourceHeader))
	}
	for _, r := range c.Rules {
		for name := range r.Header {
			out = append(out, canonical(name))
		}
	}
	return out
}

// Headers names the response headers the contract's predicates read with
// header("Name"). all is true when a predicate computes a header name (a
// call with anything but a string literal), so only recording every header
// would serve it.
func (c *Contract) Headers() (names []string, all bool) {
	for _, ch := range c.checks {
		q, ok := ch.(*quantifiedCheck)
		if !ok {
			continue
		}
		node := q.predicate.Node()
		ast.Walk(&node, visitor(func(n ast.Node) {
			call, ok := n.(*ast.CallNode)
			if !ok {
				return
			}
			if id, ok := call.Callee.(*ast.IdentifierNode); !ok || id.Value != "header" {
				return
			}
			if len(call.Arguments) == 1 {
				if s, ok := call.Arguments[0].(*ast.StringNode); ok {
					names = append(names, canonical(s.Value))
					return
				}
			}
			all = true
		}))
	}
	return names, all
}

type visitor func(ast.Node)

func (v visitor) Visit(n *ast.Node) { v(*n) }
