package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// bisect finds the smallest limit that survives to within the precision,
// or says how far it got in the steps it had.
func TestBisect(t *testing.T) {
	const mi = 1 << 20
	for _, tc := range []struct {
		name               string
		need, first, limit int64 // survives if limit >= need
		steps              int
		wantOK, wantFailed int64
		wantTried          int
	}{
		// The first try survives: down from there.
		{name: "first survives", need: 37 * mi, first: 100 * mi, limit: 1024 * mi, steps: 10, wantOK: 38 * mi, wantFailed: 35 * mi, wantTried: 6},
		// The first try fails: up by a quarter until one survives, then halving.
		{name: "first fails", need: 300 * mi, first: 100 * mi, limit: 1024 * mi, steps: 10, wantOK: 302 * mi, wantFailed: 298 * mi, wantTried: 10},
		// Out of steps: the interval is wider than the precision.
		{name: "out of steps", need: 37 * mi, first: 100 * mi, limit: 1024 * mi, steps: 3, wantOK: 50 * mi, wantFailed: 25 * mi, wantTried: 3},
		// A first try at the limit itself is not tried again.
		{name: "first at the limit", need: 37 * mi, first: 2048 * mi, limit: 1024 * mi, steps: 3, wantOK: 1024 * mi, wantTried: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tried []int64
			ok, failed, err := bisect(t.Context(), memoryOptions{precision: 4 * mi, steps: tc.steps}, tc.first, tc.limit,
				func(_ context.Context, limit int64) (bool, error) {
					tried = append(tried, limit)
					return limit >= tc.need, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.wantOK || failed != tc.wantFailed || len(tried) != tc.wantTried {
				t.Errorf("bisect = %d, %d MiB after trying %v MiB; want %d, %d MiB after %d tries",
					ok/mi, failed/mi, mib64(tried), tc.wantOK/mi, tc.wantFailed/mi, tc.wantTried)
			}
			if len(tried) > 0 && tried[0] != min(tc.first, tc.limit) {
				t.Errorf("first try %d MiB, want %d", tried[0]/mi, tc.first/mi)
			}
		})
	}
}

func mib64(bs []int64) []int64 {
	out := make([]int64, len(bs))
	for i, b := range bs {
		out[i] = b >> 20
	}
	return out
}

// The memory scenario's fill is the realistic shape in namespaces of its
// own, two thirds ConfigMaps.
func TestMemoryFill(t *testing.T) {
	got := memoryOptions{objects: 60000, shape: shapeRealistic}.fill()
	want := fillOptions{configMaps: 40000, secrets: 20000, namespaces: 80, shape: shapeRealistic, prefix: "memfill"}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(fillOptions{})); diff != "" {
		t.Errorf("fill (-want +got):\n%s", diff)
	}
	if ns := got.namespace(3); ns != "memfill-03" {
		t.Errorf("namespace 3 is %q, want memfill-03", ns)
	}
}

