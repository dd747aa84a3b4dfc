package source_test

import (
	"io"
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// loadEnv, set in a process's environment, makes the test binary a load
// (see spin) rather than run tests.
const loadEnv = "OPKIT_BENCH_LOAD"

// withLoad runs a copy of the test binary beside b that keeps every core
// busy until b ends, so that b measures its work while the scheduler
// shares the cores with another process, as on a busy node. Its CPU time
// is its own, not counted in b's cpu-ns/event.
func withLoad(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatalf("start the load: %v", err)
	}
	cmd := exec.Command(self, "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), loadEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatalf("start the load: %v", err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start the load: %v", err)
	}
	b.Cleanup(func() {
		stdin.Close() // ends it, as the benchmark's own end would
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
}

// spin keeps every core busy until its standard input closes, which it
// does when the benchmark that started it ends, whether it ends well or
// not: the load never outlives it.
func spin() {
	for range runtime.GOMAXPROCS(0) {
		go func() {
			//lint:ignore SA5002 spinning is the load's purpose
			for {
			}
		}()
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}
