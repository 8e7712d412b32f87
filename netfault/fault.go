package netfault

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/inject/dist"
	"github.com/chaoskit/chaoskit/internal/suggest"
)

// Kind is what a fault does to the traffic through a proxy.
type Kind string

// The kinds of fault. All but Down are toxiproxy toxics, with toxiproxy's
// names and settings.
const (
	// Latency delays each chunk of data by Latency, give or take up to
	// Jitter (uniformly), or by a delay drawn from Distribution.
	Latency Kind = "latency"
	// Bandwidth caps the data passed at Rate kilobytes a second.
	Bandwidth Kind = "bandwidth"
	// SlowClose delays the close of a connection by Delay once the other
	// side has closed it.
	SlowClose Kind = "slow_close"
	// Timeout stops forwarding: data is held back (dropped, never
	// delivered), and after Timeout the connection is closed; with a zero
	// Timeout it stays open, silent, until the fault is switched off, when
	// the connections it held are closed.
	Timeout Kind = "timeout"
	// ResetPeer resets connections (TCP RST, seen as ECONNRESET): when
	// data comes, after Timeout (zero: at once). Connections opened while
	// the fault is on are reset; those already open when it was switched
	// on are closed without RST (toxiproxy sets SO_LINGER when a
	// connection opens).
	ResetPeer Kind = "reset_peer"
	// Slicer cuts data into slices of AverageSize bytes, give or take
	// SizeVariation, Delay apart.
	Slicer Kind = "slicer"
	// LimitData closes a connection once Bytes bytes have passed in the
	// fault's direction.
	LimitData Kind = "limit_data"
	// Down takes the proxy away: its connections are closed and new ones
	// refused until the fault is switched off. It has no direction and no
	// probability.
	Down Kind = "down"
)

// Kinds lists every kind, in the order the documentation gives them.
var Kinds = []Kind{Latency, Bandwidth, SlowClose, Timeout, ResetPeer, Slicer, LimitData, Down}

// Direction is which way the data a fault acts on flows.
type Direction string

const (
	// Downstream: from the upstream (the dependency) to the client. It is
	// the default, as in toxiproxy.
	Downstream Direction = "downstream"
	// Upstream: from the client to the upstream.
	Upstream Direction = "upstream"
)

// Fault is one network fault on one proxy: plain data, as a scenario
// gives it. Which fields a kind uses is said by each Kind; the others must
// be zero. Durations are whole milliseconds (toxiproxy's unit), except
// Slicer's Delay, in whole microseconds.
type Fault struct {
	// Proxy names the proxy the fault is on.
	Proxy string `json:"proxy" yaml:"proxy"`
	// Kind is what the fault does.
	Kind Kind `json:"kind" yaml:"kind"`
	// Direction is the data it acts on; empty means Downstream. Down has
	// none.
	Direction Direction `json:"direction,omitempty" yaml:"direction,omitempty"`
	// Probability is the share of connections the fault acts on, in
	// (0, 1]; zero means 1, every connection. toxiproxy draws it for each
	// connection when the fault reaches it (as it opens, or as the fault is
	// switched on), not for each chunk of data.
	Probability float64 `json:"probability,omitempty" yaml:"probability,omitempty"`

	// Latency and Jitter, or Distribution: Latency. Distribution is a
	// delay distribution in package dist's text form
	// (lognormal/20ms/200ms), drawn for each chunk by a toxic of chaoskit's
	// registered with toxiproxy; Latency and Jitter run toxiproxy's own.
	Latency      time.Duration `json:"latency,omitempty" yaml:"latency,omitempty"`
	Jitter       time.Duration `json:"jitter,omitempty" yaml:"jitter,omitempty"`
	Distribution string        `json:"distribution,omitempty" yaml:"distribution,omitempty"`
	// Rate is Bandwidth's cap, in kilobytes a second.
	Rate int64 `json:"rate,omitempty" yaml:"rate,omitempty"`
	// Delay: SlowClose's delay of the close, Slicer's delay between slices.
	Delay time.Duration `json:"delay,omitempty" yaml:"delay,omitempty"`
	// Timeout: when Timeout closes the connections it holds (zero: never),
	// when ResetPeer resets a connection after data comes (zero: at once).
	Timeout time.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// Bytes is how much LimitData lets through.
	Bytes int64 `json:"bytes,omitempty" yaml:"bytes,omitempty"`
	// AverageSize and SizeVariation are Slicer's slices, in bytes.
	AverageSize   int `json:"average_size,omitempty" yaml:"average_size,omitempty"`
	SizeVariation int `json:"size_variation,omitempty" yaml:"size_variation,omitempty"`
}

