package contract

import (
	"fmt"
	"strings"

	"github.com/chaoskit/chaoskit/timeline"
)

// chainLosses reads the ChainStop events of the window's phase (every
// phase, for a whole-run window) that lost a step the window's filter
// selects: steps of request chains that were never sent because a value
// they (or a step before them) needed could not be captured. They are no requests, so no figure counts
// them; but a window that lost them did not see what the scenario meant
// it to see, and a pass over what was left would be a guess. It returns
// how many steps were lost and their sentences. A path filter is matched
// against the step's path as written, placeholders and all.
func (w *window) chainLosses() (lost int, why []string) {
	for _, e := range w.tl.Events {
		if e.Kind != timeline.ChainStop || (w.spec.Phase != "" && e.Phase != w.spec.Phase) {
			continue
		}
		if !w.selectsLost(e.Data[timeline.ChainLost]) {
			continue
		}
		n, _ := timeline.Number(e.Data[timeline.ChainCount])
		if n <= 0 {
			continue
		}
		lost += int(n)
		msg := e.Message
		if w.spec.Phase == "" && e.Phase != "" {
			msg += " in phase " + e.Phase
		}
		why = append(why, msg)
	}
	return lost, why
}

// selectsLost says whether the window's filter selects one of the steps
// a ChainStop event lost.
func (w *window) selectsLost(lost any) bool {
	steps, _ := lost.([]any)
	for _, st := range steps {
		m, _ := st.(map[string]any)
		template, _ := m[timeline.ChainTemplate].(string)
		method, _ := m[timeline.ChainMethod].(string)
		path, _ := m[timeline.ChainPath].(string)
		var tags []string
		switch ts := m[timeline.ChainTags].(type) {
		case []string:
			tags = ts
		case []any:
			for _, t := range ts {
				if s, ok := t.(string); ok {
					tags = append(tags, s)
				}
			}
		}
		if w.spec.Requests.Match(method, path, tags, template) {
			return true
		}
	}
	return false
}

// chainNote says what a window lost to stopped chains.
func chainNote(lost int, why []string) string {
	return fmt.Sprintf("the window's selection lost %d requests that stopped chains never sent (they are in no figure: the window judges the requests that were sent): %s", lost, strings.Join(why, "; "))
}
