package manager_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// memLimitChild is the environment variable that makes the test binary
// a child of TestMemoryLimitFromCgroup: its value is the child's
// MemoryLimitOptions.Off.
const memLimitChild = "OPKIT_TEST_MEMLIMIT_CHILD"

// A manager started in a cgroup with a memory limit sets the Go memory
// limit to 90% of it less the binary's resident pages, as the process
// measured them (opkit_memory_reserved_bytes), unless GOMEMLIMIT is set
// or MemoryLimit.Off; a child process of the test binary runs inside a
// cgroup made for it.
func TestMemoryLimitFromCgroup(t *testing.T) {
	const cgroupLimit = 128 << 20
	ratio := 0.9 // the default
	dir := memoryCgroup(t, cgroupLimit)
	share := func(r float64) func(reserved int64) int64 {
		return func(reserved int64) int64 { return int64(float64(cgroupLimit-reserved) * r) }
	}
	fixed := func(b int64) func(int64) int64 { return func(int64) int64 { return b } }
	for _, tt := range []struct {
		name     string
		env      []string
		off      bool
		want     func(reserved int64) int64
		reserves bool
	}{
		{"default", nil, false, share(ratio), true},
		{"AUTOMEMLIMIT overrides the ratio", []string{"AUTOMEMLIMIT=0.5"}, false, share(0.5), true},
		// The reserve is measured whenever the manager watches memory.
		{"GOMEMLIMIT wins", []string{"GOMEMLIMIT=50MiB"}, false, fixed(50 << 20), true},
		{"off", nil, true, fixed(math.MaxInt64), false},
		{"AUTOMEMLIMIT off", []string{"AUTOMEMLIMIT=off"}, false, fixed(math.MaxInt64), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, reserved, log := runInCgroup(t, dir, tt.off, tt.env)
			// The test binary's resident pages: several MiB, below the limit.
			if tt.reserves != (reserved > 1<<20 && reserved < cgroupLimit/2) {
				t.Errorf("measured %d bytes of the binary's resident pages; want some MiB: %v", reserved, tt.reserves)
			}
			if want := tt.want(reserved); got != want {
				t.Errorf("the Go memory limit in a cgroup limited to %d bytes, %d reserved = %d, want %d; the child logged:\n%s", cgroupLimit, reserved, got, want, log)
			}
			if !tt.off && !strings.Contains(log, "Go memory limit") {
				t.Errorf("the child did not log the limit:\n%s", log)
			}
		})
	}
}

// memoryCgroup makes a cgroup below the test's own with the memory limit,
// removed at the end of the test, and returns its directory; it skips the
// test where cgroups cannot be made.
func memoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skipf("no cgroups here (%v): the memory limit is set from a cgroup's", err)
	}
	var root, own, file string
	for line := range strings.Lines(string(self)) {
		id, rest, _ := strings.Cut(strings.TrimSpace(line), ":")
		controllers, p, _ := strings.Cut(rest, ":")
		switch {
		case strings.Contains(","+controllers+",", ",memory,"):
			root, own, file = "/sys/fs/cgroup/memory", p, "memory.limit_in_bytes"
		case id == "0" && root == "":
			if c, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil && strings.Contains(string(c), "memory") {
				root, own, file = "/sys/fs/cgroup", p, "memory.max"
			}
		}
	}
	if root == "" {
		t.Skip("no cgroup memory controller here (v1 memory hierarchy, or v2 with memory enabled)")
	}
	dir := filepath.Join(root, own, fmt.Sprintf("opkit-memlimit-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup (run as root with cgroups writable): %v", err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove the test cgroup: %v", err)
		}
	})
	if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
		t.Skipf("cannot limit the memory of a cgroup (the memory controller is not enabled for it?): %v", err)
	}
	return dir
}

// runInCgroup runs the test binary as a manager in the cgroup dir and
// returns its Go memory limit after Start, what it reserved for its
// resident pages (opkit_memory_reserved_bytes), and what it logged.
func runInCgroup(t *testing.T, dir string, off bool, env []string) (limit, reserved int64, log string) {
	t.Helper()
	line, log := childInCgroup(t, dir, append(env, memLimitChild+"="+strconv.FormatBool(off)))
	if _, err := fmt.Sscan(line, &limit, &reserved); err != nil {
		t.Fatalf("the child printed %q, not its memory limit and reserve:\n%s", line, log)
	}
	return limit, reserved, log
}

// childInCgroup runs the test binary with env added in the cgroup dir,
// tells it to go once it is there, and returns the first line it printed
// and what it logged; it fails t if the child fails (is killed for lack
// of memory, say).
func childInCgroup(t *testing.T, dir string, env []string) (line, log string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// In the cgroup before the child reads it: it waits for a line.
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("move the child into the cgroup: %v", err)
	}
	fmt.Fprintln(stdin, "go")
	out := bufio.NewScanner(stdout)
	out.Scan()
	line = out.Text()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the child failed: %v\n%s", err, stderr.String())
	}
	return line, stderr.String()
}

// runMemLimitChild is the child of runInCgroup: once told to go, it starts
// a manager of an API server that does not answer, and prints its Go
// memory limit after Start returned.
func runMemLimitChild(off string) int {
	bufio.NewScanner(os.Stdin).Scan()
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	m, err := manager.New(&rest.Config{Host: "http://127.0.0.1:1"}, manager.Options{
		Metrics:     manager.MetricsOptions{BindAddress: "0"},
		MemoryLimit: manager.MemoryLimitOptions{Off: off == "true"},
		Logger:      log,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := m.Start(context.Background()); !errors.Is(err, manager.ErrUnreachable) {
		fmt.Fprintln(os.Stderr, "Start =", err, "want ErrUnreachable")
		return 1
	}
	fmt.Println(debug.SetMemoryLimit(-1), int64(childGauge(m, imetrics.MemoryReserved)))
	return 0
}

// childGauge returns the value of m's gauge name, 0 if it has none.
func childGauge(m *manager.Manager, name string) float64 {
	mfs, err := m.Registry().Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}
