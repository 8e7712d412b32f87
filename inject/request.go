package inject

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// A fault can be meant for some requests only: a scenario sends a header
// (X-Tenant: b) or a W3C baggage entry (baggage: tenant=b) on those, and
// the fault's term names it (Fault.Match). The service hands each
// request's headers down in its context, with Middleware for net/http or
// WithRequestHeaders from a gRPC interceptor, and calls Fire with that
// context: Fire then carries out the fault only for a request that
// matches, and for any other does nothing and counts no hit.

// requestKey is the context key of a request's headers.
type requestKey struct{}

// WithRequestHeaders returns ctx carrying h, the headers of the request
// being served, for Fire to match a fault's Match against. A gRPC server
// passes its incoming metadata (metadata.MD is a map of the same shape):
//
//	func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
//		md, _ := metadata.FromIncomingContext(ctx)
//		return next(inject.WithRequestHeaders(ctx, http.Header(md)), req)
//	}
func WithRequestHeaders(ctx context.Context, h http.Header) context.Context {
	return context.WithValue(ctx, requestKey{}, h)
}

// Middleware puts each request's headers in its context
// (WithRequestHeaders), so that a fault with a Match fires only for the
// requests that carry what it names. It costs one context value a request.
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(WithRequestHeaders(r.Context(), r.Header)))
	})
}

// prefixWhen starts the part of a marker's value that restricts the fault
// to requests: when:NAME=VALUE&..., query-escaped, before the action.
const prefixWhen = "when:"

// encodeMatch writes m as the when part of a value (names sorted).
func encodeMatch(m map[string]string) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(n) + "=" + url.QueryEscape(m[n]))
	}
	return b.String()
}

// cutWhen splits a value's when part (the encoded match) from its body;
// match is "" when the value has none.
func cutWhen(s string) (match, body string) {
	if !strings.HasPrefix(s, prefixWhen) {
		return "", s
	}
	match, body, _ = strings.Cut(strings.TrimPrefix(s, prefixWhen), pointSep)
	return match, body
}

// matches says whether the request ctx carries matches the encoded match:
// every name with its value, as a header or as a W3C baggage entry. A ctx
// without request headers matches nothing: a fault meant for some requests
// never fires where the service did not hand the request down.
func matches(ctx context.Context, match string) bool {
	h, _ := ctx.Value(requestKey{}).(http.Header)
	if h == nil {
		return false
	}
	q, err := url.ParseQuery(match)
	if err != nil {
		return false
	}
	for name, want := range q {
		if len(want) != 1 || !carries(h, name, want[0]) {
			return false
		}
	}
	return true
}

// carries says whether h holds header name with value want (names in any
// case, as gRPC metadata writes them in lower case), or a baggage entry
// name=want.
func carries(h http.Header, name, want string) bool {
	for k, vals := range h {
		if strings.EqualFold(k, name) {
			for _, v := range vals {
				if v == want {
					return true
				}
			}
		}
	}
	for k, vals := range h {
		if !strings.EqualFold(k, "baggage") {
			continue
		}
		for _, v := range vals {
			for _, member := range strings.Split(v, ",") {
				kv, _, _ := strings.Cut(member, ";") // properties
				key, val, ok := strings.Cut(kv, "=")
				if !ok || !strings.EqualFold(strings.TrimSpace(key), name) {
					continue
				}
				if dec, err := url.PathUnescape(strings.TrimSpace(val)); err == nil && dec == want {
					return true
				}
			}
		}
	}
	return false
}
