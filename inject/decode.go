package inject

import (
	"context"
	"strings"
)

// Decode reads the fault a marker received, without carrying it out or
// counting a hit: for a marker body that carries some fault out its own way
// (say, burning CPU for a latency fault instead of sleeping). point is the
// failpoint path the value names ("" if none). ok is false for a value that
// carries no chaoskit fault: nil (a sleep term) or a raw term's own value.
// Call CountHit when the body acts on the fault. A fault with a Match is
// decoded whatever the request: use DecodeContext to apply only those
// meant for the request in ctx.
func Decode(v any) (point string, f Fault, ok bool) {
	s, isString := v.(string)
	if !isString {
		return "", Fault{}, false
	}
	if p, body, found := strings.Cut(s, pointSep); found && !strings.HasPrefix(p, prefixWhen) {
		point, s = p, body
	}
	_, s = cutWhen(s)
	switch {
	case s == valueTimeout:
		return point, Fault{Action: Timeout}, true
	case strings.HasPrefix(s, prefixError):
		return point, Fault{Action: Error, Value: strings.TrimPrefix(s, prefixError)}, true
	case strings.HasPrefix(s, prefixDelay):
		return point, Fault{Action: Latency, Value: strings.TrimPrefix(s, prefixDelay)}, true
	case strings.HasPrefix(s, prefixPanic):
		return point, Fault{Action: Panic, Value: strings.TrimPrefix(s, prefixPanic)}, true
	case strings.HasPrefix(s, prefixStatus):
		return point, Fault{Action: Status, Value: strings.TrimPrefix(s, prefixStatus)}, true
	}
	return point, Fault{}, false
}

// CountHit counts a hit for the failpoint v names, as Fire does; for marker
// bodies that use Decode and carry the fault out themselves.
func CountHit(v any) {
	if s, ok := v.(string); ok {
		if point, _, found := strings.Cut(s, pointSep); found {
			countHit(point)
			return
		}
	}
	countHit(callerPackage())
}

// DecodeContext is Decode for the request in ctx: ok is false, too, for a
// fault whose Match the request does not carry (see Middleware).
func DecodeContext(ctx context.Context, v any) (point string, f Fault, ok bool) {
	if s, isString := v.(string); isString {
		body := s
		if p, b, found := strings.Cut(s, pointSep); found && !strings.HasPrefix(p, prefixWhen) {
			body = b
		}
		if match, _ := cutWhen(body); match != "" && !matches(ctx, match) {
			return "", Fault{}, false
		}
	}
	return Decode(v)
}
