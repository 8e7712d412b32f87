// Package store is the diff fixture's data layer, with the one failpoint
// marker the diff scenario switches (markers stay out of package main).
package store

import (
	"context"
	"fmt"

	"github.com/pingcap/failpoint"

	"github.com/chaoskit/chaoskit/inject"
)

// Get reads the name of item id; the query failpoint stands for the
// database failing.
func Get(ctx context.Context, id int) (string, error) {
	failpoint.Inject("query", func(v failpoint.Value) {
		if err := inject.Fire(ctx, v); err != nil {
			failpoint.Return("", fmt.Errorf("query: %w", err))
		}
	})
	return fmt.Sprintf("item-%d", id), nil
}
