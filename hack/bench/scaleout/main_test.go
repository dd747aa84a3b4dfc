package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opkit-dev/opkit/hack/bench/internal/repo"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{OptionalFeatureGates: map[string]bool{shardGate: true}}, func(e *testenv.Environment) { env = e })
}

// The whole benchmark at a tiny size on the package's control plane: the
// operator builds, one and three replicas settle, converge, report their
// heaps, and the objects converge after a replica is killed.
func TestBenchSmoke(t *testing.T) {
	dir := runBench(t, "-objects", "8", "-changes", "1", "-fill", "10", "-rounds", "1")
	runs := readJSON[[]roundResult](t, filepath.Join(dir, "scaleout-runs.json"))
	if len(runs) != 2 || runs[0].Replicas != 1 || runs[1].Replicas != 3 {
		t.Fatalf("runs: got %+v, want one round of 1 replica, then of 3", runs)
	}
	for _, r := range runs {
		if r.PerSecond <= 0 || r.DependencyCalls < int64(r.Objects) || len(r.HeapAfterSync) != r.Replicas || len(r.HeapAtEnd) != r.Replicas {
			t.Errorf("round of %d replicas: got %+v, want a rate, a dependency call per object at least and a heap per replica", r.Replicas, r)
		}
	}
	// The replicas' CPU comes from process_cpu_seconds_total, which counts
	// in clock ticks of 10 ms: a replica of this smoke round may spend less
	// than one between the samples, so zero is a reading, a negative
	// figure a bug.
	for _, r := range runs {
		if r.BusiestShare < 1/float64(r.Replicas) || r.BusiestShare > 1 || r.CPU.MachineBusy <= 0 || r.CPU.APIServerSeconds <= 0 || r.CPU.ReplicaSeconds < 0 {
			t.Errorf("round of %d replicas: busiest share %v, CPU %+v; want a share in [1/%d, 1], machine and API server CPU spent, replica CPU not negative", r.Replicas, r.BusiestShare, r.CPU, r.Replicas)
		}
	}
	for _, r := range runs {
		if r.ObjectShare < 1/float64(r.Replicas) || r.ObjectShare > 1 {
			t.Errorf("round of %d replicas: busiest share of the objects %v, want it in [1/%d, 1]", r.Replicas, r.ObjectShare, r.Replicas)
		}
	}
	if r := runs[1]; r.KillSeconds <= 0 || r.TakeoverSeconds <= 0 || r.DeadSlotsSeconds <= 0 || r.DeadSlotsSeconds > r.KillSeconds {
		t.Errorf("3 replicas: KillSeconds = %v, TakeoverSeconds = %v, DeadSlotsSeconds = %v; want the times to converge, to take over and to claim the killed replica's slots after the kill, the claims before convergence", r.KillSeconds, r.TakeoverSeconds, r.DeadSlotsSeconds)
	}
	md, err := os.ReadFile(filepath.Join(dir, "scaleout.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| objects converged/s |") {
		t.Errorf("scaleout.md has no throughput row:\n%s", md)
	}
}

// The capacity mode at a tiny size: each replica count is staged, warmed
// and probed at rates by bisection, every probe reads the replicas'
// histograms and the CPU spent over its window, and the table is written.
// Whether a probe meets the objective depends on the machine, so only the
// readings are checked.
func TestCapacitySmoke(t *testing.T) {
	dir := runBench(t, "-capacity", "1,2", "-probes", "2", "-window", "1500ms", "-objects", "8", "-fill", "10")
	res := readJSON[[]capacityResult](t, filepath.Join(dir, "scaleout-capacity.json"))
	if len(res) != 2 || res[0].Replicas != 1 || res[1].Replicas != 2 {
		t.Fatalf("results: got %+v, want 1 replica, then 2", res)
	}
	for _, r := range res {
		if len(r.Probes) != 2 {
			t.Errorf("%d replicas: %d probes, want 2", r.Replicas, len(r.Probes))
		}
		for _, p := range r.Probes {
			if p.Achieved <= 0 || p.CPU.MachineBusy <= 0 || p.CPU.APIServerSeconds <= 0 || p.BusiestShare < 1/float64(r.Replicas) || p.BusiestShare > 1 {
				t.Errorf("%d replicas, probe at %.1f/s: got %+v, want changes written, machine and API server CPU spent, a busiest share in [1/%d, 1]", r.Replicas, p.Rate, p, r.Replicas)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "scaleout-capacity.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| replicas | changes/s | first missed |") {
		t.Errorf("scaleout-capacity.md has no table:\n%s", md)
	}
}

// runBench runs the benchmark with args on the package's control plane,
// its results and binaries in a directory of the test's, which it
// returns.
func runBench(t *testing.T, args ...string) string {
	t.Helper()
	root, err := repo.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o, err := parse(append(args, "-out", dir, "-bin", dir), root)
	if err != nil {
		t.Fatal(err)
	}
	if err := bench(t.Context(), filterFor(o, env), root, env); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readJSON decodes the JSON file at path into a T.
func readJSON[T any](t *testing.T, path string) T {
	t.Helper()
	var v T
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &v)
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}
