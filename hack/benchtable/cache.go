package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// cacheCheck is one target of pkg/cache's benchmarks: the ratio of impl a's
// median to impl b's, in unit, must be at most (atMost) or at least target.
// With b empty, a's median itself is compared. A check without a target
// (info) is a figure printed for comparison only.
type cacheCheck struct {
	workload, unit string
	a, b           string
	atMost         bool
	target         float64
	what           string
	info           bool
}

var cacheChecks = append(append([]cacheCheck{
	{"HeapConfigMaps", "heap-B", "opkit", "ctrlruntime", true, 0.6, "heap, opkit / ctrlruntime", false},
	{"HeapConfigMaps", "heap-B", "opkitmeta", "ctrlruntime", true, 0.2, "heap, metadata-only / ctrlruntime", false},
	{"HeapConfigMaps", "heap-B", "opkitlazy", "ctrlruntime", true, 0.2, "heap, cache.Lazy (none read) / ctrlruntime", false},
	{"HeapPods", "heap-B", "opkit", "ctrlruntime", true, 0.6, "heap, opkit / ctrlruntime", false},
	{"HeapPods", "heap-B", "opkitmeta", "ctrlruntime", true, 0.2, "heap, metadata-only / ctrlruntime", false},
	{"Get", "ns/op", "ctrlruntime", "opkit", false, 100, "time, ctrlruntime / opkit", false},
	{"Get", "ns/op", "opkit", "map", true, 4, "time, opkit / bare map", false},
	{"Get", "allocs/op", "opkit", "", true, 0, "allocs/op, opkit", false},
	{"List200", "ns/op", "ctrlruntime", "opkit", false, 100, "time, ctrlruntime / opkit", false},
	{"SyncPods", "sync-s", "opkit", "ctrlruntime", true, 1, "sync time, opkit / ctrlruntime", false},
	{"ColdStart", "ready-s", "opkit", "ctrlruntime", true, 0.5, "time to ready, the Mirror's caches / ctrlruntime", false},
	{"ColdStart", "cpu-s", "opkit", "ctrlruntime", true, 0.5, "CPU to ready, the Mirror's caches / ctrlruntime", false},
	{"ColdStart", "apiserver-cpu-s", "opkit", "ctrlruntime", true, 0.5, "kube-apiserver CPU meanwhile / ctrlruntime's", false},
}, bytesChecks("realistic")...), bytesChecks("small")...)

// floorRatio is the unit of a row's bytes per object over its floor.
const floorRatio = "xfloor"

// bytesChecks are the rows of BenchmarkBytesPerObject for one object
// shape: bytes per object against the floor (xfloor, what the controller
// can read of an object) and against controller-runtime's cache of the
// same kind. Metadata-only must stay within twice the floor (issue 49).
func bytesChecks(shape string) []cacheCheck {
	const xfloor = floorRatio
	wl := "BytesPerObject/" + shape
	info := func(unit, a, b, what string) cacheCheck {
		return cacheCheck{workload: wl, unit: unit, a: a, b: b, what: what, info: true}
	}
	return []cacheCheck{
		{workload: wl, unit: xfloor, a: "opkitmeta", atMost: true, target: 2, what: "bytes/object ÷ floor, metadata-only"},
		info(xfloor, "opkitlazy", "", "bytes/object ÷ floor, cache.Lazy (none read)"),
		info(xfloor, "opkit", "", "bytes/object ÷ floor, typed"),
		info(xfloor, "ctrlruntimemeta", "", "bytes/object ÷ floor, ctrlruntime metadata-only"),
		info(xfloor, "ctrlruntime", "", "bytes/object ÷ floor, ctrlruntime typed"),
		info("B/obj", "opkitmeta", "ctrlruntimemeta", "bytes/object, metadata-only, opkit / ctrlruntime"),
		info("B/obj", "opkitlazy", "ctrlruntimemeta", "bytes/object, cache.Lazy / ctrlruntime metadata-only"),
		info("B/obj", "opkit", "ctrlruntime", "bytes/object, typed, opkit / ctrlruntime"),
	}
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
const cacheConfig = "Configuration: opkit's caches without a Registerer (metrics off), which a manager always sets: its metrics keep nothing per cached object: an event waiting in an informer's queue carries its change time (a 32-byte wrapper) until delivered. ColdStart's opkit row has metrics on, as the sample operator's cache has."

func printCacheTable(w io.Writer, r results) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "cache (median)\tmeasure\tvalue\tof\ttarget\t")
	met, total := 0, 0
	for _, c := range cacheChecks {
		a, okA := r.median(c.workload, c.a, c.unit)
		if !okA {
			continue
		}
		value, of, isRatio := a, fmt.Sprintf("%s %s", num(a, true), c.unit), c.b != ""
		if c.unit == floorRatio {
			// The row's own B/obj over its floor, which it reports too.
			bytes, _ := r.median(c.workload, c.a, "B/obj")
			floor, _ := r.median(c.workload, c.a, "floor-B/obj")
			of, isRatio = fmt.Sprintf("%s / %s B/obj", num(bytes, true), num(floor, true)), true
		}
		if c.b != "" {
			b, okB := r.median(c.workload, c.b, c.unit)
			if !okB || b == 0 {
				continue
			}
			value = a / b
			of = fmt.Sprintf("%s / %s %s", human(a, c.unit), human(b, c.unit), c.unit)
		}
		target := "-"
		if !c.info {
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
			target = fmt.Sprintf("%s%s %s", cmp, ratio(c.target, isRatio), verdict)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", c.workload, c.what, ratio(value, isRatio), of, target)
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
