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
// child of TestGCBoundFails: its value is the kubeconfig to use. With
// gcBoundAtSync set, the child is TestGCBoundAtSync's.
const (
	gcBoundChild  = "OPKIT_TEST_GCBOUND_CHILD"
	gcBoundAtSync = "OPKIT_TEST_GCBOUND_AT_SYNC"
)

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
	for _, want := range []string{"ErrGCBound", "the garbage collector used", "raise the container's memory limit to at least", "MiB for the binary's resident pages, times 0.1"} {
		if !strings.Contains(line, want) {
			t.Errorf("the child's Start returned %q, which does not say %q; it logged:\n%s", line, want, log)
		}
	}
}

// A manager that holds, once its cache has synced, more than the Go memory
// limit leaves the collector room for fails then, before its controllers
// start, rather than crawl through their work: Start returns ErrGCBound
// at once, saying how large a limit would fit. The child holds its heap
// from before Start, as a cache holds what it listed.
func TestGCBoundAtSync(t *testing.T) {
	const cgroupLimit = 1 << 30
	dir := memoryCgroup(t, cgroupLimit)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	line, log := childInCgroup(t, dir, []string{gcBoundChild + "=" + kubeconfig, gcBoundAtSync + "=1"})
	t.Logf("the child: %s", line)
	for _, want := range []string{"ErrGCBound", "once the cache synced", "raise the container's memory limit to at least", "times 0.1",
		"no runnable started"} {
		if !strings.Contains(line, want) {
			t.Errorf("the child's Start returned %q, which does not say %q; it logged:\n%s", line, want, log)
		}
	}
}

// node is what the GC-bound children hold: 64 bytes with a pointer.
type node struct {
	next *node
	data [7]int64
}

// hold returns a list of nodes of at least b bytes.
func hold(b int64) *node {
	var live *node
	for n := int64(0); n < b; n += 64 {
		live = &node{next: live, data: [7]int64{n}}
	}
	return live
}

// runGCBoundChild is the child of TestGCBoundFails: once told to go, it
// starts a manager, then, once its runnables start (the cache has
// synced), holds a heap of small objects larger than the Go memory limit
// the manager set, and allocates a little garbage every millisecond, as
// an operator's work does, until Start returns. TestGCBoundAtSync's holds
// the heap from before Start, and says whether a runnable started.
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
	started := make(chan struct{})
	if err := m.Add(manager.RunnableFunc(func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return nil
	})); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	atSync := os.Getenv(gcBoundAtSync) != ""
	var live *node
	defer func() { runtime.KeepAlive(live) }()
	if atSync {
		// More than the limit will be: about a tenth of the cgroup's.
		live = hold(120 << 20)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	if atSync {
		err := <-done
		said := "Start ="
		if errors.Is(err, manager.ErrGCBound) {
			said = "ErrGCBound:"
		}
		select {
		case <-started:
			fmt.Println(said, err, "after a runnable started")
		default:
			fmt.Println(said, err, "and no runnable started")
		}
		return 0
	}
	select {
	case <-started:
	case err := <-done:
		fmt.Println("Start =", err, "before the runnables started")
		return 0
	}
	// As many nodes as fill 5% more than the limit.
	live = hold(debug.SetMemoryLimit(-1) * 21 / 20)
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
