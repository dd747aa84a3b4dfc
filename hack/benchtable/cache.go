package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// cacheCheck is one target of pkg/cache's benchmarks: the ratio of impl a's
// median to impl b's, in unit, must be at most (atMost) or at least target.
// With b empty, a's median itself is compared.
type cacheCheck struct {
	workload, unit string
	a, b           string
	atMost         bool
	target         float64
	what           string
}

var cacheChecks = []cacheCheck{
	{"HeapConfigMaps", "heap-B", "opkit", "ctrlruntime", true, 0.6, "heap, opkit / ctrlruntime"},
	{"HeapConfigMaps", "heap-B", "opkitmeta", "ctrlruntime", true, 0.2, "heap, metadata-only / ctrlruntime"},
	{"HeapConfigMaps", "heap-B", "opkitlazy", "ctrlruntime", true, 0.2, "heap, cache.Lazy (none read) / ctrlruntime"},
	{"HeapPods", "heap-B", "opkit", "ctrlruntime", true, 0.6, "heap, opkit / ctrlruntime"},
	{"HeapPods", "heap-B", "opkitmeta", "ctrlruntime", true, 0.2, "heap, metadata-only / ctrlruntime"},
	{"Get", "ns/op", "ctrlruntime", "opkit", false, 100, "time, ctrlruntime / opkit"},
	{"Get", "ns/op", "opkit", "map", true, 4, "time, opkit / bare map"},
	{"Get", "allocs/op", "opkit", "", true, 0, "allocs/op, opkit"},
	{"List200", "ns/op", "ctrlruntime", "opkit", false, 100, "time, ctrlruntime / opkit"},
	{"SyncPods", "sync-s", "opkit", "ctrlruntime", true, 1, "sync time, opkit / ctrlruntime"},
}

// isCacheWorkload reports whether a workload is one of pkg/cache's.
func isCacheWorkload(wl string) bool {
	for _, c := range cacheChecks {
		if c.workload == wl {
			return true
		}
	}
	return false
}

// cacheConfig says which configuration the cache table's rows run.
const cacheConfig = "Configuration: opkit's caches without a Registerer (metrics off), which a manager always sets: its metrics keep nothing per cached object: an event waiting in an informer's queue carries its change time (a 32-byte wrapper) until delivered."

func printCacheTable(w io.Writer, r results) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "cache (median)\tmeasure\tvalue\tof\ttarget\t")
	met, total := 0, 0
	for _, c := range cacheChecks {
		a, okA := r.median(c.workload, c.a, c.unit)
		if !okA {
			continue
		}
		value, of := a, fmt.Sprintf("%s %s", num(a, true), c.unit)
		if c.b != "" {
			b, okB := r.median(c.workload, c.b, c.unit)
			if !okB || b == 0 {
				continue
			}
			value = a / b
			of = fmt.Sprintf("%s / %s %s", human(a, c.unit), human(b, c.unit), c.unit)
		}
		pass := value >= c.target
		cmp := "≥"
		if c.atMost {
			pass, cmp = value <= c.target, "≤"
		}
		met, total = met+btoi(pass), total+1
		verdict := "pass"
		if !pass {
			verdict = "MISS"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s%s %s\t\n", c.workload, c.what, ratio(value, c.b != ""), of, cmp, ratio(c.target, c.b != ""), verdict)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nTargets met: %d of %d.\n", met, total)
	fmt.Fprintln(w, cacheConfig)
}

func ratio(v float64, isRatio bool) string {
	if !isRatio {
		return num(v, true)
	}
	if v >= 10 {
		return fmt.Sprintf("%.0fx", v)
	}
	return fmt.Sprintf("%.2fx", v)
}

// human prints bytes in MiB and everything else as num does.
func human(v float64, unit string) string {
	if strings.HasSuffix(unit, "-B") {
		return fmt.Sprintf("%.1fMi", v/(1<<20))
	}
	return num(v, true)
}
