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
	testenv.Main(m, testenv.Options{FeatureGates: map[string]bool{shardGate: true}}, func(e *testenv.Environment) { env = e })
}

// The whole benchmark at a tiny size on the package's control plane: the
// operator builds, one and three replicas settle, converge, report their
// heaps, and the objects converge after a replica is killed.
func TestBenchSmoke(t *testing.T) {
	root, err := repo.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o, err := parse([]string{"-objects", "8", "-changes", "1", "-fill", "10", "-rounds", "1", "-out", dir, "-bin", dir}, root)
	if err != nil {
		t.Fatal(err)
	}
	if err := bench(t.Context(), o, root, env); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "scaleout-runs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var runs []roundResult
	if err := json.Unmarshal(b, &runs); err != nil {
		t.Fatal(err)
	}
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
	if runs[1].KillSeconds <= 0 || runs[1].TakeoverSeconds <= 0 {
		t.Errorf("3 replicas: KillSeconds = %v, TakeoverSeconds = %v; want the times to converge and to take over after the kill", runs[1].KillSeconds, runs[1].TakeoverSeconds)
	}
	md, err := os.ReadFile(filepath.Join(dir, "scaleout.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| objects converged/s |") {
		t.Errorf("scaleout.md has no throughput row:\n%s", md)
	}
}
