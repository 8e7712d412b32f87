package command_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/chaoskit/chaoskit/breakerimpl/command"
)

// The hystrix-go habit: configure a command by name, run it
// asynchronously, and read its error from a channel.
func ExampleGo() {
	command.ConfigureCommand("inventory", command.Config{MaxConcurrentRequests: 5, ErrorPercentThreshold: 25})
	errs := command.Go(context.Background(), "inventory", func(ctx context.Context) error {
		return errors.New("inventory service: 502")
	}, func(ctx context.Context, err error) error {
		fmt.Println("fallback:", err)
		return nil // handled: show the cached stock level
	})
	fmt.Println("error:", <-errs)
	// Output:
	// fallback: inventory service: 502
	// error: <nil>
}
