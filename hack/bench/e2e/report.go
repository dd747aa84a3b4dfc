package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"k8s.io/client-go/kubernetes"
)

// The implementations, in the order runs alternate and columns appear.
const (
	opkit = "opkit"
	cr    = "ctrlruntime"
	// crCM is controller-runtime's Mirror watching ConfigMaps only, no
	// Secret (crmirror --configmaps-only): the memory scenario's leaner
	// peer, which runs in that scenario only.
	crCM = "ctrlruntime-cm"
	bare = "bare"
	// noRYW is opkit's operator with read-your-writes off: the same
	// binary, run with --read-your-writes=false, to measure what the
	// feature costs.
	noRYW = "opkit-noryw"
	// self is opkit's operator acting as itself: the same binary, run
	// with --act-as-operator, so that it reads sources and writes copies
	// with the operator's own authority rather than as each Mirror's
	// ServiceAccount, to measure what acting as the tenant costs.
	self = "opkit-self"
)

var impls = []string{opkit, cr, crCM, bare, noRYW, self}

// implArgs are the flags an implementation's binary runs with beyond
// those every operator takes. opkit's runs without its webhook server,
// which needs webhook configurations the benchmark's cluster has not, and
// which controller-runtime's mirror does not run either.
var implArgs = map[string][]string{
	opkit: {"--webhook-port=0"},
	noRYW: {"--read-your-writes=false", "--webhook-port=0"},
	self:  {"--act-as-operator", "--webhook-port=0"},
	crCM:  {"--configmaps-only"},
}

// runResult is the figures of one run of one implementation.
type runResult struct {
	Impl string `json:"impl"`
	// Scenario is the workload the run ran; runs written before there
	// were scenarios have none and ran the original.
	Scenario      string           `json:"scenario,omitempty"`
	Round         int              `json:"round"`
	CreateSeconds float64          `json:"createSeconds"`
	UpdateSeconds float64          `json:"updateSeconds"`
	CPUSeconds    float64          `json:"cpuSeconds"`
	PeakRSSBytes  int64            `json:"peakRSSBytes"`
	Requests      map[string]int64 `json:"requests"`        // by HTTP method, over the process's life
	Codes         map[string]int64 `json:"codes,omitempty"` // by status code, where known
	// ReadySeconds is the time from the process's start until its /readyz
	// passed: its caches synced. Operators only.
	ReadySeconds float64 `json:"readySeconds,omitempty"`
	// HeapAfterSyncBytes is go_memstats_heap_inuse_bytes on the process's
	// /metrics right after it was ready, no GC forced. Operators only.
	HeapAfterSyncBytes int64 `json:"heapAfterSyncBytes,omitempty"`
	// APIServerCPUSeconds is the CPU kube-apiserver spent from just before
	// the process started until its workload converged: the other half
	// of the work on a machine the API server shares (etcd not counted).
	APIServerCPUSeconds float64 `json:"apiServerCPUSeconds,omitempty"`
	// Noisy holds the noisy-neighbour scenario's figures.
	Noisy *noisyResult `json:"noisy,omitempty"`
	// Memory holds the memory scenario's figures.
	Memory *memoryResult `json:"memory,omitempty"`
}

// scenario returns the scenario r ran.
func (r runResult) scenario() string {
	if r.Scenario == "" {
		return scenarioOriginal
	}
	return r.Scenario
}

// failed returns the requests answered with neither a 1xx, 2xx or 3xx
// status: conflicts from writes computed from a stale cache, mostly.
func (r runResult) failed() float64 {
	var n int64
	for code, v := range r.Codes {
		if c, err := strconv.Atoi(code); err != nil || c >= 400 {
			n += v
		}
	}
	return float64(n)
}

func (r runResult) totalRequests() float64 {
	var n int64
	for _, v := range r.Requests {
		n += v
	}
	return float64(n)
}

