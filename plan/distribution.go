package plan

import (
	"errors"
	"strings"

	"github.com/chaoskit/chaoskit/inject/dist"
	"github.com/chaoskit/chaoskit/internal/suggest"
)

// MaxHistogramFile bounds a histogram file: 256 buckets of a line each fit
// in a few kilobytes.
const MaxHistogramFile = 64 << 10

// unreadHistogram stands for a histogram whose file was not read.
const unreadHistogram = "histogram/1ms=1"

// distSettings says which settings each distribution reads.
var distSettings = map[dist.Kind][]string{
	dist.Fixed:     {"value"},
	dist.Uniform:   {"min", "max"},
	dist.Normal:    {"mean", "stddev"},
	dist.LogNormal: {"median", "p99"},
	dist.Histogram: {"file"},
}

// compileDistribution checks the distribution written at at and returns
// it in package dist's text form, its histogram file read (relative to the
// scenario file, as data). Judging a saved run reads no file
// (Options.SkipBodyFiles), and sends no fault: a histogram is then
// unreadHistogram, which the fault's Term names by its file instead.
func (v *validator) compileDistribution(at string, d *Distribution) (string, bool) {
	kind := dist.Kind(d.Type)
	used, ok := distSettings[kind]
	if !ok {
		names := make([]string, len(dist.Kinds))
		for i, k := range dist.Kinds {
			names[i] = string(k)
		}
		hint := suggest.Hint(d.Type, names)
		if hint == "" || d.Type == "" {
			hint = "type: one of " + strings.Join(names, ", ")
		}
		v.errorf(at+".type", hint, "unknown distribution %q", d.Type)
		return "", false
	}
	set := map[string]bool{"value": d.Value != 0, "min": d.Min != 0, "max": d.Max != 0, "mean": d.Mean != 0,
		"stddev": d.Stddev != 0, "median": d.Median != 0, "p99": d.P99 != 0, "file": d.File != ""}
	for _, name := range []string{"value", "min", "max", "mean", "stddev", "median", "p99", "file"} {
		if set[name] && !contains(used, name) {
			v.errorf(at+"."+name, "a "+d.Type+" distribution takes "+strings.Join(used, " and "), "%s is not a setting of a %s distribution", name, d.Type)
			return "", false
		}
	}
	var dd dist.Dist
	switch kind {
	case dist.Fixed:
		dd = dist.Dist{Kind: kind, A: d.Value.D()}
	case dist.Uniform:
		dd = dist.Dist{Kind: kind, A: d.Min.D(), B: d.Max.D()}
	case dist.Normal:
		dd = dist.Dist{Kind: kind, A: d.Mean.D(), B: d.Stddev.D()}
	case dist.LogNormal:
		dd = dist.Dist{Kind: kind, A: d.Median.D(), B: d.P99.D()}
	case dist.Histogram:
		if d.File == "" {
			v.errorf(at, "file: a path relative to the scenario file, with lines such as \"10ms 90\"", "a histogram distribution needs its file")
			return "", false
		}
		if v.opts.SkipBodyFiles {
			return unreadHistogram, true
		}
		data, err := readBoundedScenario(v.path(d.File), MaxHistogramFile)
		if err != nil {
			hint, msg := "the path is relative to the scenario file", err.Error()
			var fe *fileError
			if errors.As(err, &fe) {
				hint = "a histogram file is a regular file of lines such as \"10ms 90\""
				if strings.Contains(fe.msg, "more than") {
					hint, msg = "merge buckets: at most 256 lines", "larger than 64 KiB"
				}
			}
			v.errorf(at+".file", hint, "cannot read histogram file %s: %s", d.File, msg)
			return "", false
		}
		if dd, err = dist.ParseHistogram(data); err != nil {
			v.errorf(at+".file", "one bucket a line: its upper bound and its weight, such as \"10ms 90\", bounds increasing", "histogram file %s: %v", d.File, err)
			return "", false
		}
		return dd.String(), true
	}
	if err := dd.Validate(); err != nil {
		var fe *dist.FieldError
		if errors.As(err, &fe) {
			v.errorf(at+"."+fe.Field, fe.Hint, "%s", fe.Problem)
		} else {
			v.errorf(at, "", "%v", err)
		}
		return "", false
	}
	return dd.String(), true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
