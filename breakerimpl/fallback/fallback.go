// Package fallback holds the strategies that serve a value when the primary
// cannot: Static (a default value), Cache (the last known good value for
// the request, with its age), Func (a simplified computation) and Chain
// (several of these, tried in order).
//
// Each is a breakerimpl.Fallback: put it in a breakerimpl.Pipeline, whose
// Result says which source served and why. Every strategy has a Name, the
// Source a Result reports; an empty Name means the strategy's kind
// ("static", "cache", "func").
package fallback

import (
	"context"
	"errors"

	"github.com/chaoskit/chaoskit/breakerimpl"
)

// Static serves the same value for every key.
type Static[K comparable, T any] struct {
	Name  string // Source of its results; "static" if empty
	Value T
}

// Remember does nothing: a static value never changes.
func (Static[K, T]) Remember(K, T) {}

// Recover serves Value.
func (s Static[K, T]) Recover(context.Context, K, error) (breakerimpl.Result[T], error) {
	return breakerimpl.Result[T]{Value: s.Value, Source: nameOr(s.Name, "static")}, nil
}

// Func serves what Fn computes: a simplified answer (a cheaper query, a
// default built from the key, another replica). Fn gets the primary's error.
type Func[K comparable, T any] struct {
	Name string // Source of its results; "func" if empty
	Fn   func(ctx context.Context, key K, err error) (T, error)
}

// Remember does nothing.
func (Func[K, T]) Remember(K, T) {}

// Recover calls Fn.
func (f Func[K, T]) Recover(ctx context.Context, key K, err error) (breakerimpl.Result[T], error) {
	v, ferr := f.Fn(ctx, key, err)
	if ferr != nil {
		return breakerimpl.Result[T]{}, ferr
	}
	return breakerimpl.Result[T]{Value: v, Source: nameOr(f.Name, "func")}, nil
}

// Chain tries its fallbacks in order and serves the first that succeeds.
// Every fallback in it is given the primary's values to Remember. When all
// fail, their errors are returned joined, in order.
type Chain[K comparable, T any] []breakerimpl.Fallback[K, T]

// Remember passes v on to every fallback in the chain.
func (c Chain[K, T]) Remember(key K, v T) {
	for _, f := range c {
		f.Remember(key, v)
	}
}

// Recover tries each fallback in turn.
func (c Chain[K, T]) Recover(ctx context.Context, key K, err error) (breakerimpl.Result[T], error) {
	var errs []error
	for _, f := range c {
		res, ferr := f.Recover(ctx, key, err)
		if ferr == nil {
			return res, nil
		}
		errs = append(errs, ferr)
	}
	if len(errs) == 0 {
		return breakerimpl.Result[T]{}, errEmptyChain
	}
	return breakerimpl.Result[T]{}, errors.Join(errs...)
}

var errEmptyChain = errors.New("fallback: empty chain")

func nameOr(name, kind string) string {
	if name == "" {
		return kind
	}
	return name
}
