package bench

import (
	"sort"
	"testing"
)

// peerCase is one library's implementation of a group's work.
type peerCase struct {
	lib   string
	bench func(b *testing.B)
}

// peerGroup is one kind of work (success path, open rejection, shedder, …)
// measured for every library that offers it. Files register their groups
// in init with registerPeers; order fixes where a group is printed.
type peerGroup struct {
	name  string
	order int
	cases []peerCase
}

var peerGroups []peerGroup

// registerPeers adds a group to BenchmarkPeers. Cases run in the order
// given, breakerimpl first by convention.
func registerPeers(order int, name string, cases ...peerCase) {
	peerGroups = append(peerGroups, peerGroup{name: name, order: order, cases: cases})
}

// BenchmarkPeers runs every registered group as BenchmarkPeers/<group>/<lib>.
func BenchmarkPeers(b *testing.B) {
	groups := append([]peerGroup(nil), peerGroups...)
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].order < groups[j].order })
	for _, g := range groups {
		b.Run(g.name, func(b *testing.B) {
			for _, c := range g.cases {
				b.Run(c.lib, c.bench)
			}
		})
	}
}
