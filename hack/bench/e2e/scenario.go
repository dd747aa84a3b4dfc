package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The scenarios, in the order they run.
const (
	// scenarioOriginal is the Mirror workload in an otherwise empty cluster.
	scenarioOriginal = "original"
	// scenarioFill is the same workload in a cluster filled with objects
	// the operator watches but never copies (see fill.go).
	scenarioFill = "fill"
	// scenarioNoisy is quiet tenants changing their sources on a fixed
	// schedule while another tenant floods the operator (see noisy.go).
	scenarioNoisy = "noisy"
	// scenarioMemory is each operator under a real memory limit in a
	// cluster filled with many objects (see memory.go). It needs root.
	scenarioMemory = "memory"
)

var scenarios = []string{scenarioOriginal, scenarioFill, scenarioNoisy, scenarioMemory}

// defaultScenarios run when -scenarios is not given: all but the memory
// scenario, which needs root and makes cgroups.
var defaultScenarios = []string{scenarioOriginal, scenarioFill, scenarioNoisy}

// parseScenarios parses -scenarios: a comma-separated list of scenarios,
// which run in the order of scenarios whatever the order given.
func parseScenarios(list string) ([]string, error) {
	var out []string
	for s := range strings.SplitSeq(list, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(scenarios, s) {
			return nil, fmt.Errorf("-scenarios: unknown scenario %q (known: %s)", s, strings.Join(scenarios, ", "))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return slices.Index(scenarios, a) - slices.Index(scenarios, b) })
	return out, nil
}

// scenarioImpls returns the implementations of impls that run in scenario
// s: the bare client is not an operator with tenants, so not in noisy.
// The memory scenario compares opkit's operator with controller-runtime's
// two alone; the ConfigMap-only one runs in no other.
func scenarioImpls(s string, impls []string) []string {
	switch s {
	case scenarioNoisy:
		return slices.DeleteFunc(slices.Clone(impls), func(i string) bool { return i == bare || i == crCM })
	case scenarioMemory:
		return slices.DeleteFunc(slices.Clone(impls), func(i string) bool { return i != opkit && i != cr && i != crCM })
	}
	return slices.DeleteFunc(slices.Clone(impls), func(i string) bool { return i == crCM })
}

