// Command truthrun runs the truth corpus (testdata/truth, see its README):
// small services with a scenario each and the right verdict of every
// contract written down, for the correct service and for broken variants.
// It builds every program of the corpus once, runs each case's variants
// with chaoskit, several at a time, compares every contract's verdict with
// the one written down, and prints "N of M verdicts right". It exits 1 when
// a verdict is wrong, missing or not written down, 2 on a bad case file.
// `make truth` runs it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"
)

// truthFile is a case's truth.yaml.
type truthFile struct {
	// About says in a sentence what the case shows.
	About string `yaml:"about"`
	// Variants maps a variant's name, passed to the scenario as
	// --var variant=NAME, to what it runs with and the verdicts it must get.
	Variants map[string]variant `yaml:"variants"`
}

type variant struct {
	// Vars are more --var values for this variant.
	Vars map[string]string `yaml:"vars"`
	// Verdicts maps every contract of the scenario to pass, fail or
	// inconclusive.
	Verdicts map[string]string `yaml:"verdicts"`
}

// job is one run: a case's scenario with one variant.
type job struct {
	caseName, dir, variant string
	v                      variant
}

// outcome is what one run got right and wrong.
type outcome struct {
	job
	right, total int
	problems     []string
	elapsed      time.Duration
}

type report struct {
	Scenarios []struct {
		Name      string `json:"name"`
		Error     string `json:"error"`
		Contracts []struct {
			Name     string `json:"name"`
			Verdict  string `json:"verdict"`
			Measured string `json:"measured"`
			Expected string `json:"expected"`
			Reason   string `json:"reason"`
		} `json:"contracts"`
	} `json:"scenarios"`
}

func main() {
	chaoskit := flag.String("chaoskit", "bin/chaoskit", "the chaoskit executable")
	dir := flag.String("dir", "testdata/truth", "the corpus")
	out := flag.String("out", "out/truth", "where the programs are built and the runs written")
	parallel := flag.Int("parallel", 2, "runs at a time")
	only := flag.String("run", "", "run only the cases whose name matches this regexp")
	timeout := flag.Duration("timeout", 2*time.Minute, "longest one run may take")
	flag.Parse()
	if err := run(*chaoskit, *dir, *out, *only, *parallel, *timeout); err != nil {
		var code exitCode
		if errors.As(err, &code) {
			os.Exit(int(code))
		}
		fmt.Fprintln(os.Stderr, "truth:", err)
		os.Exit(2)
	}
}

type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit %d", int(c)) }

func run(chaoskit, dir, out, only string, parallel int, timeout time.Duration) error {
	var filter *regexp.Regexp
	if only != "" {
		var err error
		if filter, err = regexp.Compile(only); err != nil {
			return fmt.Errorf("-run: %w", err)
		}
	}
	chaoskit, err := filepath.Abs(chaoskit)
	if err != nil {
		return err
	}
	bin, err := filepath.Abs(filepath.Join(out, "bin"))
	if err != nil {
		return err
	}
	jobs, programs, err := load(dir, filter)
	if err != nil {
		return err
	}
	if len(jobs) == 0 {
		return fmt.Errorf("no case in %s matches %q", dir, only)
	}
	start := time.Now()
	// Every program once, in one go build: the services and the
	// dependencies they share.
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	build := exec.Command("go", append([]string{"build", "-o", bin + "/"}, programs...)...)
	if b, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, b)
	}
	fmt.Printf("truth: built %d programs in %.1fs; %d runs, %d at a time\n", len(programs), time.Since(start).Seconds(), len(jobs), parallel)

	results := make([]outcome, len(jobs))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			o := runJob(j, chaoskit, bin, filepath.Join(out, "runs", j.caseName, j.variant), timeout)
			results[i] = o
			mu.Lock()
			defer mu.Unlock()
			status := "ok  "
			if o.right != o.total {
				status = "FAIL"
			}
			fmt.Printf("%s %s/%s: %d of %d right (%.1fs)\n", status, j.caseName, j.variant, o.right, o.total, o.elapsed.Seconds())
			for _, p := range o.problems {
				fmt.Printf("     %s\n", p)
			}
		}()
	}
	wg.Wait()
	right, total := 0, 0
	for _, o := range results {
		right += o.right
		total += o.total
	}
	fmt.Printf("%d of %d verdicts right (%d cases, %d runs, %.1fs)\n", right, total, countCases(jobs), len(jobs), time.Since(start).Seconds())
	if right != total {
		for _, o := range results {
			for _, p := range o.problems {
				fmt.Printf("wrong: %s/%s: %s\n", o.caseName, o.variant, p)
			}
		}
		return exitCode(1)
	}
	return nil
}

