// Package plan reads scenario files (YAML), checks them with positions kept
// for every error (file:line:column, with a hint), and holds what a
// scenario says and what is derived from it once, when it loads: its
// target, dependencies, proxies, load, phases and faults, its contracts
// compiled (Contract.Compiled) and its classification (Classification),
// with the conventions of the target's profile (Profile) filled in. Nothing
// downstream compiles a contract again. The bundled scenario files
// themselves live in package scenarios; this package reads them like any
// other.
package plan
