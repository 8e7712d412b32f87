package hedge_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/hedge"
)

// The first replica hangs; the hedge sent after 5 ms answers, and the
// first is cancelled.
func ExampleExecute() {
	h := hedge.New(hedge.Settings{Name: "profile", Delay: 5 * time.Millisecond})
	var attempt atomic.Int32
	v, err := hedge.Execute(context.Background(), h, func(ctx context.Context) (string, error) {
		if attempt.Add(1) == 1 {
			<-ctx.Done() // a slow replica, cancelled once the hedge wins
			return "", ctx.Err()
		}
		return "profile from replica 2", nil
	})
	s := h.Snapshot()
	fmt.Println(v, err, s.Hedges, s.HedgeWins)
	// Output: profile from replica 2 <nil> 1 1
}
