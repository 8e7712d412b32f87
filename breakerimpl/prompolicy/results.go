package prompolicy

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/chaoskit/chaoskit/breakerimpl"
)

// Results counts the results of Pipelines by who served them and why the
// primary did not: pipeline_results_total{pipeline,source,reason}, with
// source "primary" (reason "none") when the primary served, the fallback's
// name when a fallback did, and "none" when the call failed. It is a
// prometheus.Collector; register it. Safe for concurrent use.
type Results struct {
	vec *prometheus.CounterVec
}

// NewResults returns a Results whose metric name is prefixed by namespace
// (none if empty).
func NewResults(namespace string) *Results {
	return &Results{vec: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Subsystem: "pipeline",
		Name:      "results_total",
		Help:      "Results of calls through a pipeline, by source (primary, a fallback's name, none when the call failed) and the reason the primary did not serve.",
	}, []string{"pipeline", "source", "reason"})}
}

// Add counts one result of pipeline: served by source (SourcePrimary, a
// fallback's name, or "none" for a failed call), with reason.
func (r *Results) Add(pipeline, source string, reason breakerimpl.Reason) {
	r.vec.WithLabelValues(pipeline, source, reason.String()).Inc()
}

// Observe counts what a Pipeline's Execute returned.
func Observe[T any](r *Results, pipeline string, res breakerimpl.Result[T], err error) {
	source := res.Source
	if err != nil {
		source = "none"
	}
	r.Add(pipeline, source, res.Reason)
}

// Describe implements prometheus.Collector.
func (r *Results) Describe(ch chan<- *prometheus.Desc) { r.vec.Describe(ch) }

// Collect implements prometheus.Collector.
func (r *Results) Collect(ch chan<- prometheus.Metric) { r.vec.Collect(ch) }
