package timeout_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

func ExampleExecute() {
	tm := timeout.New(timeout.Settings{Name: "recommendations", Timeout: 20 * time.Millisecond})
	slow := func(ctx context.Context) (string, error) {
		select {
		case <-time.After(time.Second): // the dependency hangs
			return "late", nil
		case <-ctx.Done(): // cancelled at the deadline, not abandoned
			return "", ctx.Err()
		}
	}
	_, err := timeout.Execute(context.Background(), tm, slow)
	fmt.Println(errors.Is(err, timeout.ErrTimeout), breakerimpl.ReasonOf(err), tm.Snapshot().TimedOut)
	// Output: true timeout 1
}

// The two-step form, for work that cannot be wrapped in a function.
func ExampleTimeout_Begin() {
	tm := timeout.New(timeout.Settings{Timeout: time.Second})
	ctx := tm.Begin(context.Background())
	_, hasDeadline := ctx.Deadline()
	var err error // ... the work, with ctx ...
	err = tm.End(ctx, err)
	fmt.Println(hasDeadline, err)
	// Output: true <nil>
}
