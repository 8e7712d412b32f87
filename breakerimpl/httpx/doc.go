// Package httpx adapts breakerimpl's policies to net/http, so that they
// compose the way the standard library does: server middleware is a
// func(http.Handler) http.Handler, client policies are http.RoundTrippers.
//
// Server side, Breaker guards a route: while the route's breaker is open
// (or half-open with every probe slot taken, or throttling), requests are
// answered at once with 503 Service Unavailable and a Retry-After header,
// and the handler does not run. Responses with a 5xx status and panics
// count as failures.
//
//	mux.Handle("GET /products/{id}", httpx.Breaker(productsBreaker, httpx.ServerOptions{})(productsHandler))
//
// Client side, BreakerTransport guards calls to a dependency: transport
// errors, timeouts and 5xx responses count as failures; while the breaker
// refuses calls, RoundTrip fails at once with the breaker's error, or
// serves the Fallback response if one is set.
//
//	client := &http.Client{Transport: &httpx.BreakerTransport{Breaker: cb}}
//
// Every degradation decision these make (a refusal by a breaker, bulkhead,
// limiter or shedder, a retry, a timeout, a fallback served) goes to
// package decision: to the decision log (decisionlog) and, when package
// otelx (a module of its own) is linked in, as an OpenTelemetry event on
// the request's current span. otelx also carries the trace context across
// the hop: otelx.Middleware on the server, otelx.Transport on the client.
package httpx