// figure is a row of the table: a figure of every run, and the most
// opkit's median may be as a multiple of each peer's (0: no target).
type figure struct {
	name       string
	value      func(runResult) float64
	crTarget   float64
	bareTarget float64
	// operatorsOnly leaves the bare client's cell empty: it has no cache,
	// no readiness and no tenants.
	operatorsOnly bool
	// selfTarget, if not 0, is the most opkit's own median may be.
	selfTarget float64
}

func figures(runs []runResult) []figure {
	fs := []figure{
		{name: "wall, create phase (s)", value: func(r runResult) float64 { return r.CreateSeconds }, crTarget: 1, bareTarget: 1.1},
		{name: "wall, update phase (s)", value: func(r runResult) float64 { return r.UpdateSeconds }, crTarget: 1, bareTarget: 1.1},
		{name: "wall, both phases (s)", value: func(r runResult) float64 { return r.CreateSeconds + r.UpdateSeconds }, crTarget: 1, bareTarget: 1.1},
		{name: "CPU (s)", value: func(r runResult) float64 { return r.CPUSeconds }, crTarget: 0.7},
		{name: "peak RSS (MiB)", value: func(r runResult) float64 { return float64(r.PeakRSSBytes) / (1 << 20) }, crTarget: 0.7},
	}
	fs = append(fs, apiServerCPUFigures(runs, false)...)
	fs = append(fs, figure{name: "API requests", value: runResult.totalRequests, crTarget: 1})
	return append(fs, requestFigures(runs)...)
}

// requestFigures are the rows of API requests by method, and the failed.
func requestFigures(runs []runResult) []figure {
	var fs []figure
	var methods []string
	for _, r := range runs {
		for m := range r.Requests {
			if !slices.Contains(methods, m) {
				methods = append(methods, m)
			}
		}
	}
	slices.Sort(methods)
	for _, m := range methods {
		fs = append(fs, figure{name: "  " + m, value: func(r runResult) float64 { return float64(r.Requests[m]) }})
	}
	return append(fs, figure{name: "  failed (4xx, 5xx)", value: runResult.failed})
}

// stats are the median and range of one figure over one implementation's
// runs.
type stats struct {
	median, min, max float64
	n                int
}

func summarize(runs []runResult, impl string, value func(runResult) float64) stats {
	var vs []float64
	for _, r := range runs {
		if r.Impl == impl {
			vs = append(vs, value(r))
		}
	}
	if len(vs) == 0 {
		return stats{}
	}
	return stats{median: median(vs), min: slices.Min(vs), max: slices.Max(vs), n: len(vs)}
}

// median returns the median of vs, which must not be empty.
func median(vs []float64) float64 {
	vs = slices.Sorted(slices.Values(vs))
	n := len(vs)
	return (vs[(n-1)/2] + vs[n/2]) / 2
}

// column is a peer's two columns in a table: its figures, and opkit's
// over them, against the target of the figure's that target returns (nil:
// none).
type column struct {
	impl, name, ratio string
	target            func(figure) float64
}

func crTarget(f figure) float64 { return f.crTarget }

// peerColumns are the peers of every table but the memory scenario's.
var peerColumns = []column{
	{impl: cr, name: "ctrlruntime", ratio: "opkit/ctrlruntime", target: crTarget},
	{impl: bare, name: "bare", ratio: "opkit/bare", target: func(f figure) float64 { return f.bareTarget }},
	{impl: noRYW, name: "opkit, read-your-writes off", ratio: "on/off"},
	{impl: self, name: "opkit, acting as itself", ratio: "as tenant/as itself"},
}

// memoryColumns are the memory scenario's peers: controller-runtime's
// Mirror caching ConfigMaps and Secrets in full, and watching ConfigMaps
// only.
var memoryColumns = []column{
	{impl: cr, name: "ctrlruntime", ratio: "opkit/ctrlruntime", target: crTarget},
	{impl: crCM, name: "ctrlruntime-cm", ratio: "opkit/ctrlruntime-cm", target: crTarget},
}

// headerOf is the header of a table of cols.
func headerOf(cols []column) []string {
	h := []string{"figure (median, range)", "opkit"}
	for _, c := range cols {
		h = append(h, c.name, c.ratio)
	}
	return h
}

var header = headerOf(peerColumns)

