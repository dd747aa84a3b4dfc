// Command benchtable reads the output of pkg/queue's, pkg/cache's and
// pkg/source's benchmarks on standard input and prints, for each workload, opkit's
// figures beside its peers', their ratios, and whether each ratio meets its
// target. With several -count runs it takes each row's median.
//
// Usage:
//
//	go test -run '^$' -bench . -benchmem ./pkg/queue/ | go -C hack/benchtable run . [-raw file]
//
// A row is Benchmark<workload>/<impl>, impl being opkit, one of the peers or
// floor, a bare queue that shows what opkit's features cost. Rows of
// <impl>#01 (#02, ...), a sub-benchmark run again, count as <impl>'s.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

var peers = []string{"clientgo", "ctrlruntime"}

// target is the least peer time / opkit time that opkit must reach.
func target(workload, peer string) float64 {
	switch {
	case peer == "ctrlruntime":
		return 3
	case strings.HasPrefix(workload, "Metrics"):
		return 1.5
	default:
		return 1
	}
}

// queueConfig says which configuration the queue table's rows run.
const queueConfig = "Configuration: every queue without metrics (queue.New's default) except in the Metrics rows, which are the configuration of a manager's controllers; opkit with fairness across namespaces and aging on, as controllers use it."

// zeroAllocs holds the workloads in which opkit must not allocate.
var zeroAllocs = map[string]bool{"AddGetDone": true, "ReAdd": true}

// results holds every value of every row: results[workload][impl][unit].
type results map[string]map[string]map[string][]float64

// benchLine matches a result line and splits off the -GOMAXPROCS suffix.
var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+(.+)$`)

// repeatSuffix is what go test appends to the name of a sub-benchmark run
// again under a name it has run before.
var repeatSuffix = regexp.MustCompile(`#\d+$`)

func main() {
	raw := flag.String("raw", "", "also copy the input to this `file`")
	flag.Parse()

	in := io.Reader(os.Stdin)
	var rawFile *os.File
	if *raw != "" {
		var err error
		if rawFile, err = os.Create(*raw); err != nil {
			fatal(err)
		}
		in = io.TeeReader(in, rawFile)
	}
	res, order, err := parse(in)
	if err != nil {
		fatal(err)
	}
	if rawFile != nil {
		if err := rawFile.Close(); err != nil {
			fatal(err)
		}
	}
	if len(order) == 0 {
		fatal(fmt.Errorf("no benchmark results on standard input"))
	}
	queueOrder := slices.DeleteFunc(slices.Clone(order), func(wl string) bool {
		return isCacheWorkload(wl) || isSourceWorkload(wl)
	})
	var tables []func()
	if len(queueOrder) > 0 {
		tables = append(tables, func() { printTable(os.Stdout, res, queueOrder) })
	}
	if slices.ContainsFunc(order, isCacheWorkload) {
		tables = append(tables, func() { printCacheTable(os.Stdout, res) })
	}
	if slices.ContainsFunc(order, isSourceWorkload) {
		tables = append(tables, func() { printSourceTable(os.Stdout, res) })
	}
	for i, print := range tables {
		if i > 0 {
			fmt.Println()
		}
		print()
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "benchtable:", err)
	os.Exit(1)
}

