package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/demo"
	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/scenarios"
)

// targetCatalog returns the failpoints a scenario's target really has: the
// demo's own list, the target's declared points, a scan of its source, or
// the list a running service reports on its hits endpoint.
func targetCatalog(t scenarios.Target) (*inject.Catalog, error) {
	switch {
	case t.Demo != nil:
		return inject.NewCatalog(demo.Failpoints()...), nil
	case len(t.Points) > 0:
		return inject.NewCatalog(t.Points...), nil
	case t.Source != "":
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cat, err := inject.ScanSource(ctx, t.Source, t.Packages...)
		if err != nil {
			return nil, fmt.Errorf("scanning %s: %v", t.Source, err)
		}
		if len(cat.Points) == 0 {
			return nil, fmt.Errorf("no failpoint markers found in %s (check target.source and target.packages)", t.Source)
		}
		return cat, nil
	case t.Command != nil:
		return nil, fmt.Errorf("chaoskit starts this target only when it runs; add source: (the service's module directory) or points: so fault points can be checked")
	case t.URL != "":
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		url := strings.TrimRight(t.URL, "/") + t.Hits
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("asked %s: %v; list them under target.points or give target.source", url, err)
		}
		defer resp.Body.Close()
		var rep inject.HitsReport
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&rep) != nil || len(rep.Points) == 0 {
			return nil, fmt.Errorf("%s does not list the service's failpoints; list them under target.points or give target.source", url)
		}
		return inject.NewCatalog(rep.Points...), nil
	}
	return nil, fmt.Errorf("target names no service")
}