// table returns the cells of the original scenario's table, header
// first, and how many targets opkit met of how many.
func table(runs []runResult) (rows [][]string, met, total int) {
	return tableOf(runs, figures(runs), peerColumns)
}

// tableOf returns the cells of a table of figs over runs with the peers
// of cols, header first, and how many targets opkit met of how many.
func tableOf(runs []runResult, figs []figure, cols []column) (rows [][]string, met, total int) {
	rows = append(rows, headerOf(cols))
	for _, f := range figs {
		o := summarize(runs, opkit, f.value)
		own, m, t := selfCheck(o, f.selfTarget)
		met, total = met+m, total+t
		cells := []string{f.name, cell(o) + own}
		for _, col := range cols {
			var s stats
			if col.impl != bare || !f.operatorsOnly {
				s = summarize(runs, col.impl, f.value)
			}
			var target float64
			if col.target != nil {
				target = col.target(f)
			}
			c, m, t := ratio(o, s, target)
			cells, met, total = append(cells, cell(s), c), met+m, total+t
		}
		rows = append(rows, cells)
	}
	return rows, met, total
}

// selfCheck returns what to append to opkit's cell for a target on its
// own median, and whether it was met (1 of 1) or not; a median of 0, not
// measured, has no verdict.
func selfCheck(o stats, target float64) (suffix string, met, total int) {
	if target == 0 || o.n == 0 || o.median == 0 { // 0: not measured
		return "", 0, 0
	}
	if o.median <= target {
		return fmt.Sprintf(" (≤%s pass)", targetText(target)), 1, 1
	}
	return fmt.Sprintf(" (≤%s MISS)", targetText(target)), 0, 1
}

