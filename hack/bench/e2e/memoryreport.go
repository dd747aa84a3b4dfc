package main

import (
	"fmt"
	"io"
	"slices"
)

// The memory scenario's table and list of trials.

// memoryValue returns f of r's memory figures, or 0 for a run without.
func memoryValue(f func(*memoryResult) float64) func(runResult) float64 {
	return func(r runResult) float64 {
		if r.Memory == nil {
			return 0
		}
		return f(r.Memory)
	}
}

func memoryMiB(f func(*memoryResult) int64) func(runResult) float64 {
	return memoryValue(func(m *memoryResult) float64 { return mib(f(m)) })
}

// perMeasured returns v over the measured run's w, or 0 if w is 0.
func perMeasured(v, w float64) float64 {
	if w == 0 {
		return 0
	}
	return v / w
}

// memoryFigures are the rows of the memory scenario's table. The targets
// are issue 49's: the smallest limit at most a quarter of each peer's,
// and there, convergence within 2× the measured run's time and 3× its
// CPU (opkit's own ratios).
func memoryFigures() []figure {
	return []figure{
		{name: "time to ready (s)", value: func(r runResult) float64 { return r.ReadySeconds }, operatorsOnly: true},
		{name: "Go memory limit (MiB, 0: none)", value: memoryMiB(func(m *memoryResult) int64 {
			if m.GoMemLimitBytes >= m.LimitBytes {
				return 0 // math.MaxInt64: the runtime's default, none
			}
			return m.GoMemLimitBytes
		}), operatorsOnly: true},
		{name: "peak during sync, cgroup (MiB)", value: memoryMiB(func(m *memoryResult) int64 { return m.SyncPeakBytes }), operatorsOnly: true},
		{name: "peak RSS during sync (MiB)", value: memoryMiB(func(m *memoryResult) int64 { return m.SyncPeakRSSBytes }), operatorsOnly: true},
		{name: "  of which file-backed at ready, RssFile (MiB)", value: memoryMiB(func(m *memoryResult) int64 { return m.RSSFileBytes }), operatorsOnly: true},
		{name: "page cache charged to the cgroup at ready (MiB)", value: memoryMiB(func(m *memoryResult) int64 { return m.CacheBytes }), operatorsOnly: true},
		{name: "binary left cached elsewhere at a start (MiB)", value: memoryMiB((*memoryResult).binaryCached), operatorsOnly: true},
		{name: "settled, cgroup (MiB)", value: memoryMiB(func(m *memoryResult) int64 { return m.SettledBytes }), operatorsOnly: true},
		{name: "steady peak, cgroup (MiB)", value: memoryMiB(func(m *memoryResult) int64 { return m.SteadyPeakBytes }), operatorsOnly: true},
		{name: "sync peak / steady peak (x)", value: memoryValue(func(m *memoryResult) float64 {
			return perMeasured(float64(m.SyncPeakBytes), float64(m.SteadyPeakBytes))
		}), selfTarget: 1.2, operatorsOnly: true},
		{name: "peak, cgroup (MiB)", value: memoryMiB((*memoryResult).peakBytes), crTarget: 0.2, operatorsOnly: true},
		{name: "OOM kills, measured run", value: memoryValue(func(m *memoryResult) float64 { return float64(m.OOMKills) }), operatorsOnly: true},
		{name: "CPU, measured run (s)", value: func(r runResult) float64 { return r.CPUSeconds }, operatorsOnly: true},
		{name: "time to converge, measured run (s)", value: memoryValue(func(m *memoryResult) float64 { return m.ConvergeSeconds }), operatorsOnly: true},
		{name: "CPU to converge, measured run (s)", value: memoryValue(func(m *memoryResult) float64 { return m.ConvergeCPUSeconds }), operatorsOnly: true},
		{name: "smallest limit survived (MiB)", value: memoryMiB(func(m *memoryResult) int64 { return m.SmallestLimitBytes }), crTarget: 0.25, operatorsOnly: true},
		{name: "largest limit not survived (MiB)", value: memoryMiB(func(m *memoryResult) int64 { return m.LargestFailedBytes }), operatorsOnly: true},
		{name: "at the smallest limit: time to converge (s)", value: memoryValue(func(m *memoryResult) float64 { s, _ := m.atSmallest(); return s }), operatorsOnly: true},
		{name: "  time / measured run's (x)", value: memoryValue(func(m *memoryResult) float64 {
			s, _ := m.atSmallest()
			return perMeasured(s, m.ConvergeSeconds)
		}), selfTarget: 2, operatorsOnly: true},
		{name: "at the smallest limit: CPU to converge (s)", value: memoryValue(func(m *memoryResult) float64 { _, c := m.atSmallest(); return c }), operatorsOnly: true},
		{name: "  CPU / measured run's (x)", value: memoryValue(func(m *memoryResult) float64 {
			_, c := m.atSmallest()
			return perMeasured(c, m.ConvergeCPUSeconds)
		}), selfTarget: 3, operatorsOnly: true},
		{name: "trials", value: memoryValue(func(m *memoryResult) float64 { return float64(len(m.Trials)) }), operatorsOnly: true},
		{name: "load average (1 min), most at a start", value: memoryValue((*memoryResult).loadAvgMax), operatorsOnly: true},
	}
}

