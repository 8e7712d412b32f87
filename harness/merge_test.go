package harness

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/timeline"
)

// TestMergeRefusesWhatIsNotOneRun: each refusal is exit 2 with what to do.
func TestMergeRefusesWhatIsNotOneRun(t *testing.T) {
	tests := []struct {
		name   string
		shards []string // Meta.Shard of each run; every saved run switches a fault
		want   string
	}{
		{"one directory", []string{"1/2"}, "at least two shards"},
		{"a shard twice", []string{"1/2", "1/2"}, "give each shard once"},
		{"two splits", []string{"1/2", "2/3"}, "merge the shards of one split"},
		{"two runs switched faults", []string{"1/2", "2/2"}, "only shard 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			var dirs []string
			for i, sh := range tt.shards {
				d := filepath.Join(root, "run"+string(rune('a'+i)))
				saveRunWith(t, d, timeline.Meta{Shard: sh}, true)
				dirs = append(dirs, d)
			}
			_, err := Merge(dirs, RejudgeOptions{ReportDir: filepath.Join(root, "merged")})
			if err == nil || !strings.Contains(err.Error(), tt.want) || exitcode.Of(err) != exitcode.Invalid {
				t.Fatalf("Merge: %v (exit %d), want exit 2 saying %q", err, exitcode.Of(err), tt.want)
			}
		})
	}
}