func countCases(jobs []job) int {
	seen := map[string]bool{}
	for _, j := range jobs {
		seen[j.caseName] = true
	}
	return len(seen)
}

// load reads every case of the corpus: a directory holding truth.yaml.
// Directories whose name starts with "_" hold programs the cases share.
// It returns the runs and the package paths of every program to build.
func load(dir string, filter *regexp.Regexp) ([]job, []string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var jobs []job
	var programs []string
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		caseDir := filepath.Join(dir, e.Name())
		if gos, _ := filepath.Glob(filepath.Join(caseDir, "*.go")); len(gos) > 0 {
			programs = append(programs, "./"+filepath.ToSlash(caseDir))
		}
		if strings.HasPrefix(e.Name(), "_") {
			continue
		}
		if filter != nil && !filter.MatchString(e.Name()) {
			continue
		}
		file := filepath.Join(caseDir, "truth.yaml")
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, nil, fmt.Errorf("case %s: %w (every case writes down its verdicts there)", e.Name(), err)
		}
		var t truthFile
		if err := yaml.UnmarshalWithOptions(b, &t, yaml.Strict()); err != nil {
			return nil, nil, fmt.Errorf("%s: %s", file, yaml.FormatError(err, false, true))
		}
		if len(t.Variants) == 0 {
			return nil, nil, fmt.Errorf("%s: no variants: write down at least the correct service's verdicts and a broken one's", file)
		}
		if _, err := os.Stat(filepath.Join(caseDir, "scenario.yaml")); err != nil {
			return nil, nil, fmt.Errorf("case %s: %w", e.Name(), err)
		}
		names := make([]string, 0, len(t.Variants))
		for name := range t.Variants {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			v := t.Variants[name]
			for c, verdict := range v.Verdicts {
				switch verdict {
				case "pass", "fail", "inconclusive":
				default:
					return nil, nil, fmt.Errorf("%s: variant %s: contract %q: verdict %q is none of pass, fail, inconclusive", file, name, c, verdict)
				}
			}
			jobs = append(jobs, job{caseName: e.Name(), dir: caseDir, variant: name, v: v})
		}
	}
	return jobs, programs, nil
}

// runJob runs one variant and compares its verdicts with those written
// down. Every contract written down or reported counts once.
func runJob(j job, chaoskit, bin, reportDir string, timeout time.Duration) (o outcome) {
	o = outcome{job: j, total: len(j.v.Verdicts)}
	start := time.Now()
	defer func() { o.elapsed = time.Since(start) }()
	args := []string{"run", filepath.Join(j.dir, "scenario.yaml"), "--report-dir", reportDir, "--format", "json", "-q",
		"--var", "bin=" + bin, "--var", "variant=" + j.variant}
	keys := make([]string, 0, len(j.v.Vars))
	for k := range j.v.Vars {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		args = append(args, "--var", k+"="+j.v.Vars[k])
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, chaoskit, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		o.problems = append(o.problems, fmt.Sprintf("chaoskit %s: %v: %s", strings.Join(args, " "), err, tail(stderr.String())))
		return o
	}
	b, err := os.ReadFile(filepath.Join(reportDir, "report.json"))
	if err != nil {
		o.problems = append(o.problems, err.Error())
		return o
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil || len(r.Scenarios) != 1 {
		o.problems = append(o.problems, fmt.Sprintf("%s: not one scenario's report (%v)", reportDir, err))
		return o
	}
	sc := r.Scenarios[0]
	if sc.Error != "" {
		o.problems = append(o.problems, "the run broke: "+sc.Error)
	}
	seen := map[string]bool{}
	for _, c := range sc.Contracts {
		seen[c.Name] = true
		want, ok := j.v.Verdicts[c.Name]
		if !ok {
			o.total++
			o.problems = append(o.problems, fmt.Sprintf("%q: %s, but its verdict is not written down in truth.yaml", c.Name, c.Verdict))
			continue
		}
		if want != c.Verdict {
			why := fmt.Sprintf("measured %s, expected %s", c.Measured, c.Expected)
			if c.Reason != "" {
				why += "; " + c.Reason
			}
			o.problems = append(o.problems, fmt.Sprintf("%q: want %s, got %s (%s)", c.Name, want, c.Verdict, why))
			continue
		}
		o.right++
	}
	for name := range j.v.Verdicts {
		if !seen[name] {
			o.problems = append(o.problems, fmt.Sprintf("%q: written down, but the scenario has no such contract", name))
		}
	}
	slices.Sort(o.problems)
	return o
}

// tail is the last lines of a command's stderr.
func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}
