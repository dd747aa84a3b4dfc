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

// sourceSpeedup is the least opkit events/s / controller-runtime events/s.
const sourceSpeedup = 1.3

func isSourceWorkload(wl string) bool { return slices.Contains(sourceWorkloads, wl) }

// printSourceTable prints, per workload, opkit's and controller-runtime's
// events/s and allocs/event and checks the targets: at least sourceSpeedup
// times the events/s, and fewer allocs/event.
func printSourceTable(w io.Writer, r results) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "source (median)\tmeasure\topkit\tctrlruntime\tratio\ttarget\t")
	met, total := 0, 0
	check := func(pass bool) string {
		met, total = met+btoi(pass), total+1
		if pass {
			return "pass"
		}
		return "MISS"
	}
	for _, wl := range sourceWorkloads {
		ns, okA := r.median(wl, "opkit", "ns/event")
		peerNS, okB := r.median(wl, "ctrlruntime", "ns/event")
		if okA && okB && ns > 0 {
			ratio := peerNS / ns
			fmt.Fprintf(tw, "%s\tevents/s\t%.0f\t%.0f\t%.2fx\t≥%.1fx %s\t\n", wl, 1e9/ns, 1e9/peerNS, ratio,
				sourceSpeedup, check(ratio >= sourceSpeedup))
		}
		// CPU time is shown, not checked: on a shared machine it is
		// steadier than wall time, and tells whether a miss is noise.
		cpu, okA := r.median(wl, "opkit", "cpu-ns/event")
		peerCPU, okB := r.median(wl, "ctrlruntime", "cpu-ns/event")
		if okA && okB && cpu > 0 {
			fmt.Fprintf(tw, "%s\tCPU ns/event\t%.0f\t%.0f\t%.2fx\t-\t\n", wl, cpu, peerCPU, peerCPU/cpu)
		}
		// The lag metrics' cost: opkit with them on (opkitlag) beside
		// opkit, shown, not checked.
		lagNS, okL := r.median(wl, "opkitlag", "ns/event")
		if offNS, okO := r.median(wl, "opkit", "ns/event"); okL && okO && lagNS > 0 {
			fmt.Fprintf(tw, "%s\tevents/s, lag metrics on / off\t%.0f\t%.0f\t%.2fx\t-\t\n", wl, 1e9/lagNS, 1e9/offNS, offNS/lagNS)
		}
		allocs, okA := r.median(wl, "opkit", "allocs/event")
		peerAllocs, okB := r.median(wl, "ctrlruntime", "allocs/event")
		if okA && okB {
			fmt.Fprintf(tw, "%s\tallocs/event\t%.2f\t%.2f\t%+.2f\tfewer %s\t\n", wl, allocs, peerAllocs, allocs-peerAllocs,
				check(allocs < peerAllocs))
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRatios are opkit's events/s / controller-runtime's, controller-runtime's CPU / opkit's, and opkit's allocs/event minus controller-runtime's. Targets met: %d of %d.\n", met, total)
}