// ofScenario returns the runs of scenario s.
func ofScenario(runs []runResult, s string) []runResult {
	var out []runResult
	for _, r := range runs {
		if r.scenario() == s {
			out = append(out, r)
		}
	}
	return out
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// fillFigures are the rows of the fill scenario's table.
func fillFigures(runs []runResult) []figure {
	fs := []figure{
		{name: "time to ready (s)", value: func(r runResult) float64 { return r.ReadySeconds }, crTarget: 1, operatorsOnly: true},
		{name: "heap after sync (MiB)", value: func(r runResult) float64 { return mib(r.HeapAfterSyncBytes) }, crTarget: 0.4, operatorsOnly: true},
		{name: "peak RSS (MiB)", value: func(r runResult) float64 { return mib(r.PeakRSSBytes) }, crTarget: 0.5, operatorsOnly: true},
		{name: "CPU (s)", value: func(r runResult) float64 { return r.CPUSeconds }, crTarget: 0.6, operatorsOnly: true},
		{name: "wall, create phase (s)", value: func(r runResult) float64 { return r.CreateSeconds }, crTarget: 1},
		{name: "wall, update phase (s)", value: func(r runResult) float64 { return r.UpdateSeconds }, crTarget: 1},
	}
	fs = append(fs, apiServerCPUFigures(runs, false)...)
	fs = append(fs, figure{name: "API requests", value: runResult.totalRequests})
	return append(fs, requestFigures(runs)...)
}

const fillFooter = "Ratios are opkit's median / the peer's. Heap after sync is go_memstats_heap_inuse_bytes on the " +
	"process's /metrics as soon as /readyz passed, no GC forced. The bare client has no cache: wall per phase only."

// noisyResult is the figures of one run of the noisy-neighbour scenario.
type noisyResult struct {
	// QuietFlood and QuietFloor are the latencies in seconds of every quiet
	// change: from just before its update was sent until the driver saw
	// the last of its tenant's copies follow; during the flood and, as the
	// floor, with no flood.
	QuietFlood []float64 `json:"quietFlood"`
	QuietFloor []float64 `json:"quietFloor"`
	// QuietFloodIssued is how many quiet changes the open-loop schedule
	// issued during the flood, QuietFloodIssuingSeconds for how long it
	// issued them: the offered quiet load, the same rate for every
	// implementation. Runs written before the schedule was open-loop lack
	// both.
	QuietFloodIssued         int     `json:"quietFloodIssued,omitempty"`
	QuietFloodIssuingSeconds float64 `json:"quietFloodIssuingSeconds,omitempty"`
	// FloodCreateSeconds is from the flood's first create until all its
	// copies exist; FloodBurstSeconds from its first source update until
	// every copy holds its source's last version.
	FloodCreateSeconds float64 `json:"floodCreateSeconds"`
	FloodBurstSeconds  float64 `json:"floodBurstSeconds"`
}

// percentile returns the p-th percentile (0 < p ≤ 100) of vs by the
// nearest-rank method: the smallest value at least p% of vs are at or
// below. It returns 0 for no values.
func percentile(vs []float64, p float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(vs))
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// over returns how many of vs exceed limit.
func over(vs []float64, limit float64) float64 {
	n := 0
	for _, v := range vs {
		if v > limit {
			n++
		}
	}
	return float64(n)
}

// noisyValue returns f of r's noisy figures, or 0 for a run without.
func noisyValue(f func(*noisyResult) float64) func(runResult) float64 {
	return func(r runResult) float64 {
		if r.Noisy == nil {
			return 0
		}
		return f(r.Noisy)
	}
}

func latencyFigures(when string, lat func(*noisyResult) []float64, p99Target float64) []figure {
	return []figure{
		{name: "quiet change, " + when + ", median (s)", value: noisyValue(func(n *noisyResult) float64 { return percentile(lat(n), 50) }), operatorsOnly: true},
		{name: "quiet change, " + when + ", p99 (s)", value: noisyValue(func(n *noisyResult) float64 { return percentile(lat(n), 99) }), crTarget: p99Target, operatorsOnly: true},
		{name: "quiet change, " + when + ", max (s)", value: noisyValue(func(n *noisyResult) float64 { return percentile(lat(n), 100) }), operatorsOnly: true},
		{name: "quiet changes, " + when + ", over 1 s", value: noisyValue(func(n *noisyResult) float64 { return over(lat(n), 1) }), operatorsOnly: true},
		{name: "quiet changes, " + when, value: noisyValue(func(n *noisyResult) float64 { return float64(len(lat(n))) }), operatorsOnly: true},
	}
}

// quietFloodIssued is how many quiet changes were issued during the
// flood; for runs written before it was recorded, how many were measured
// (the same count while every change converged).
func quietFloodIssued(n *noisyResult) float64 {
	if n.QuietFloodIssued == 0 {
		return float64(len(n.QuietFlood))
	}
	return float64(n.QuietFloodIssued)
}

// quietFloodRate is the quiet load offered during the flood, in changes a
// second: the same for every implementation, as the schedule is
// open-loop; 0 for runs written before it was recorded.
func quietFloodRate(n *noisyResult) float64 {
	if n.QuietFloodIssuingSeconds == 0 {
		return 0
	}
	return float64(n.QuietFloodIssued) / n.QuietFloodIssuingSeconds
}

// noisyFigures are the rows of the noisy scenario's table. The API
// requests show the work each implementation did for the same offered
// load: a quiet change served at once is a reconcile of its own, while
// changes that wait in the queue are merged into one.
func noisyFigures(runs []runResult) []figure {
	flood := func(n *noisyResult) []float64 { return n.QuietFlood }
	floor := func(n *noisyResult) []float64 { return n.QuietFloor }
	fs := latencyFigures("flood", flood, 0.05)
	fs = append(fs, figure{name: "quiet p99, flood / no flood (x)", value: noisyValue(func(n *noisyResult) float64 {
		if p := percentile(n.QuietFloor, 99); p > 0 {
			return percentile(n.QuietFlood, 99) / p
		}
		return 0
	}), selfTarget: 2, operatorsOnly: true})
	fs = append(fs,
		figure{name: "quiet changes issued, flood", value: noisyValue(quietFloodIssued), operatorsOnly: true},
		figure{name: "quiet changes issued per second, flood", value: noisyValue(quietFloodRate), operatorsOnly: true})
	fs = append(fs, latencyFigures("no flood", floor, 0)...)
	fs = append(fs,
		figure{name: "flood, create → all copies (s)", value: noisyValue(func(n *noisyResult) float64 { return n.FloodCreateSeconds }), operatorsOnly: true},
		figure{name: "flood, burst → copies follow (s)", value: noisyValue(func(n *noisyResult) float64 { return n.FloodBurstSeconds }), operatorsOnly: true},
		figure{name: "flood, total (s)", value: noisyValue(func(n *noisyResult) float64 { return n.FloodCreateSeconds + n.FloodBurstSeconds }), crTarget: 1, operatorsOnly: true},
		figure{name: "CPU (s)", value: func(r runResult) float64 { return r.CPUSeconds }, operatorsOnly: true},
		figure{name: "peak RSS (MiB)", value: func(r runResult) float64 { return mib(r.PeakRSSBytes) }, operatorsOnly: true},
	)
	fs = append(fs, apiServerCPUFigures(runs, true)...)
	fs = append(fs, figure{name: "API requests", value: runResult.totalRequests, operatorsOnly: true})
	for _, f := range requestFigures(runs) {
		f.operatorsOnly = true
		fs = append(fs, f)
	}
	return fs
}

const noisyFooter = "Ratios are opkit's median / the peer's; a run's p99 is its nearest-rank 99th percentile, the cell the median over runs. " +
	"The quiet tenants are open-loop: they change at every tick whatever the latency, so every implementation is offered the same quiet changes per second; " +
	"a slower flood lasts more ticks, hence more quiet changes issued. " +
	"The ratio flood / no flood is each implementation's own; its target applies to opkit. " +
	"The bare client is not an operator with tenants: it does not run this scenario."

// scenarioDoc returns the table of scenario s over its runs.
func scenarioDoc(s, title string, runs []runResult) doc {
	var figs []figure
	foot := footer
	switch s {
	case scenarioFill:
		figs, foot = fillFigures(runs), fillFooter
	case scenarioNoisy:
		figs, foot = noisyFigures(runs), noisyFooter
	case scenarioMemory:
		rows, met, total := tableOf(runs, memoryFigures(), memoryColumns)
		return doc{title: title, rows: rows, met: met, total: total, footer: memoryFooter}
	default:
		figs = figures(runs)
	}
	rows, met, total := tableOf(runs, figs, peerColumns)
	return doc{title: title, rows: rows, met: met, total: total, footer: foot}
}

// titles returns the title of each scenario's table: its exact workload
// and the date.
func (o options) titles(date time.Time) map[string]string {
	day := date.UTC().Format("2006-01-02")
	orig := fmt.Sprintf("%d namespaces × %d sources = %d copies, then %d updates; %d workers; %d round(s)",
		o.namespaces, o.sources, o.namespaces*o.sources, o.namespaces*o.sources, o.workers, o.rounds)
	f, mf := o.fill, o.memory.fill()
	return map[string]string{
		scenarioMemory: fmt.Sprintf("Memory under a cgroup limit, %s; fill: %d objects, %d ConfigMaps and %d Secrets in %d namespaces, shape %s (%s); "+
			"peers: ctrlruntime caches ConfigMaps and Secrets in full, ctrlruntime-cm ConfigMaps only, Go memory limit %s; opkit watches both as metadata, lazily; "+
			"load: %d Mirrors × %d namespaces created, then updated, %d workers; binary's pages charged to each cgroup; measured under %d MiB, "+
			"then the smallest limit survived, bisected to %d MiB in at most %d trials; settle %v",
			day, o.memory.objects, mf.configMaps, mf.secrets, mf.namespaces, mf.shape, strings.TrimPrefix(mf.describe(), shapeSmall+": "), peerLimitText(o.memory.peerLimit),
			memorySources, memoryNamespaces, o.workers, o.memory.max>>20, o.memory.precision>>20, o.memory.steps, o.memory.settle),
		scenarioOriginal: "Mirror end to end: " + orig + "; " + day,
		scenarioFill: fmt.Sprintf("Mirror in a filled cluster: %d ConfigMaps and %d Secrets in %d namespaces (%s), then %s; %s",
			f.configMaps, f.secrets, f.namespaces, f.describe(), orig, day),
		scenarioNoisy: fmt.Sprintf("Noisy neighbour: %d quiet tenants (1 source → %d namespaces each, open-loop: every quiet tenant changes every %v, whatever the latency); flood: %d Mirrors × %d namespaces = %d copies created at once, then every source updated %d times; floor: %d ticks without flood; %d workers; %d round(s); %s",
			o.noisy.quiet, o.noisy.quietNamespaces, o.noisy.quietEvery, o.noisy.flood, o.noisy.floodNamespaces, o.noisy.flood*o.noisy.floodNamespaces,
			o.noisy.burstUpdates, o.noisy.floorWaves, o.workers, o.rounds, day),
	}
}
