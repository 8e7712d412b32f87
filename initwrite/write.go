package initwrite

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/initscan"
	"github.com/chaoskit/chaoskit/internal/outdir"
)

// Config says where init writes and whether it runs the baseline.
type Config struct {
	Options
	// Out is the scenario file to write; the service's executable goes to
	// bin/ beside it.
	Out string
	// ReportDir receives the baseline's run directories.
	ReportDir string
	// Build makes the executable (go build); Baseline also runs it.
	Build, Baseline bool
	// Progress receives what init does, and the runs' progress.
	Progress io.Writer
}

// discoverPhase is how long the run that reads listings for path values
// lasts.
const discoverPhase = time.Second

// Write drafts the scenario for svc, builds the service, runs the
// baseline when asked, and writes the scenario to cfg.Out.
func Write(ctx context.Context, svc *initscan.Service, cfg Config) (*Draft, error) {
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	dir := filepath.Dir(cfg.Out)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfg.Binary = "./bin/" + svc.Name
	d := New(svc, cfg.Options)
	d.Fill(nil)
	if cfg.Baseline && !svc.Main {
		return nil, fmt.Errorf("%s is package %s, not a main package: --baseline builds and runs the service, so give its main package", svc.Package, lastName(svc.Package))
	}
	if cfg.Build && svc.Main {
		bin := filepath.Join(dir, "bin", svc.Name)
		fmt.Fprintf(cfg.Progress, "init: go build -o %s %s\n", bin, svc.Package)
		if err := build(ctx, svc.Dir, svc.Package, bin); err != nil {
			return nil, err
		}
	}
	if cfg.Baseline {
		if err := d.baseline(ctx, cfg); err != nil {
			return nil, err
		}
	}
	if err := writeFile(cfg.Out, d.YAML()); err != nil {
		return nil, err
	}
	if err := validate(cfg.Out); err != nil {
		return d, fmt.Errorf("the scenario init wrote does not load (a bug of init): %w", err)
	}
	return d, nil
}

func lastName(p string) string { return p[strings.LastIndex(p, "/")+1:] }

// build makes the service's executable.
func build(ctx context.Context, dir, pkg, out string) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", abs, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v: %s", pkg, err, strings.TrimSpace(string(b)))
	}
	return nil
}

