package point

import (
	"slices"
	"testing"
)

func TestNearFirstListsTheNamedPackageFirst(t *testing.T) {
	paths := []string{"m/cache/get", "m/recommend/call", "m/search/burn", "m/store/probe", "m/store/productQuery", "m/storefront/x"}
	got := nearFirst(paths, "store/nosuch")
	want := []string{"m/store/probe", "m/store/productQuery", "m/cache/get", "m/recommend/call", "m/search/burn", "m/storefront/x"}
	if !slices.Equal(got, want) {
		t.Errorf("nearFirst = %q, want %q", got, want)
	}
	if got := nearFirst(paths, "nosuch"); !slices.Equal(got, paths) {
		t.Errorf("nearFirst without a package reordered: %q", got)
	}
}