// parse reads benchmark output and returns the results and the workloads in
// the order they first appear. Lines that are neither results nor go test's
// usual chatter go to standard error, so that failures and benchmark logs
// stay visible.
func parse(r io.Reader) (results, []string, error) {
	res := results{}
	var order []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			if !isChatter(line) {
				fmt.Fprintln(os.Stderr, line)
			}
			continue
		}
		i := strings.LastIndexByte(m[1], '/')
		if i < 0 {
			continue // not a Benchmark<workload>/<impl> row
		}
		// A sub-benchmark run again under the same name is named
		// <impl>#01 (#02, ...): its figures are more of impl's.
		workload, impl := m[1][:i], repeatSuffix.ReplaceAllString(m[1][i+1:], "")
		if res[workload] == nil {
			res[workload] = map[string]map[string][]float64{}
			order = append(order, workload)
		}
		if res[workload][impl] == nil {
			res[workload][impl] = map[string][]float64{}
		}
		fields := strings.Fields(m[2])
		for j := 0; j+1 < len(fields); j += 2 {
			v, err := strconv.ParseFloat(fields[j], 64)
			if err != nil {
				return nil, nil, fmt.Errorf("%q: %w", line, err)
			}
			res[workload][impl][fields[j+1]] = append(res[workload][impl][fields[j+1]], v)
		}
	}
	return res, order, sc.Err()
}

func isChatter(line string) bool {
	for _, p := range []string{"goos:", "goarch:", "pkg:", "cpu:", "PASS", "ok "} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return line == ""
}

// median returns the median of a row's values in unit, and false if there
// are none. The time is per item where the benchmark says, else per op.
func (r results) median(workload, impl, unit string) (float64, bool) {
	vs := r[workload][impl][unit]
	if unit == "ns/item" && len(vs) == 0 {
		vs = r[workload][impl]["ns/op"]
	}
	if len(vs) == 0 {
		return 0, false
	}
	vs = slices.Sorted(slices.Values(vs))
	n := len(vs)
	return (vs[(n-1)/2] + vs[n/2]) / 2, true
}

func printTable(w io.Writer, r results, order []string) {
	// tabwriter aligns every column right, so the first is padded here, and
	// the gap between columns is part of each cell.
	width := len("ns/item (median)")
	for _, wl := range order {
		width = max(width, len(wl))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 0, ' ', tabwriter.AlignRight)
	header := []string{"ns/item (median)", "opkit", "clientgo", "vs clientgo", "ctrlruntime", "vs ctrlruntime",
		"floor", "floor/opkit", "opkit allocs/op"}
	met, total := 0, 0
	for i, wl := range append([]string{""}, order...) {
		cells := header
		if i > 0 {
			var m, t int
			cells, m, t = row(r, wl)
			met, total = met+m, total+t
		}
		cells[0] = fmt.Sprintf("%-*s", width, cells[0])
		fmt.Fprintln(tw, strings.Join(cells, "\t  ")+"\t")
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRatios are peer time / opkit time: above 1, opkit is faster. Targets met: %d of %d.\n", met, total)
	fmt.Fprintln(w, queueConfig)
}

// row returns a workload's cells, and how many of its targets opkit met out
// of how many it has.
func row(r results, wl string) (cells []string, met, total int) {
	check := func(pass bool) string {
		met, total = met+btoi(pass), total+1
		if pass {
			return "pass"
		}
		return "MISS"
	}
	opkit, ok := r.median(wl, "opkit", "ns/item")
	cells = []string{wl, num(opkit, ok)}
	for _, peer := range peers {
		t, ok2 := r.median(wl, peer, "ns/item")
		cell := "-"
		if ok && ok2 {
			ratio, want := t/opkit, target(wl, peer)
			cell = fmt.Sprintf("%.2fx (≥%.1fx %s)", ratio, want, check(ratio >= want))
		}
		cells = append(cells, num(t, ok2), cell)
	}
	floor, ok2 := r.median(wl, "floor", "ns/item")
	cell := "-"
	if ok && ok2 {
		cell = fmt.Sprintf("%.2fx", floor/opkit)
	}
	cells = append(cells, num(floor, ok2), cell)
	allocs, ok2 := r.median(wl, "opkit", "allocs/op")
	cell = num(allocs, ok2)
	if ok2 && zeroAllocs[wl] {
		cell += fmt.Sprintf(" (=0 %s)", check(allocs == 0))
	}
	return append(cells, cell), met, total
}

func num(v float64, ok bool) string {
	switch {
	case !ok:
		return "-"
	case v >= 100 || v == 0:
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