// FieldError is a Fault or a Proxy that cannot work: Field is the name of
// the setting at fault as a scenario spells it (so a loader can point at
// its line and column), Problem what is wrong, and Fix what would be
// right.
type FieldError struct {
	Field   string
	Problem string
	Fix     string
}

func (e *FieldError) Error() string {
	if e.Fix == "" {
		return e.Field + ": " + e.Problem
	}
	return e.Field + ": " + e.Problem + " (" + e.Fix + ")"
}

func fieldError(field, fix, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...), Fix: fix}
}

// uses says which settings each kind reads.
var uses = map[Kind][]string{
	Latency:   {"latency", "jitter", "distribution"},
	Bandwidth: {"rate"},
	SlowClose: {"delay"},
	Timeout:   {"timeout"},
	ResetPeer: {"timeout"},
	Slicer:    {"average_size", "size_variation", "delay"},
	LimitData: {"bytes"},
	Down:      {},
}

// set lists the kind-specific settings f gives (non-zero).
func (f Fault) set() []string {
	var s []string
	for name, v := range map[string]bool{
		"latency": f.Latency != 0, "jitter": f.Jitter != 0, "rate": f.Rate != 0,
		"delay": f.Delay != 0, "timeout": f.Timeout != 0, "bytes": f.Bytes != 0,
		"average_size": f.AverageSize != 0, "size_variation": f.SizeVariation != 0,
		"distribution": f.Distribution != "",
	} {
		if v {
			s = append(s, name)
		}
	}
	slices.Sort(s)
	return s
}

// Validate reports the first setting of f that cannot work, as a
// *FieldError, or nil.
func (f Fault) Validate() error {
	if f.Proxy == "" {
		return fieldError("proxy", "name one of the scenario's proxies", "a fault needs the proxy it is on")
	}
	used, ok := uses[f.Kind]
	if !ok {
		fix := "one of " + kindList()
		if near, ok := suggest.Closest(string(f.Kind), kindNames()); ok {
			fix = fmt.Sprintf("did you mean %q?", near)
		}
		return fieldError("kind", fix, "unknown network fault kind %q", f.Kind)
	}
	for _, s := range f.set() {
		if !slices.Contains(used, s) {
			fix := "remove it"
			if len(used) > 0 {
				fix = "remove it; a " + string(f.Kind) + " fault takes " + strings.Join(used, ", ")
			}
			return fieldError(s, fix, "%s is not a setting of a %s fault", s, f.Kind)
		}
	}
	switch f.Direction {
	case "", Downstream, Upstream:
	default:
		return fieldError("direction", "upstream or downstream", "unknown direction %q", f.Direction)
	}
	if !(f.Probability >= 0 && f.Probability <= 1) { // NaN too
		return fieldError("probability", "a share of connections between 0 and 1, such as 0.5", "probability %v is out of range", f.Probability)
	}
	if f.Kind == Down {
		if f.Direction != "" {
			return fieldError("direction", "remove it", "a down proxy has no direction")
		}
		if f.Probability != 0 && f.Probability != 1 {
			return fieldError("probability", "remove it", "a proxy is down for every connection; probability %v cannot apply", f.Probability)
		}
	}
	switch f.Kind {
	case Latency:
		if f.Distribution != "" {
			if f.Latency != 0 || f.Jitter != 0 {
				return fieldError("distribution", "give latency and jitter, or a distribution", "a latency fault takes a distribution or latency and jitter, not both")
			}
			if _, err := dist.Parse(f.Distribution); err != nil {
				return fieldError("distribution", "such as lognormal/20ms/200ms (see package dist)", "%v", err)
			}
			return nil
		}
		if err := wholeMillis("latency", f.Latency, true); err != nil {
			return err
		}
		if err := wholeMillis("jitter", f.Jitter, false); err != nil {
			return err
		}
		if f.Jitter > f.Latency {
			return fieldError("jitter", "at most the latency, "+f.Latency.String(), "jitter %v is above the latency, which would make some delays negative", f.Jitter)
		}
	case Bandwidth:
		if f.Rate <= 0 {
			return fieldError("rate", "kilobytes a second, such as rate: 100", "a bandwidth fault needs a rate above 0, not %d", f.Rate)
		}
	case SlowClose:
		return wholeMillis("delay", f.Delay, true)
	case Timeout, ResetPeer:
		return wholeMillis("timeout", f.Timeout, false)
	case Slicer:
		if f.AverageSize <= 0 {
			return fieldError("average_size", "bytes, such as average_size: 64", "a slicer needs an average_size above 0, not %d", f.AverageSize)
		}
		if f.SizeVariation < 0 || f.SizeVariation >= f.AverageSize {
			return fieldError("size_variation", fmt.Sprintf("from 0 to %d, below average_size", f.AverageSize-1), "size_variation %d is out of range", f.SizeVariation)
		}
		if f.Delay < 0 || f.Delay%time.Microsecond != 0 {
			return fieldError("delay", "whole microseconds, such as 10µs", "slicer delay %v cannot be used", f.Delay)
		}
	case LimitData:
		if f.Bytes <= 0 {
			return fieldError("bytes", "such as bytes: 1024", "a limit_data fault needs bytes above 0, not %d", f.Bytes)
		}
	}
	return nil
}

