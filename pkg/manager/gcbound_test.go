package manager_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/opkit-dev/opkit/pkg/manager"
)

// gcBoundChild is the environment variable that makes the test binary a
// child of TestGCBoundFails: its value is the kubeconfig to use.
const gcBoundChild = "OPKIT_TEST_GCBOUND_CHILD"

// A manager whose live heap does not fit the Go memory limit it set from
// its container's does not spin in the collector for ever: once the
// collector has taken most of the CPU for MemoryLimitOptions.GCBoundExit,
// Start fails with ErrGCBound and says how large a limit would fit, before
// the kernel kills it. The child process runs in a cgroup made for it,
// with a Ratio that leaves room for the race detector's shadow memory,
// which the cgroup is charged for and the Go limit does not count.
func TestGCBoundFails(t *testing.T) {
	const cgroupLimit = 1 << 30
	dir := memoryCgroup(t, cgroupLimit)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	line, log := childInCgroup(t, dir, []string{gcBoundChild + "=" + kubeconfig})
	t.Logf("the child: %s", line)
	for _, want := range []string{"ErrGCBound", "raise the container's memory limit to at least", "MiB for the binary's resident pages, times 0.1"} {
		if !strings.Contains(line, want) {
			t.Errorf("the child's Start returned %q, which does not say %q; it logged:\n%s", line, want, log)
		}
	}
}

// runGCBoundChild is the child of TestGCBoundFails: once told to go, it
// starts a manager, then holds a heap of small objects larger than the Go
// memory limit the manager set, and allocates a little garbage every
// millisecond, as an operator's work does, until Start returns.
func runGCBoundChild(kubeconfig string) int {
	bufio.NewScanner(os.Stdin).Scan()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	m, err := manager.New(cfg, manager.Options{
		Metrics:     manager.MetricsOptions{BindAddress: "0"},
		MemoryLimit: manager.MemoryLimitOptions{Ratio: 0.1, GCBoundExit: 3 * time.Second},
		Logger:      log,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	// Wait for the limit: Start sets it first.
	for debug.SetMemoryLimit(-1) == 1<<63-1 {
		time.Sleep(10 * time.Millisecond)
	}
	// Nodes of 64 bytes, as many as fill 5% more than the limit.
	type node struct {
		next *node
		data [7]int64
	}
	var live *node
	target := debug.SetMemoryLimit(-1) * 21 / 20
	for n := int64(0); n < target; n += 64 {
		live = &node{next: live, data: [7]int64{n}}
	}
	defer runtime.KeepAlive(live)
	var garbage [][]byte
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			switch {
			case errors.Is(err, manager.ErrGCBound):
				fmt.Println("ErrGCBound:", err)
			default:
				fmt.Println("Start =", err, "want ErrGCBound")
			}
			return 0
		case <-tick.C:
			garbage = append(garbage[:0], make([]byte, 16<<10))
		}
	}
}
