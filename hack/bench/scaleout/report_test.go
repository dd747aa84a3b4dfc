package main

import (
	"bytes"
	"github.com/opkit-dev/opkit/pkg/sharding"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opkit-dev/opkit/hack/bench/internal/promtext"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestSummaryAndRatio(t *testing.T) {
	if got, want := summary([]float64{90, 100, 110}, 1), "100.0 (90.0–110.0)"; got != want {
		t.Errorf("summary: got %q, want %q", got, want)
	}
	if got, want := summary([]float64{2.5}, 2), "2.50"; got != want {
		t.Errorf("summary of one: got %q, want %q", got, want)
	}
	if got, want := summary(nil, 1), "—"; got != want {
		t.Errorf("summary of none: got %q, want %q", got, want)
	}
	if got, want := ratio([]float64{100}, []float64{280, 290, 300}), "2.90×"; got != want {
		t.Errorf("ratio: got %q, want %q", got, want)
	}
	if got, want := ratio(nil, []float64{1}), "—"; got != want {
		t.Errorf("ratio without a baseline: got %q, want %q", got, want)
	}
}

func testOptions() options {
	return options{objects: 600, changes: 2, fill: 3000, workers: 2, replicas: 3, rounds: 2, delay: 20 * time.Millisecond,
		lease: 4 * time.Second, renew: 3 * time.Second, retry: 500 * time.Millisecond}
}

