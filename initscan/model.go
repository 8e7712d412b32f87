// Package initscan reads a Go service's source (go/packages and its syntax
// trees; nothing of the service is run) and says what a scenario needs to
// know about it: the routes it serves, the dependencies it reaches and the
// flag or environment variable each address comes from, how it is told
// where to listen, its health route, the failpoint markers it already has
// and the resilience calls (breakerimpl and its peers) it makes. What it
// cannot infer it says, with the line of the service that stopped it.
//
// chaoskit init (package initwrite) turns a Service into a scenario.
package initscan

import (
	"fmt"

	"github.com/chaoskit/chaoskit/inject"
)

// Pos is a place in the service's source: File relative to the module's
// directory.
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

func (p Pos) String() string {
	if p.File == "" {
		return "?"
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// Service is what the scan found.
type Service struct {
	// Dir is the module's directory, Module its path, Package the import
	// path of the package scanned and Name its last element.
	Dir     string `json:"dir"`
	Module  string `json:"module"`
	Package string `json:"package"`
	Name    string `json:"name"`
	// Main says whether Package is a main package (a program init can build).
	Main bool `json:"main"`

	Routes []Route `json:"routes"`
	// Health is the route a readiness probe can use, when one is named
	// like one (/healthz, /health, /readyz, /livez, /ping).
	Health *Route         `json:"health,omitempty"`
	Deps   []Dependency   `json:"dependencies"`
	Listen *Listen        `json:"listen,omitempty"`
	Points []inject.Point `json:"failpoints"`
	// Resilience lists the calls into breakerimpl and its peers
	// (gobreaker, hystrix-go, failsafe-go, go-zero): what degrades.
	Resilience []Call `json:"resilience"`
	// Notes are what the scan could not infer, each with its place.
	Notes []Note `json:"notes"`
}

// Route is one route the service serves.
type Route struct {
	// Method is the HTTP method; empty means any.
	Method string `json:"method"`
	// Path is the route's path, path parameters written {name} (or
	// {name...} for a rest-of-path wildcard) whatever the router's syntax.
	Path string `json:"path"`
	// Params are the path parameters' names in order; Patterns their
	// regular expressions where the router gave one (gorilla/mux).
	Params   []string          `json:"params,omitempty"`
	Patterns map[string]string `json:"patterns,omitempty"`
	// Router is the package that registered it: net/http, chi, gin, echo,
	// gorilla/mux.
	Router string `json:"router"`
	Pos    Pos    `json:"pos"`
}

// Key is the route as "METHOD PATH" (method "*" for any).
func (r Route) Key() string {
	m := r.Method
	if m == "" {
		m = "*"
	}
	return m + " " + r.Path
}

// Readable says whether load may send GET to it.
func (r Route) Readable() bool { return r.Method == "" || r.Method == "GET" }

// Origin is where a setting's value comes from.
type Origin struct {
	// Kind is "flag", "env", "literal", "computed" (made at run time
	// from something init cannot follow) or "unset" (a field of the
	// service's own types that nothing sets: the code is not in use).
	Kind string `json:"kind"`
	// Name is the flag's or the variable's name; Value the flag's default
	// or the literal.
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
	Pos   Pos    `json:"pos"`
}

func (o *Origin) String() string {
	switch {
	case o == nil:
		return "nowhere known"
	case o.Kind == "flag":
		return fmt.Sprintf("flag --%s (%s)", o.Name, o.Pos)
	case o.Kind == "env":
		return fmt.Sprintf("env %s (%s)", o.Name, o.Pos)
	case o.Kind == "computed":
		return fmt.Sprintf("a value made at run time (%s)", o.Pos)
	default:
		return fmt.Sprintf("the literal %q (%s)", o.Value, o.Pos)
	}
}

// Configurable says whether the service takes the value from outside
// (a flag or an environment variable).
func (o *Origin) Configurable() bool { return o != nil && (o.Kind == "flag" || o.Kind == "env") }

// Dependency kinds.
const (
	Postgres = "postgres"
	MySQL    = "mysql"
	SQLite   = "sqlite"
	SQL      = "sql" // database/sql with a driver init does not know
	Redis    = "redis"
	GRPC     = "grpc"
	HTTP     = "http"
)

// Dependency is one thing the service connects to.
type Dependency struct {
	// Kind is one of the constants above.
	Kind string `json:"kind"`
	// Client is the package used: database/sql, pgx, go-redis, grpc,
	// net/http. Driver is database/sql's driver name.
	Client string `json:"client"`
	Driver string `json:"driver,omitempty"`
	// Origin is where the address comes from; Form what the value is: a
	// "dsn" (a URL such as postgres://...), an "addr" (host:port), a "url"
	// (http://host:port or redis://host:port) or a "path" (a file).
	Origin *Origin `json:"origin,omitempty"`
	Form   string  `json:"form"`
	Pos    Pos     `json:"pos"`
}

// Listen is how the service is told where to listen.
type Listen struct {
	Origin *Origin `json:"origin,omitempty"`
	// Form is "addr" (host:port) or "port" (the service adds the colon).
	Form string `json:"form"`
	// Call names the call that listens (http.ListenAndServe, ...).
	Call string `json:"call"`
	Pos  Pos    `json:"pos"`
}

// Call is one call into a resilience library.
type Call struct {
	Package string `json:"package"`
	Func    string `json:"func"`
	Pos     Pos    `json:"pos"`
}

// Note is something the scan could not infer, and where.
type Note struct {
	Pos Pos    `json:"pos"`
	Msg string `json:"msg"`
}

func (n Note) String() string { return n.Pos.String() + ": " + n.Msg }