const memoryFooter = "Each operator ran in a memory cgroup of its own, its binary evicted from the page cache first so that the pages it touched " +
	"were charged to that cgroup, as a container's are (RssFile: the process's file-backed resident pages; page cache: what its cgroup was charged). " +
	"It ran first under the measured run's limit: the sync peak is the cgroup's peak usage " +
	"(what the kernel's OOM killer judges: anonymous memory, kernel memory and page cache charged to it) from start to the first passing /readyz, " +
	"the RSS peak the process's VmHWM then; settled is the cgroup's usage the settle time after; the steady peak the cgroup's peak from then " +
	"through a workload of 10 Mirrors × 10 namespaces created and updated. Then a bisection: a limit is survived if the operator becomes ready " +
	"and converges that workload with no OOM kill. Time to converge is from start to that workload converged (the measured run's settle time and its CPU left out); " +
	"at the smallest limit, it and the CPU are that trial's, against the measured run's (the / measured run rows; their targets are opkit's). " +
	"The Go memory limit is go_gc_gomemlimit_bytes: opkit sets it from the cgroup's limit, " +
	"controller-runtime's Mirrors, as controller-runtime operators do by default, do not (unless -memory-peer-gomemlimit gives them GOMEMLIMIT at 90% of their limit). " +
	"opkit's operator watches ConfigMaps and Secrets, as metadata with lazy reads; ctrlruntime caches both in full; ctrlruntime-cm watches and caches " +
	"ConfigMaps only, no Secret: the comparison least favourable to opkit. Every trial is listed below."

// writeMemoryRuns writes every trial of the memory scenario, by
// implementation, largest limit first.
func writeMemoryRuns(w io.Writer, runs []runResult) {
	fmt.Fprintf(w, "| implementation | limit (MiB) | survived | ready (s) | converged, or gave up (s) | CPU (s) | peak, cgroup (MiB) | OOM kills | load avg | why not |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		if r.Memory == nil {
			continue
		}
		trials := slices.Clone(r.Memory.Trials)
		slices.SortStableFunc(trials, func(a, b memoryTrial) int { return int((b.LimitBytes - a.LimitBytes) >> 20) })
		for _, t := range trials {
			fmt.Fprintf(w, "| %s | %.0f | %t | %.2f | %.2f | %.2f | %.1f | %d | %.1f | %s |\n", r.Impl, mib(t.LimitBytes), t.Survived, t.ReadySeconds,
				t.Seconds, t.CPUSeconds, mib(t.PeakBytes), t.OOMKills, t.LoadAvg, t.Why)
		}
	}
	fmt.Fprintln(w)
}
