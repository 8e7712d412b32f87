// Package plan reads scenario files (YAML), checks them with positions kept
// for every error (file:line:column, with a hint), and holds what a
// scenario says: its target, dependencies, proxies, load, phases and
// faults, and its contracts. The bundled scenario files themselves live in
// package scenarios; this package reads them like any other.
package plan
