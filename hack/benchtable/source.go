package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// sourceWorkloads are pkg/source's benchmarks: events through an informer,
// a source and a handler into a queue drained by a worker, for opkit and
// for controller-runtime.
var sourceWorkloads = []string{"InformerUpdates"}

func isSourceWorkload(wl string) bool { return slices.Contains(sourceWorkloads, wl) }

// sourceRow is one comparison of the source table: row a's figures beside
// row b's, in the configuration config names. A row a with a feature off
// that a manager keeps on says so, and is never the headline.
type sourceRow struct {
	a, b   string
	config string
	// speedup is the least a's events/s / b's that a must reach; 0: shown,
	// not checked. fewerAllocs checks a's allocs/event below b's.
	speedup     float64
	fewerAllocs bool
	cpu         bool // show CPU ns/event too
	// cpuCost, if not 0, shows CPU ns/event as a's / b's, the cost of
	// what a does more than b, and checks it is at most cpuCost.
	cpuCost float64
}

var sourceRows = []sourceRow{
	// The headline: each controller as its manager configures it.
	{a: "default", b: "ctrlruntimedefault", config: "headline: each controller as its manager configures it",
		speedup: 1.3, fewerAllocs: true, cpu: true},
	// The source path alone, as a manager runs it: the lag metrics on.
	{a: "opkitlag", b: "ctrlruntime", config: "source path, lag on as in a manager; no queue metrics",
		speedup: 1.3, fewerAllocs: true, cpu: true},
	// The lag metrics' cost, on a quiet machine and beside a process
	// that keeps every core busy.
	{a: "opkitlag", b: "opkit", config: "lag metrics' cost; off is no manager's configuration", speedup: 0.9, cpuCost: 1.1},
	{a: "opkitlagloaded", b: "opkitloaded", config: "lag metrics' cost, every core kept busy by another process", cpuCost: 1.1},
}

// printSourceTable prints, per workload, each sourceRow's events/s and
// allocs/event and checks their targets.
func printSourceTable(w io.Writer, r results) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "source (median)\tconfiguration\tmeasure\ta\tb\tratio\ttarget\t")
	met, total := 0, 0
	check := func(pass bool) string {
		met, total = met+btoi(pass), total+1
		if pass {
			return "pass"
		}
		return "MISS"
	}
	for _, wl := range sourceWorkloads {
		for _, row := range sourceRows {
			label := row.a + " vs " + row.b
			ns, okA := r.median(wl, row.a, "ns/event")
			peerNS, okB := r.median(wl, row.b, "ns/event")
			if !okA || !okB || ns <= 0 {
				// A row renamed or not run: say so rather than drop it.
				fmt.Fprintf(tw, "%s\t%s: %s\tevents/s\t-\t-\t-\tno figures %s\t\n", wl, label, row.config, check(false))
				continue
			}
			target := "-"
			if ratio := peerNS / ns; row.speedup > 0 {
				target = fmt.Sprintf("≥%.1fx %s", row.speedup, check(ratio >= row.speedup))
			}
			fmt.Fprintf(tw, "%s\t%s: %s\tevents/s\t%.0f\t%.0f\t%.2fx\t%s\t\n", wl, label, row.config, 1e9/ns, 1e9/peerNS, peerNS/ns, target)
			// CPU time is shown, not checked, beside a peer: on a shared
			// machine it is steadier than wall time, and tells whether a
			// miss is noise. A cost (a's CPU over b's, where a does what b
			// does and more) is checked.
			cpu, okA := r.median(wl, row.a, "cpu-ns/event")
			peerCPU, okB := r.median(wl, row.b, "cpu-ns/event")
			switch {
			case !okA || !okB || cpu <= 0 || peerCPU <= 0:
			case row.cpuCost > 0:
				cost := cpu / peerCPU
				fmt.Fprintf(tw, "%s\t%s\tCPU ns/event (a/b)\t%.0f\t%.0f\t%.2fx\t≤%.2fx %s\t\n", wl, label, cpu, peerCPU, cost,
					row.cpuCost, check(cost <= row.cpuCost))
			case row.cpu:
				fmt.Fprintf(tw, "%s\t%s\tCPU ns/event\t%.0f\t%.0f\t%.2fx\t-\t\n", wl, label, cpu, peerCPU, peerCPU/cpu)
			}
			allocs, okA := r.median(wl, row.a, "allocs/event")
			peerAllocs, okB := r.median(wl, row.b, "allocs/event")
			if row.fewerAllocs && okA && okB {
				fmt.Fprintf(tw, "%s\t%s\tallocs/event\t%.2f\t%.2f\t%+.2f\tfewer %s\t\n", wl, label, allocs, peerAllocs, allocs-peerAllocs,
					check(allocs < peerAllocs))
			}
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\nThe first row is the headline. Ratios are a's events/s / b's, b's CPU / a's (a's / b's where marked a/b), and a's allocs/event minus b's. Targets met: %d of %d.\n", met, total)
}