// A prefixed fill's objects, and the configuration kubectl would have
// applied, are in its own namespaces.
func TestPrefixedFillInAPIServer(t *testing.T) {
	cs, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	f := fillOptions{configMaps: 4, secrets: 2, namespaces: 2, shape: shapeRealistic, prefix: "memtest"}
	if err := fillCluster(t.Context(), cs, f); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unfill(t.Context(), cs, f); err != nil {
			t.Error(err)
		}
	}()
	cms, err := cs.CoreV1().ConfigMaps("").List(t.Context(), metav1.ListOptions{LabelSelector: fillLabel + "=true"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cms.Items {
		if !strings.HasPrefix(c.Namespace, "memtest-") {
			continue
		}
		n++
		if a, ok := c.Annotations[lastApplied]; ok {
			var applied struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			if err := json.Unmarshal([]byte(a), &applied); err != nil {
				t.Fatal(err)
			}
			if applied.Metadata.Namespace != c.Namespace {
				t.Errorf("ConfigMap %s/%s: last applied in namespace %q", c.Namespace, c.Name, applied.Metadata.Namespace)
			}
		}
	}
	if n != f.configMaps {
		t.Errorf("%d ConfigMaps in memtest-NN namespaces, want %d", n, f.configMaps)
	}
}

// The memory table puts opkit beside both of controller-runtime's
// Mirrors, and compares the convergence at the smallest limit survived
// with the measured run's: the trial's there, the measured run's own when
// nothing smaller survived.
func TestMemoryTable(t *testing.T) {
	const mi = 1 << 20
	runs := []runResult{
		{Impl: opkit, Scenario: scenarioMemory, ReadySeconds: 2, Memory: &memoryResult{LimitBytes: 1024 * mi, GoMemLimitBytes: 900 * mi,
			SyncPeakBytes: 120 * mi, SteadyPeakBytes: 100 * mi, SmallestLimitBytes: 80 * mi, ConvergeSeconds: 10, ConvergeCPUSeconds: 2,
			Trials: []memoryTrial{{LimitBytes: 80 * mi, Survived: true, Seconds: 30, CPUSeconds: 9}, {LimitBytes: 76 * mi, Seconds: 200, CPUSeconds: 150}}}},
		{Impl: cr, Scenario: scenarioMemory, ReadySeconds: 4, Memory: &memoryResult{LimitBytes: 1024 * mi, GoMemLimitBytes: 1<<63 - 1,
			SyncPeakBytes: 500 * mi, SteadyPeakBytes: 400 * mi, SmallestLimitBytes: 1024 * mi, ConvergeSeconds: 8, ConvergeCPUSeconds: 4}},
		{Impl: crCM, Scenario: scenarioMemory, ReadySeconds: 3, Memory: &memoryResult{LimitBytes: 1024 * mi, GoMemLimitBytes: 1<<63 - 1,
			SyncPeakBytes: 300 * mi, SteadyPeakBytes: 250 * mi, SmallestLimitBytes: 200 * mi, ConvergeSeconds: 8, ConvergeCPUSeconds: 4,
			Trials: []memoryTrial{{LimitBytes: 200 * mi, Survived: true, Seconds: 12, CPUSeconds: 4}}}},
	}
	d := scenarioDoc(scenarioMemory, "t", runs)
	if diff := cmp.Diff([]string{"figure (median, range)", "opkit", "ctrlruntime", "opkit/ctrlruntime", "ctrlruntime-cm", "opkit/ctrlruntime-cm"}, d.rows[0]); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	rows := map[string][]string{}
	for _, r := range d.rows[1:] {
		rows[r[0]] = r[1:]
	}
	for name, want := range map[string][]string{
		"Go memory limit (MiB, 0: none)":              {"900", "0", "-", "0", "-"},
		"sync peak / steady peak (x)":                 {"1.20 (≤1.2 pass)", "1.25", "0.96x", "1.20", "1.00x"},
		"peak, cgroup (MiB)":                          {"120", "500", "0.24x (≤0.2x MISS)", "300", "0.40x (≤0.2x MISS)"},
		"smallest limit survived (MiB)":               {"80", "1024", "0.08x (≤0.25x pass)", "200", "0.40x (≤0.25x MISS)"},
		"at the smallest limit: time to converge (s)": {"30", "8", "3.75x", "12", "2.50x"},
		"  time / measured run's (x)":                 {"3 (≤2.0 MISS)", "1", "3.00x", "1.50", "2.00x"},
		"at the smallest limit: CPU to converge (s)":  {"9", "4", "2.25x", "4", "2.25x"},
		"  CPU / measured run's (x)":                  {"4.50 (≤3.0 MISS)", "1", "4.50x", "1", "4.50x"},
	} {
		if diff := cmp.Diff(want, rows[name]); diff != "" {
			t.Errorf("row %q (-want +got):\n%s", name, diff)
		}
	}
	if d.met != 2 || d.total != 7 {
		t.Errorf("targets met %d of %d, want 2 of 7", d.met, d.total)
	}
}

func TestParseMemory(t *testing.T) {
	t.Setenv("BENCH_QUICK", "")
	o, err := parse([]string{"-scenarios", "memory", "-memory-objects", "100000", "-memory-shape", "small", "-memory-max", "2048", "-memory-settle", "1s"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := memoryOptions{objects: 100000, shape: shapeSmall, max: 2048 << 20, precision: 4 << 20, steps: 10, settle: time.Second}
	if diff := cmp.Diff(want, o.memory, cmp.AllowUnexported(memoryOptions{})); diff != "" || !cmp.Equal(o.scenarios, []string{scenarioMemory}) {
		t.Errorf("memory options (-want +got):\n%s; scenarios %v", diff, o.scenarios)
	}
	if _, err := parse([]string{"-memory-shape", "huge"}, t.TempDir()); err == nil {
		t.Error("-memory-shape huge accepted")
	}
	if _, err := parse([]string{"-memory-precision", "0"}, t.TempDir()); err == nil {
		t.Error("-memory-precision 0 accepted: the bisection would never stop on its interval")
	}
}

// The fill's mean sizes are read back from the API server, for either
// shape: the small shape's objects are much smaller than the realistic
// shape's.
func TestFillSizes(t *testing.T) {
	cs, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string][2]float64{}
	for _, shape := range shapes {
		f := memoryOptions{objects: 6, shape: shape}.fill()
		f.prefix = "memsize-" + shape
		if err := fillCluster(t.Context(), cs, f); err != nil {
			t.Fatal(err)
		}
		cm, secret, err := fillSizes(t.Context(), cs, f)
		if err := errors.Join(err, unfill(t.Context(), cs, f)); err != nil {
			t.Fatal(err)
		}
		if cm <= 0 || secret <= 0 {
			t.Errorf("shape %s: mean ConfigMap %v B, Secret %v B; want both above 0", shape, cm, secret)
		}
		sizes[shape] = [2]float64{cm, secret}
	}
	if s, r := sizes[shapeSmall], sizes[shapeRealistic]; s[0] >= r[0]/2 || s[1] >= r[1]/2 {
		t.Errorf("small shape's mean sizes %v B not under half the realistic shape's %v B", s, r)
	}
	got := memorySizes([]runResult{{Memory: &memoryResult{FillConfigMapBytes: 3584, FillSecretBytes: 1536}}})
	if want := "; mean size as JSON from the API server: ConfigMap 3.5 KiB, Secret 1.5 KiB"; got != want {
		t.Errorf("memorySizes = %q, want %q", got, want)
	}
}
