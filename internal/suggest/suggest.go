// Package suggest holds chaoskit's one "did you mean" rule: the nearest of
// the names a user could have meant, by Levenshtein distance
// (inject.Distance, the one edit distance of the project), when it is
// near enough to be a typo.
package suggest

import (
	"fmt"
	"strings"

	"github.com/chaoskit/chaoskit/inject"
)

// Closest returns the choice nearest to s (case folded), if one is within
// max(2, len(s)/3) edits, near enough to be what s meant.
func Closest(s string, choices []string) (string, bool) {
	best, bestD := "", 1<<30
	for _, c := range choices {
		if d := inject.Distance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best, best != "" && bestD <= max(2, len(s)/3)
}

// Hint returns "did you mean X?" for the closest of choices to s, or the
// list of choices when none is close ("" when there are none).
func Hint(s string, choices []string) string {
	if best, ok := Closest(s, choices); ok {
		return fmt.Sprintf("did you mean %q?", best)
	}
	if len(choices) == 0 {
		return ""
	}
	return "choose one of " + strings.Join(choices, ", ")
}