// baseline runs the scenario's no-fault phase: first, when routes have
// path parameters, a short run of their listings to read example values
// from, then the baseline itself, whose figures the contracts are
// proposed from.
func (d *Draft) baseline(ctx context.Context, cfg Config) error {
	// The runs' scenario files are named absolutely: the target's argv
	// is relative to the scenario's directory.
	dir, err := filepath.Abs(filepath.Dir(cfg.Out))
	if err != nil {
		return err
	}
	run := func(suffix string, yaml []byte) (string, error) {
		path := filepath.Join(dir, "."+d.Name+"-"+suffix+".yaml")
		if err := writeFile(path, yaml); err != nil {
			return "", err
		}
		defer os.Remove(path)
		return runFile(ctx, path, cfg.ReportDir)
	}
	var listings []*LoadRoute
	for _, lr := range d.Routes {
		if len(lr.Route.Params) > 0 && lr.Listing != nil && !slices.Contains(listings, lr.Listing) {
			listings = append(listings, lr.Listing)
		}
	}
	if len(listings) > 0 {
		fmt.Fprintf(cfg.Progress, "init: reading example path values from %s (%s)\n", routeList(listings), discoverPhase)
		runDir, err := run("discover", d.render(&Only{Name: d.Name + "-discover", Routes: listings, Phase: discoverPhase}))
		if err != nil {
			return err
		}
		bodies := map[string]string{}
		if err := eachRequest(runDir, func(r request) {
			if r.status/100 == 2 && r.body != "" && len(r.tags) > 0 && bodies[r.tags[0]] == "" {
				bodies[r.tags[0]] = r.body
			}
		}); err != nil {
			return err
		}
		values := map[*LoadRoute]map[string][]string{}
		for _, lr := range d.Routes {
			if lr.Listing == nil || len(lr.Route.Params) == 0 {
				continue
			}
			values[lr] = map[string][]string{}
			for _, p := range lr.Route.Params {
				if vs := valuesFrom([]byte(bodies[lr.Listing.Tag]), p); len(vs) > 0 {
					values[lr][p] = vs
					d.Discovered = append(d.Discovered, fmt.Sprintf("{%s} of GET %s: %s, read from the first answer of GET %s", p, lr.Route.Path,
						strings.Join(vs, ", "), lr.Listing.Route.Path))
					fmt.Fprintf(cfg.Progress, "init:   %s\n", d.Discovered[len(d.Discovered)-1])
				}
			}
		}
		d.Fill(values)
	}
	fmt.Fprintf(cfg.Progress, "init: running the baseline, no fault, %s at %d/s\n", d.Opts.Phase, d.Rate())
	runDir, err := run(baselinePhase, d.render(&Only{Name: d.Name + "-" + baselinePhase}))
	if err != nil {
		return err
	}
	m := &Measurement{RunDir: runDir, When: time.Now(), Routes: map[string]*RouteStats{}}
	if err := eachRequest(runDir, func(r request) {
		if r.phase == baselinePhase && len(r.tags) > 0 {
			m.add(r.tags[0], r.status, r.latency)
		}
	}); err != nil {
		return err
	}
	for _, lr := range d.Routes {
		if st := m.Routes[lr.Tag]; st != nil {
			fmt.Fprintf(cfg.Progress, "init:   GET %-30s %4d requests, %s errors, p99 %s\n", lr.Route.Path, st.Count, pct(st.ErrorShare()), st.P99().Round(10*time.Microsecond))
		} else {
			fmt.Fprintf(cfg.Progress, "init:   GET %-30s no request recorded: no contract proposed\n", lr.Route.Path)
		}
	}
	fmt.Fprintf(cfg.Progress, "init: run directory %s\n", runDir)
	d.Propose(m)
	return d.checkOnBaseline(dir, runDir)
}

func routeList(rs []*LoadRoute) string {
	var out []string
	for _, r := range rs {
		out = append(out, "GET "+r.Route.Path)
	}
	return strings.Join(out, ", ")
}

// checkOnBaseline judges every band on the baseline phase itself and
// drops those that do not pass there: init never proposes a contract its
// own baseline fails.
func (d *Draft) checkOnBaseline(dir, runDir string) error {
	var b strings.Builder
	b.Write(d.render(&Only{Name: d.Name + "-" + baselinePhase}))
	b.WriteString("contracts:\n")
	for i, p := range d.Proposals {
		if !p.Bands {
			continue
		}
		fmt.Fprintf(&b, "  - name: %q\n    phase: %s\n", fmt.Sprint(i), baselinePhase)
		if p.Settle > 0 {
			fmt.Fprintf(&b, "    settle: %s\n", p.Settle)
		}
		if p.Tag != "" {
			fmt.Fprintf(&b, "    requests: {tag: %s}\n", p.Tag)
		}
		b.WriteString("    expect:\n")
		for _, e := range p.Expect {
			fmt.Fprintf(&b, "      - %s\n", e)
		}
	}
	verdicts, err := judge(filepath.Join(dir, "."+d.Name+"-check.yaml"), []byte(b.String()), runDir)
	if err != nil {
		return fmt.Errorf("judging the proposals on the baseline: %w", err)
	}
	kept := d.Proposals[:0]
	for i, p := range d.Proposals {
		v, judged := verdicts[fmt.Sprint(i)]
		if !p.Bands || !judged || v.outcome == "pass" {
			kept = append(kept, p)
			continue
		}
		why := v.measured + " against " + v.expected
		if v.reason != "" {
			why = v.reason
		}
		d.Dropped = append(d.Dropped, fmt.Sprintf("%q: on the baseline itself it is %s (%s)", p.Name, v.outcome, why))
	}
	d.Proposals = kept
	return nil
}

// writeFile replaces path through a temporary file renamed within its
// directory, so a symlink planted at path is replaced, never written through.
func writeFile(path string, data []byte) error {
	return outdir.WriteFile(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
