package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opkit-dev/opkit/hack/bench/internal/promtext"
)

func TestPercentile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // 100 … 1, unsorted
	}
	for _, tc := range []struct {
		name string
		in   []float64
		p    float64
		want float64
	}{
		{"none", nil, 99, 0},
		{"one", []float64{7}, 99, 7},
		{"median of odd", []float64{5, 1, 3}, 50, 3},
		{"median of even: the lower", []float64{4, 1, 3, 100}, 50, 3},
		{"p99 of 100: the 99th", hundred, 99, 99},
		{"max", hundred, 100, 100},
		{"p99 of 10: the max", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99, 10},
		{"p90 of 10", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.in, tc.p); got != tc.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tc.in, tc.p, got, tc.want)
			}
		})
	}
}

func TestOver(t *testing.T) {
	if got := over([]float64{0.5, 1, 1.01, 3}, 1); got != 2 {
		t.Errorf("over = %v, want 2 (1 itself is not over)", got)
	}
}

func TestParseScenarios(t *testing.T) {
	got, err := parseScenarios("noisy, original,noisy")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{scenarioOriginal, scenarioNoisy}, got); diff != "" {
		t.Errorf("scenarios (-want +got):\n%s", diff)
	}
	if _, err := parseScenarios("original,loud"); err == nil || !strings.Contains(err.Error(), `"loud"`) {
		t.Errorf("an unknown scenario gave %v", err)
	}
}