// targetText formats a target with at least one decimal: 1.0, 0.05.
func targetText(t float64) string {
	s := strconv.FormatFloat(t, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

func cell(s stats) string {
	switch {
	case s.n == 0:
		return "-"
	case s.n == 1 || s.min == s.max:
		return num(s.median)
	}
	return fmt.Sprintf("%s (%s–%s)", num(s.median), num(s.min), num(s.max))
}

// ratio returns opkit's median over the peer's, with the target it must
// not exceed, if any; and whether that target was met (1 of 1) or not.
func ratio(o, peer stats, target float64) (cell string, met, total int) {
	if o.n == 0 || peer.n == 0 || peer.median == 0 {
		return "-", 0, 0
	}
	r := o.median / peer.median
	if target == 0 {
		return fmt.Sprintf("%.2fx", r), 0, 0
	}
	if r <= target {
		return fmt.Sprintf("%.2fx (≤%sx pass)", r, targetText(target)), 1, 1
	}
	return fmt.Sprintf("%.2fx (≤%sx MISS)", r, targetText(target)), 0, 1
}

func num(v float64) string {
	switch {
	case v >= 100 || v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

const footer = "Ratios are opkit's median / the peer's: below 1, opkit uses less (or is faster). " +
	"On/off is opkit's median with read-your-writes on (the default) / off: its cost."

// doc is one scenario's table, ready to print.
type doc struct {
	title      string
	rows       [][]string // header first
	met, total int        // targets
	footer     string
}

// printTable prints the original scenario's table aligned for a terminal.
func printTable(w io.Writer, title string, runs []runResult) error {
	rows, met, total := table(runs)
	return printDoc(w, doc{title: title, rows: rows, met: met, total: total, footer: footer})
}

// printDoc prints d aligned for a terminal, like hack/benchtable.
func printDoc(w io.Writer, d doc) error {
	fmt.Fprintln(w, d.title)
	width := 0
	for _, r := range d.rows {
		width = max(width, len([]rune(r[0])))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 0, ' ', tabwriter.AlignRight)
	for _, r := range d.rows {
		r = slices.Clone(r)
		r[0] += strings.Repeat(" ", width-len([]rune(r[0])))
		fmt.Fprintln(tw, strings.Join(r, "\t  ")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s Targets met: %d of %d.\n", d.footer, d.met, d.total)
	return err
}

// writeDoc writes d as a markdown table.
func writeDoc(w io.Writer, d doc) {
	fmt.Fprintf(w, "%s\n\n", d.title)
	for i, r := range d.rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		if i == 0 {
			fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(r)))
		}
	}
	fmt.Fprintf(w, "\n%s Targets met: %d of %d.\n\n", d.footer, d.met, d.total)
}

// writeRuns writes every run's main figures as a markdown table.
func writeRuns(w io.Writer, runs []runResult) {
	fmt.Fprintf(w, "Every run, in the order they ran:\n\n")
	if len(runs) > 0 && runs[0].scenario() == scenarioNoisy {
		writeNoisyRuns(w, runs)
		return
	}
	if len(runs) > 0 && runs[0].scenario() == scenarioMemory {
		writeMemoryRuns(w, runs)
		return
	}
	fmt.Fprintf(w, "| round | implementation | create (s) | update (s) | CPU (s) | peak RSS (MiB) | ready (s) | heap after sync (MiB) | API requests |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		fmt.Fprintf(w, "| %d | %s | %.2f | %.2f | %.2f | %.1f | %.2f | %.1f | %s |\n", r.Round, r.Impl, r.CreateSeconds, r.UpdateSeconds,
			r.CPUSeconds, float64(r.PeakRSSBytes)/(1<<20), r.ReadySeconds, float64(r.HeapAfterSyncBytes)/(1<<20), formatRequests(r.Requests))
	}
	fmt.Fprintln(w)
}

func writeNoisyRuns(w io.Writer, runs []runResult) {
	fmt.Fprintf(w, "| round | implementation | quiet, no flood: p50 / p99 / max (s), changes | quiet, flood: p50 / p99 / max (s), changes | quiet, flood: issued, per s | flood create (s) | flood burst (s) | CPU (s) | peak RSS (MiB) |\n|---|---|---|---|---|---|---|---|---|\n")
	lat := func(vs []float64) string {
		return fmt.Sprintf("%.3f / %.3f / %.3f, %d", percentile(vs, 50), percentile(vs, 99), percentile(vs, 100), len(vs))
	}
	for _, r := range runs {
		n := r.Noisy
		if n == nil {
			n = &noisyResult{}
		}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %.0f, %.1f | %.2f | %.2f | %.2f | %.1f |\n", r.Round, r.Impl, lat(n.QuietFloor), lat(n.QuietFlood),
			quietFloodIssued(n), quietFloodRate(n), n.FloodCreateSeconds, n.FloodBurstSeconds, r.CPUSeconds, mib(r.PeakRSSBytes))
	}
	fmt.Fprintln(w)
}

// formatRequests formats requests by method as "123 (GET 3, POST 100, …)".
func formatRequests(reqs map[string]int64) string {
	var n int64
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(reqs)) {
		n += reqs[m]
		parts = append(parts, fmt.Sprintf("%s %d", m, reqs[m]))
	}
	return fmt.Sprintf("%d (%s)", n, strings.Join(parts, ", "))
}

// apiServerCPUFigures is the row of the API server's CPU per run, or none
// if the runs were written before it was recorded.
func apiServerCPUFigures(runs []runResult, operatorsOnly bool) []figure {
	for _, r := range runs {
		if r.APIServerCPUSeconds > 0 {
			return []figure{{name: "API server CPU (s)", value: func(r runResult) float64 { return r.APIServerCPUSeconds }, operatorsOnly: operatorsOnly}}
		}
	}
	return nil
}

// apiServerCPU returns kube-apiserver's process_cpu_seconds_total, read
// from its /metrics.
func apiServerCPU(ctx context.Context, cs kubernetes.Interface) (float64, error) {
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the API server's /metrics: %w", err)
	}
	return processCPU(body)
}

// processCPU finds process_cpu_seconds_total in a Prometheus text
// exposition.
func processCPU(metrics []byte) (float64, error) {
	for line := range strings.SplitSeq(string(metrics), "\n") {
		if v, ok := strings.CutPrefix(line, "process_cpu_seconds_total "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, errors.New("no process_cpu_seconds_total in the API server's /metrics")
}
