// Package breakerit holds, in its subpackages, the tests of breakerimpl's
// packages that need a real server started by internal/testserver (Redis,
// Prometheus), one subpackage per package tested. They live in the main
// module because breakerimpl and its adapters are modules of their own, and
// internal/testserver would bring the CLI's module graph into theirs.
package breakerit