func TestParseDefaults(t *testing.T) {
	t.Setenv("BENCH_QUICK", "")
	o, err := parse(nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{scenarioOriginal, scenarioFill, scenarioNoisy}, o.scenarios); diff != "" {
		t.Errorf("default scenarios (-want +got):\n%s", diff)
	}
	if o.fill.configMaps < 20000 || o.fill.secrets < 10000 || o.noisy.flood < 1000 || o.rounds < 5 || o.memory.objects < 60000 {
		t.Errorf("defaults %+v are below the issue's workload", o)
	}
	t.Setenv("BENCH_QUICK", "1")
	if o, err = parse(nil, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if o.fill.configMaps != 2000 || o.fill.secrets != 1000 || o.noisy.quiet != 5 || o.noisy.flood != 100 || o.rounds != 1 {
		t.Errorf("quick defaults %+v", o)
	}
	if _, err := parse([]string{"-quiet-every=0"}, t.TempDir()); err == nil {
		t.Error("-quiet-every=0 accepted: the open-loop schedule would issue without end")
	}
}

func TestParseFillShape(t *testing.T) {
	t.Setenv("BENCH_QUICK", "")
	for _, tc := range []struct {
		args    []string
		want    string
		wantErr bool
	}{
		{args: nil, want: shapeRealistic},
		{args: []string{"-fill-shape", "small"}, want: shapeSmall},
		{args: []string{"-fill-shape", "tiny"}, wantErr: true},
	} {
		o, err := parse(tc.args, t.TempDir())
		if (err != nil) != tc.wantErr {
			t.Errorf("parse(%q): error %v, want error %v", tc.args, err, tc.wantErr)
		}
		if err == nil && o.fill.shape != tc.want {
			t.Errorf("parse(%q): shape %q, want %q", tc.args, o.fill.shape, tc.want)
		}
	}
}

// The fill's table says which shape its objects have.
func TestFillTitleNamesShape(t *testing.T) {
	for shape, want := range map[string]string{
		shapeRealistic: "(half kubectl client-side apply, half server-side apply, 3–6 keys of 150 B–3 KiB each)",
		shapeSmall:     "(small: one 16-byte key, one label, no annotation, plain create)",
	} {
		o := options{namespaces: 2, sources: 3, workers: 4, rounds: 1, fill: fillOptions{configMaps: 10, secrets: 5, namespaces: 2, shape: shape}}
		if title := o.titles(time.Now())[scenarioFill]; !strings.Contains(title, want) {
			t.Errorf("shape %s: title %q does not say %q", shape, title, want)
		}
	}
}

func TestScenarioImpls(t *testing.T) {
	if diff := cmp.Diff([]string{opkit, cr}, scenarioImpls(scenarioNoisy, []string{opkit, cr, bare})); diff != "" {
		t.Errorf("noisy runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{opkit, cr, bare, noRYW, self}, scenarioImpls(scenarioFill, impls)); diff != "" {
		t.Errorf("fill runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{opkit, cr, crCM}, scenarioImpls(scenarioMemory, impls)); diff != "" {
		t.Errorf("memory runs (-want +got):\n%s", diff)
	}
}

func TestFillTable(t *testing.T) {
	runs := []runResult{
		{Impl: opkit, Scenario: scenarioFill, ReadySeconds: 2, HeapAfterSyncBytes: 40 << 20, PeakRSSBytes: 100 << 20, CPUSeconds: 5, CreateSeconds: 9, UpdateSeconds: 4},
		{Impl: cr, Scenario: scenarioFill, ReadySeconds: 3, HeapAfterSyncBytes: 200 << 20, PeakRSSBytes: 150 << 20, CPUSeconds: 10, CreateSeconds: 10, UpdateSeconds: 4},
		{Impl: bare, Scenario: scenarioFill, CPUSeconds: 1, PeakRSSBytes: 20 << 20, CreateSeconds: 8, UpdateSeconds: 5},
	}
	d := scenarioDoc(scenarioFill, "t", runs)
	want := [][]string{
		header,
		{"time to ready (s)", "2", "3", "0.67x (≤1.0x pass)", "-", "-", "-", "-", "-", "-"},
		{"heap after sync (MiB)", "40", "200", "0.20x (≤0.4x pass)", "-", "-", "-", "-", "-", "-"},
		{"peak RSS (MiB)", "100", "150", "0.67x (≤0.5x MISS)", "-", "-", "-", "-", "-", "-"},
		{"CPU (s)", "5", "10", "0.50x (≤0.6x pass)", "-", "-", "-", "-", "-", "-"},
		{"wall, create phase (s)", "9", "10", "0.90x (≤1.0x pass)", "8", "1.12x", "-", "-", "-", "-"},
		{"wall, update phase (s)", "4", "4", "1.00x (≤1.0x pass)", "5", "0.80x", "-", "-", "-", "-"},
		{"API requests", "0", "0", "-", "0", "-", "-", "-", "-", "-"},
		{"  failed (4xx, 5xx)", "0", "0", "-", "0", "-", "-", "-", "-", "-"},
	}
	if diff := cmp.Diff(want, d.rows); diff != "" {
		t.Errorf("fill table (-want +got):\n%s", diff)
	}
	if d.met != 5 || d.total != 6 {
		t.Errorf("targets met %d of %d, want 5 of 6", d.met, d.total)
	}
}

func TestNoisyTable(t *testing.T) {
	quiet := func(v float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	runs := []runResult{
		{Impl: opkit, Scenario: scenarioNoisy, Noisy: &noisyResult{
			QuietFloor: quiet(0.1, 50), QuietFlood: append(quiet(0.1, 98), 0.2, 0.3), FloodCreateSeconds: 20, FloodBurstSeconds: 10,
			QuietFloodIssued: 100, QuietFloodIssuingSeconds: 2.5}, Requests: map[string]int64{"PATCH": 300, "GET": 10}, APIServerCPUSeconds: 30},
		{Impl: cr, Scenario: scenarioNoisy, Noisy: &noisyResult{
			QuietFloor: quiet(0.1, 50), QuietFlood: append(quiet(2, 90), quiet(10, 10)...), FloodCreateSeconds: 25, FloodBurstSeconds: 15,
			QuietFloodIssued: 140, QuietFloodIssuingSeconds: 3.5}, Requests: map[string]int64{"PATCH": 200}, APIServerCPUSeconds: 20},
	}
	d := scenarioDoc(scenarioNoisy, "t", runs)
	got := map[string][]string{}
	for _, r := range d.rows[1:] {
		got[r[0]] = r[1:4]
	}
	for name, want := range map[string][]string{
		"quiet change, flood, p99 (s)":     {"0.20", "10", "0.02x (≤0.05x pass)"},
		"quiet change, flood, max (s)":     {"0.30", "10", "0.03x"},
		"quiet changes, flood, over 1 s":   {"0", "100", "0.00x"},
		"quiet p99, flood / no flood (x)":  {"2 (≤2.0 pass)", "100", "0.02x"},
		"quiet change, no flood, p99 (s)":  {"0.10", "0.10", "1.00x"},
		"flood, total (s)":                 {"30", "40", "0.75x (≤1.0x pass)"},
		"flood, burst → copies follow (s)": {"10", "15", "0.67x"},
		// The offered quiet load: the same rate, more changes for the
		// longer flood.
		"quiet changes issued, flood":            {"100", "140", "0.71x"},
		"quiet changes issued per second, flood": {"40", "40", "1.00x"},
		// The work done for it.
		"API requests":       {"310", "200", "1.55x"},
		"API server CPU (s)": {"30", "20", "1.50x"},
		"  PATCH":            {"300", "200", "1.50x"},
	} {
		if diff := cmp.Diff(want, got[name]); diff != "" {
			t.Errorf("row %q (-want +got):\n%s", name, diff)
		}
	}
	if d.met != 3 || d.total != 3 {
		t.Errorf("targets met %d of %d, want 3 of 3", d.met, d.total)
	}
	for _, r := range d.rows[1:] {
		if r[4] != "-" {
			t.Errorf("row %q has a bare cell %q: the bare client does not run this scenario", r[0], r[4])
		}
	}
}

// -from reads runs written before the quiet tenants were open-loop: they
// lack the offered load, and the table counts their measured changes as
// issued and shows no rate.
func TestNoisyRunsBeforeOpenLoop(t *testing.T) {
	old := `[{"impl":"ctrlruntime","scenario":"noisy","round":1,"noisy":{"quietFlood":[0.5,0.25,2],"quietFloor":[0.125],"floodCreateSeconds":3,"floodBurstSeconds":4}}]`
	var runs []runResult
	if err := json.Unmarshal([]byte(old), &runs); err != nil {
		t.Fatal(err)
	}
	n := runs[0].Noisy
	if got := quietFloodIssued(n); got != 3 {
		t.Errorf("issued %v, want the 3 measured", got)
	}
	if got := quietFloodRate(n); got != 0 {
		t.Errorf("rate %v, want 0: not recorded", got)
	}
	var b strings.Builder
	writeNoisyRuns(&b, runs)
	if want := "| 1 | ctrlruntime | 0.125 / 0.125 / 0.125, 1 | 0.500 / 2.000 / 2.000, 3 | 3, 0.0 | 3.00 | 4.00 |"; !strings.Contains(b.String(), want) {
		t.Errorf("runs table lacks %q:\n%s", want, b.String())
	}
}

func TestParseGauge(t *testing.T) {
	metrics := `# HELP go_memstats_heap_inuse_bytes Number of heap bytes that are in use.
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes_total 1
go_memstats_heap_inuse_bytes 1.2345678e+07
`
	v, err := promtext.Gauge(strings.NewReader(metrics), heapMetric)
	if err != nil || v != 12345678 {
		t.Errorf("parseGauge = %v, %v; want 12345678", v, err)
	}
	if _, err := promtext.Gauge(strings.NewReader("go_goroutines 3\n"), heapMetric); !errors.Is(err, promtext.ErrNoMetric) {
		t.Errorf("a missing metric gave %v, want promtext.ErrNoMetric", err)
	}
}

func TestReportEveryScenario(t *testing.T) {
	dir := t.TempDir()
	runs := []runResult{
		{Impl: opkit, Round: 1, CreateSeconds: 1}, // written before scenarios: the original
		{Impl: opkit, Scenario: scenarioFill, Round: 1, ReadySeconds: 2, HeapAfterSyncBytes: 1 << 20},
		{Impl: cr, Scenario: scenarioNoisy, Round: 1, Noisy: &noisyResult{QuietFlood: []float64{0.25}, QuietFloor: []float64{0.125}}},
		{Impl: opkit, Scenario: scenarioMemory, Round: 1, Memory: &memoryResult{LimitBytes: 1 << 30, SmallestLimitBytes: 64 << 20,
			Trials: []memoryTrial{{LimitBytes: 64 << 20, Survived: true}, {LimitBytes: 32 << 20, Why: "1 OOM kills", OOMKills: 1, Seconds: 95.5, CPUSeconds: 40.25, LoadAvg: 3.5}}}},
	}
	titles := map[string]string{scenarioOriginal: "T-original", scenarioFill: "T-fill", scenarioNoisy: "T-noisy", scenarioMemory: "T-memory"}
	if err := report(dir, titles, runs); err != nil {
		t.Fatal(err)
	}
	md := string(mustRead(t, dir+"/e2e.md"))
	for _, want := range []string{"### T-original\n", "### T-fill\n", "### T-noisy\n", "| time to ready (s) | 2 |", "| 1 | ctrlruntime | 0.125 / 0.125 / 0.125, 1 | 0.250 / 0.250 / 0.250, 1 |",
		"### T-memory\n", "| smallest limit survived (MiB) | 64 |", "| opkit | 32 | false | 0.00 | 95.50 | 40.25 | 0.0 | 1 | 3.5 | 1 OOM kills |"} {
		if !strings.Contains(md, want) {
			t.Errorf("e2e.md lacks %q:\n%s", want, md)
		}
	}
	var back []runResult
	if err := json.Unmarshal(mustRead(t, dir+"/e2e-runs.json"), &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(runs, back); diff != "" {
		t.Errorf("e2e-runs.json does not give the runs back (-want +got):\n%s", diff)
	}
}

// processCPU reads the API server's CPU from its /metrics text, and says
// so when it is not there.
func TestProcessCPU(t *testing.T) {
	got, err := processCPU([]byte("# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.34\nprocess_max_fds 1024\n"))
	if err != nil || got != 12.34 {
		t.Errorf("processCPU = %v, %v, want 12.34", got, err)
	}
	if _, err := processCPU([]byte("process_max_fds 1024\n")); err == nil || !strings.Contains(err.Error(), "process_cpu_seconds_total") {
		t.Errorf("processCPU without the metric = %v, want an error naming it", err)
	}
}
