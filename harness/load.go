package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/internal/reach"
	"github.com/chaoskit/chaoskit/internal/suggest"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/runner"
)

// LoadOptions returns the options scenarios load with: the failpoint
// catalog of each scenario's target (see catalog), the variables given,
// the rate scale (1 means none) and the hosts beyond loopback the command
// consents to (--allow-host; see plan.Options.AllowHosts).
func LoadOptions(vars map[string]string, rateScale float64, allowHosts []string) plan.Options {
	opts := plan.Options{Catalog: catalog, Vars: vars, AllowHosts: allowHosts}
	if rateScale != 1 {
		opts.RateScale = rateScale
	}
	return opts
}

// Load loads the scenarios named by paths (files, or directories of
// *.yaml), or the bundled ones.
func Load(paths []string, bundled bool, opts plan.Options) ([]*plan.Scenario, error) {
	switch {
	case bundled && len(paths) > 0:
		return nil, exitcode.New(exitcode.Invalid, "give scenario files or --bundled, not both")
	case bundled:
		return plan.Bundled(opts)
	case len(paths) == 0:
		return nil, exitcode.New(exitcode.Invalid, "no scenarios given: chaoskit run FILE|DIR... (or --bundled)")
	}
	return plan.LoadAll(paths, opts)
}

// Select keeps the scenarios only names, in their load order; a name no
// scenario has is an error with the nearest names.
func Select(scs []*plan.Scenario, only []string) ([]*plan.Scenario, error) {
	if len(only) == 0 {
		return scs, nil
	}
	want := map[string]bool{}
	for _, n := range only {
		want[n] = true
	}
	var out []*plan.Scenario
	var names []string
	for _, sc := range scs {
		names = append(names, sc.Name)
		if want[sc.Name] {
			out = append(out, sc)
			delete(want, sc.Name)
		}
	}
	for _, n := range only {
		if want[n] {
			return nil, exitcode.New(exitcode.Invalid, "--only %s: no scenario has that name (%s)", n, suggest.Hint(n, names))
		}
	}
	return out, nil
}

// catalog returns the failpoints a scenario's target really has: its
// profile's list (see plan.Profile), the target's declared points, a scan of its source, or
// the list a running service reports on its hits endpoint, asked only on
// loopback or a host allow allows.
func catalog(t plan.Target, allow *reach.Policy) (*inject.Catalog, error) {
	if p, ok := plan.ProfileOf(t); ok {
		return inject.NewCatalog(p.Failpoints...), nil
	}
	switch {
	case t.Demo != nil:
		return nil, fmt.Errorf("this chaoskit has no demo linked in (its profile package, demo/profile, registers it)")
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
		// The catalog request is control traffic like any other: loopback
		// and the allowed hosts only, no redirect followed.
		client := runner.ControlClient(3*time.Second, allow)
		defer client.CloseIdleConnections()
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("asked %s: %v; list them under target.points or give target.source", url, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 == 3 {
			return nil, fmt.Errorf("%s answered %s to %s, and chaoskit follows no redirects; give target.hits the service's own path, list the failpoints under target.points or give target.source", url, resp.Status, resp.Header.Get("Location"))
		}
		var rep inject.HitsReport
		// The same bound as the runner's read of the hit report.
		if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&rep) != nil || len(rep.Points) == 0 {
			return nil, fmt.Errorf("%s does not list the service's failpoints; list them under target.points or give target.source", url)
		}
		return inject.NewCatalog(rep.Points...), nil
	}
	return nil, fmt.Errorf("target names no service")
}