func TestTable(t *testing.T) {
	runs := []roundResult{
		{Round: 1, Replicas: 1, ObjectShare: 1, PerSecond: 90, Seconds: 6.6, DependencyCalls: 1000, BusiestShare: 1, CPU: cpuUse{MachineBusy: 0.5, APIServerSeconds: 3, ReplicaSeconds: 1}, HeapAfterSync: []int64{10 << 20}, HeapAtEnd: []int64{12 << 20}, LiveAfterSync: []int64{8 << 20}, LiveAtEnd: []int64{8 << 20}, CallMillis: 56, ReconcileMillis: 55, PatchMillis: 3, HeadSeconds: 0.25},
		{Round: 1, Replicas: 3, PerSecond: 270, Seconds: 2.2, DependencyCalls: 1100, BusiestShare: 0.36, CPU: cpuUse{MachineBusy: 0.9, APIServerSeconds: 3.5, ReplicaSeconds: 1.5}, HeapAfterSync: []int64{10 << 20, 11 << 20, 12 << 20}, HeapAtEnd: []int64{12 << 20, 12 << 20, 12 << 20}, KillSeconds: 5, TakeoverSeconds: 4.5, DeadSlotsSeconds: 4.4, ObjectShare: 0.36, PlanShare: 0.34, LiveAfterSync: []int64{3 << 20, 4 << 20, 4 << 20}, LiveAtEnd: []int64{4 << 20, 4 << 20, 4 << 20}, CallMillis: 60, ReconcileMillis: 59, PatchMillis: 6, TailSeconds: 0.5},
		{Round: 2, Replicas: 1, ObjectShare: 1, PerSecond: 100, Seconds: 6, DependencyCalls: 1000, BusiestShare: 1, CPU: cpuUse{MachineBusy: 0.6, APIServerSeconds: 3, ReplicaSeconds: 1}, HeapAfterSync: []int64{12 << 20}, HeapAtEnd: []int64{12 << 20}, LiveAfterSync: []int64{8 << 20}, LiveAtEnd: []int64{10 << 20}, CallMillis: 58, ReconcileMillis: 57, PatchMillis: 5, HeadSeconds: 0.25, TailSeconds: 0.5},
		{Round: 2, Replicas: 3, PerSecond: 290, Seconds: 2.1, DependencyCalls: 1200, BusiestShare: 0.34, CPU: cpuUse{MachineBusy: 1, APIServerSeconds: 4.5, ReplicaSeconds: 2.5}, HeapAfterSync: []int64{11 << 20, 11 << 20, 11 << 20}, HeapAtEnd: []int64{12 << 20, 12 << 20, 12 << 20}, KillSeconds: 6, TakeoverSeconds: 4.7, DeadSlotsSeconds: 4.6, ObjectShare: 0.34, PlanShare: 0.336, SlotObjects: []float64{10, 20, 10}, PlanLoads: []float64{1, 1, 1}, LiveAfterSync: []int64{3 << 20, 3 << 20, 3 << 20}, LiveAtEnd: []int64{4 << 20, 4 << 20, 4 << 20}, CallMillis: 62, ReconcileMillis: 61, PatchMillis: 8},
	}
	got := newTable(testOptions(), runs)
	want := [][]string{
		{"objects converged/s", "95.0 (90.0–100.0)", "280.0 (270.0–290.0)", "2.95×", "≥ 2.70×"},
		{"seconds to converge", "6.30 (6.00–6.60)", "2.15 (2.10–2.20)", "0.34×", ""},
		{"seconds to write the changes (the driver)", "0.00 (0.00–0.00)", "0.00 (0.00–0.00)", "—", ""},
		{"dependency calls/s", "159.1 (151.5–166.7)", "535.7 (500.0–571.4)", "3.37×", ""},
		{"dependency calls", "1000 (1000–1000)", "1150 (1100–1200)", "1.15×", ""},
		{"busiest replica's share of the calls", "1.000 (1.000–1.000)", "0.350 (0.340–0.360)", "—", ""},
		{"the ratio that share allows", "1.00 (1.00–1.00)", "2.86 (2.78–2.94)", "—", ""},
		{"busiest replica's ms per call (its workers' time between calls)", "57.0 (56.0–58.0)", "61.0 (60.0–62.0)", "1.07×", ""},
		{"of which reconciling, ms per call", "56.0 (55.0–57.0)", "60.0 (59.0–61.0)", "1.07×", ""},
		{"of which its PATCH round trip, ms", "4.0 (3.0–5.0)", "7.0 (6.0–8.0)", "1.75×", ""},
		{"busiest replica's idle head and tail (s)", "0.50 (0.25–0.75)", "0.25 (0.00–0.50)", "—", ""},
		{"longest wait of a slot gained for its cache (s)", "0.00 (0.00–0.00)", "0.00 (0.00–0.00)", "—", ""},
		{"slots moved in the warm-up (balancing)", "0 (0–0)", "0 (0–0)", "—", ""},
		{"slots moved in the timed phase", "0 (0–0)", "0 (0–0)", "—", ""},
		{"busiest replica's share of the objects, after the warm-up", "1.000 (1.000–1.000)", "0.350 (0.340–0.360)", "—", ""},
		{"busiest replica's share of the plan's loads, after the warm-up", "—", "0.338 (0.336–0.340)", "—", ""},
		{"the largest slot's load per object in the plan, over the mean", "—", "0.67", "—", ""},
		{"machine CPU busy (both cores)", "0.55 (0.50–0.60)", "0.95 (0.90–1.00)", "—", ""},
		{"API server CPU seconds", "3.0 (3.0–3.0)", "4.0 (3.5–4.5)", "1.33×", ""},
		{"replicas' CPU seconds (all)", "1.0 (1.0–1.0)", "2.0 (1.5–2.5)", "2.00×", ""},
		{"heap in use per replica after sync, MiB", "11.0 (10.0–12.0)", "11.0 (10.0–12.0)", "1.00×", "≤ 0.43× (1/3 + 10%)"},
		{"heap in use per replica at end, MiB", "12.0 (12.0–12.0)", "12.0 (12.0–12.0)", "1.00×", "≤ 0.43× (1/3 + 10%)"},
		{"live heap per replica after sync (after a collection), MiB", "8.0 (8.0–8.0)", "3.0 (3.0–4.0)", "0.38×", "≤ 0.43× (1/3 + 10%)"},
		{"live heap per replica at end (after a collection), MiB", "9.0 (8.0–10.0)", "4.0 (4.0–4.0)", "0.44×", "≤ 0.43× (1/3 + 10%)"},
		{"seconds until the others claim the slots of 1 of 3 killed", "—", "4.50 (4.40–4.60)", "—", "≤ lease 4s + 2s"},
		{"seconds until the others hold every slot", "—", "4.60 (4.50–4.70)", "—", "≤ lease 4s + 2s"},
		{"seconds to converge after SIGKILL of 1 of 3", "—", "5.50 (5.00–6.00)", "—", "lease 4s + the work left"},
	}
	if diff := cmp.Diff(want, got.rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	for _, s := range []string{"600 objects in one namespace, sharded by UID, each changed 2×", "slots balanced by count", "2 workers per replica", "20ms dependency", "3000 more ConfigMaps", "leases 4s/3s/500ms", "64 slots", "2 rounds"} {
		if !strings.Contains(got.title, s) {
			t.Errorf("title %q does not say %q", got.title, s)
		}
	}
}

func TestTablePrintAndMarkdown(t *testing.T) {
	tb := table{title: "T", header: []string{"figure", "a"}, rows: [][]string{{"objects converged/s", "1.0 (0.5–2.0)"}}}
	var p, md bytes.Buffer
	tb.print(&p)
	if got, want := p.String(), "T\nfigure               a\nobjects converged/s  1.0 (0.5–2.0)\n"; got != want {
		t.Errorf("print: got\n%q\nwant\n%q", got, want)
	}
	tb.markdown(&md)
	if got, want := md.String(), "### T\n\n| figure | a |\n| --- | --- |\n| objects converged/s | 1.0 (0.5–2.0) |\n"; got != want {
		t.Errorf("markdown: got\n%q\nwant\n%q", got, want)
	}
}

func TestParseGauge(t *testing.T) {
	body := "# HELP go_memstats_heap_inuse_bytes x\ngo_memstats_heap_inuse_bytes 1.2e+07\nopkit_sharding_members 3\nopkit_sharding_slots_held{x=\"y\"} 2\n"
	for _, tc := range []struct {
		name string
		want float64
	}{{heapMetric, 1.2e7}, {membersMetric, 3}} {
		got, err := promtext.Gauge(strings.NewReader(body), tc.name)
		if err != nil || got != tc.want {
			t.Errorf("promtext.Gauge(%s) = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := promtext.Gauge(strings.NewReader(body), heldMetric); err == nil {
		t.Errorf("promtext.Gauge(%s) of a labelled line: got no error, want %v", heldMetric, promtext.ErrNoMetric)
	}
}

func TestParse(t *testing.T) {
	t.Setenv("BENCH_QUICK", "")
	o, err := parse(nil, "/root")
	if err != nil {
		t.Fatal(err)
	}
	if o.objects != 1800 || o.changes != 1 || o.delay != 50*time.Millisecond || o.fill != 3000 || o.rounds != 3 || o.workers != 2 || o.replicas != 3 || o.lease != 4*time.Second || o.out != "/root/bench/results" {
		t.Errorf("defaults: got %+v", o)
	}
	t.Setenv("BENCH_QUICK", "1")
	if o, err = parse(nil, "/root"); err != nil || o.objects != 120 || o.fill != 600 || o.rounds != 1 {
		t.Errorf("BENCH_QUICK=1: got %+v, %v; want 120 objects, 600 filler, 1 round", o, err)
	}
	for _, args := range [][]string{{"-objects", "1"}, {"-replicas", "1"}, {"-renew-deadline", "5s"}, {"-retry-period", "0s"}} {
		if _, err := parse(args, "/root"); err == nil {
			t.Errorf("parse(%v): got no error", args)
		}
	}
}

func TestParseCPULine(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	busy, total, err := parseCPULine("cpu  100 5 50 800 40 3 2 0 7 0")
	if err != nil {
		t.Fatal(err)
	}
	if busy != 160 || total != 1000 {
		t.Errorf("got busy %d, total %d; want 160 and 1000 (idle and iowait are not busy, guest is in user)", busy, total)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4", "cpu 1 2 x 4 5"} {
		if _, _, err := parseCPULine(bad); err == nil {
			t.Errorf("parseCPULine(%q): no error", bad)
		}
	}
	a := cpuSample{busy: 100, total: 400, apiServer: 1, replicas: []float64{1, 2}}
	b := cpuSample{busy: 300, total: 600, apiServer: 4, replicas: []float64{2, 4}}
	if got, want := a.until(b), (cpuUse{MachineBusy: 1, APIServerSeconds: 3, ReplicaSeconds: 3}); got != want {
		t.Errorf("until: got %+v, want %+v", got, want)
	}
}

// The skewed layout puts every object in one of 100 namespaces, the
// largest holding about 12% of them and each rank no more than the one
// before; the uniform one puts them all in one.
func TestLayout(t *testing.T) {
	l := newLayout(true, 1800)
	sizes := map[string]int{}
	for i := range 1800 {
		sizes[l.of(i)]++
	}
	ns := l.namespaces()
	if len(ns) != hotNamespaces || len(sizes) != hotNamespaces {
		t.Fatalf("%d namespaces listed, %d used; want %d", len(ns), len(sizes), hotNamespaces)
	}
	if got := float64(sizes[ns[0]]) / 1800; got < 0.11 || got > 0.13 {
		t.Errorf("the largest namespace holds %.3f of the objects, want about 0.12", got)
	}
	for k := 1; k < len(ns)-1; k++ { // the last takes rounding's remainder
		if sizes[ns[k]] > sizes[ns[k-1]] {
			t.Errorf("namespace %s (%d) is larger than %s (%d)", ns[k], sizes[ns[k]], ns[k-1], sizes[ns[k-1]])
		}
	}
	slots, _ := sharding.NewSlots(64)
	used := map[int]bool{}
	for _, n := range ns {
		used[slots.OfValue(n)] = true
	}
	if len(used) < 40 {
		t.Errorf("the %d namespaces fall in %d of 64 slots, want them spread over most", len(ns), len(used))
	}
	if u := newLayout(false, 10); u.of(7) != workNamespace || len(u.namespaces()) != 1 {
		t.Errorf("uniform layout: %q, %v", u.of(7), u.namespaces())
	}
}

// The capacity table sets each count's rate against one replica's and
// against timebertt's published curve where it has a point.
func TestCapacityTable(t *testing.T) {
	o := testOptions()
	o.probes, o.window = 6, 15*time.Second
	got := capacityTable(o, []capacityResult{
		{Replicas: 1, Rate: 36, At: probe{Rate: 36, QueueP99: 0.5, ReconcileP99: 0.06, BusiestShare: 1, CPU: cpuUse{MachineBusy: 0.2, APIServerSeconds: 3}, Met: true},
			Probes: []probe{{Rate: 40, Met: false}, {Rate: 36, Met: true}, {Rate: 38, Met: false}}},
		{Replicas: 5, Rate: 171, At: probe{Rate: 171, QueueP99: 0.9, ReconcileP99: 0.07, BusiestShare: 0.205, CPU: cpuUse{MachineBusy: 0.62, APIServerSeconds: 10.5}, Met: true},
			Probes: []probe{{Rate: 150, Met: true}, {Rate: 171, Met: true}, {Rate: 120, Met: false}}},
		{Replicas: 8, Rate: 270, At: probe{Rate: 270, QueueP99: 0.8, ReconcileP99: 0.08, BusiestShare: 0.13, CPU: cpuUse{MachineBusy: 0.9, APIServerSeconds: 15}, Met: true}},
	})
	want := [][]string{
		{"1", "36.0", "38.0", "1.00×", "1.00×", "0.500", "0.060", "1.000", "1.00×", "20%", "0.20"},
		{"5", "171.0", "—", "4.75×", "2.98×", "0.900", "0.070", "0.205", "4.88×", "62%", "0.70"},
		{"8", "270.0", "—", "7.50×", "—", "0.800", "0.080", "0.130", "7.69×", "90%", "1.00"},
	}
	if diff := cmp.Diff(want, got.rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if !strings.Contains(got.title, "p99 queue ≤ 1s and reconcile ≤ 5s") {
		t.Errorf("title %q does not state the objective", got.title)
	}
}
