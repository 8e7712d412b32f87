package reload_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/reload"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
)

// Register the live policies by name, then watch the file that tunes
// them; a bad edit is refused with its line and column.
func Example() {
	db := circuitbreaker.New(circuitbreaker.Settings{Name: "db"})
	recs := retry.New(retry.Settings{Name: "recommendations"})
	var targets reload.Targets
	targets.AddBreaker(db)
	targets.AddRetry("recommendations", recs)

	dir, _ := os.MkdirTemp("", "policies")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "policies.yaml")
	os.WriteFile(path, []byte(`
breakers:
  db:
    consecutive_failures: 5
    open_duration: 2s
retries:
  recommendations:
    max_retries: 2
    base_delay: 50ms
    max_delay: 1s
    jitter: 1
`), 0o644)

	w, err := reload.Watch(path, &targets, reload.WatchSettings{Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	fmt.Println(db.Settings().Rule, db.Settings().OpenDuration, recs.Settings().MaxAttempts, recs.Settings().Backoff)

	// What Watch logs, and keeps the settings for, when an edit is bad:
	bad := []byte("breakers:\n  db:\n    open_duration: soon\n")
	_, err = reload.Parse("policies.yaml", bad)
	fmt.Println(err)
	// Output:
	// {5} 2s 3 50ms
	// policies.yaml:3:20: open_duration "soon": want a duration such as 250ms or 2s
}