// wholeMillis checks a duration toxiproxy takes in whole milliseconds.
func wholeMillis(field string, d time.Duration, required bool) error {
	switch {
	case d < 0:
		return fieldError(field, "0 or more, such as 300ms", "%s %v is negative", field, d)
	case required && d == 0:
		return fieldError(field, "such as "+field+": 300ms", "%s must be above 0", field)
	case d%time.Millisecond != 0:
		return fieldError(field, fmt.Sprintf("%v or %v", d.Truncate(time.Millisecond), d.Truncate(time.Millisecond)+time.Millisecond),
			"%s %v is not whole milliseconds, which toxiproxy counts in", field, d)
	}
	return nil
}

func kindNames() []string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return names
}

func kindList() string { return strings.Join(kindNames(), ", ") }

// direction returns f's direction, Downstream when unset.
func (f Fault) direction() Direction {
	if f.Direction == "" {
		return Downstream
	}
	return f.Direction
}

// toxicName is f's name among its proxy's toxics: one fault per kind and
// direction on a proxy.
func (f Fault) toxicName() string { return string(f.Kind) + "_" + string(f.direction()) }

// String says what f does, as a report shows it: "proxy postgres latency
// 300ms ±50ms", with the direction when upstream and the share of
// connections when not all.
func (f Fault) String() string {
	var b strings.Builder
	b.WriteString("proxy " + f.Proxy + " " + string(f.Kind))
	switch f.Kind {
	case Latency:
		if f.Distribution != "" {
			if d, err := dist.Parse(f.Distribution); err == nil {
				b.WriteString(" " + d.Describe())
			} else {
				b.WriteString(" " + f.Distribution)
			}
			break
		}
		b.WriteString(" " + f.Latency.String())
		if f.Jitter > 0 {
			b.WriteString(" ±" + f.Jitter.String())
		}
	case Bandwidth:
		b.WriteString(" " + strconv.FormatInt(f.Rate, 10) + "KB/s")
	case SlowClose:
		b.WriteString(" " + f.Delay.String())
	case Timeout:
		if f.Timeout > 0 {
			b.WriteString(" (data held, closed after " + f.Timeout.String() + ")")
		} else {
			b.WriteString(" (data held)")
		}
	case ResetPeer:
		if f.Timeout > 0 {
			b.WriteString(" after " + f.Timeout.String())
		}
	case Slicer:
		b.WriteString(" " + strconv.Itoa(f.AverageSize) + "B")
		if f.SizeVariation > 0 {
			b.WriteString(" ±" + strconv.Itoa(f.SizeVariation) + "B")
		}
		if f.Delay > 0 {
			b.WriteString(" every " + f.Delay.String())
		}
	case LimitData:
		b.WriteString(" " + strconv.FormatInt(f.Bytes, 10) + "B")
	}
	if f.Direction == Upstream {
		b.WriteString(" upstream")
	}
	if f.Probability > 0 && f.Probability < 1 {
		b.WriteString(" on " + strconv.FormatFloat(f.Probability*100, 'g', 4, 64) + "% of connections")
	}
	return b.String()
}

// attributes returns f's settings as toxiproxy's attributes.
func (f Fault) attributes() map[string]any {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	switch f.Kind {
	case Latency:
		return map[string]any{"latency": ms(f.Latency), "jitter": ms(f.Jitter)}
	case Bandwidth:
		return map[string]any{"rate": f.Rate}
	case SlowClose:
		return map[string]any{"delay": ms(f.Delay)}
	case Timeout, ResetPeer:
		return map[string]any{"timeout": ms(f.Timeout)}
	case Slicer:
		return map[string]any{"average_size": f.AverageSize, "size_variation": f.SizeVariation, "delay": f.Delay.Microseconds()}
	case LimitData:
		return map[string]any{"bytes": f.Bytes}
	}
	return nil
}
