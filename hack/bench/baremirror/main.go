// Command baremirror is the floor of the end-to-end benchmark
// (hack/bench/e2e): it issues the writes the Mirror operator issues for the
// benchmark's workload, creates of the copies and then merge patches of
// them, directly with a client and at the operator's concurrency, with no
// cache, no watches and no queue.
//
// It reads commands from standard input, one a line, and answers each with
// a line of JSON: the requests it has sent so far by HTTP method.
//
//	sync   read the ConfigMaps in --home and the namespaces --selector
//	       matches, and write every copy that is missing or differs from
//	       its source (create or merge patch, as the Mirror operator does)
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "baremirror: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("baremirror", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (required)")
	home := fs.String("home", "", "namespace of the sources and their Mirrors (required)")
	selector := fs.String("selector", "", "label selector of the namespaces to copy into (required)")
	workers := fs.Int("max-concurrent-reconciles", 4, "sources written at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig == "" || *home == "" || *selector == "" || *workers < 1 {
		return errors.New("--kubeconfig, --home and --selector are required, and --max-concurrent-reconciles must be at least 1")
	}
	sel, err := labels.Parse(*selector)
	if err != nil {
		return fmt.Errorf("--selector: %w", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = -1, 0 // as both operators run
	var count counts
	cfg.Wrap(count.wrap)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	w := &writer{c: c, home: *home, selector: sel, workers: *workers, copies: map[string]*corev1.ConfigMap{}}
	in := bufio.NewScanner(stdin)
	for in.Scan() {
		switch cmd := in.Text(); cmd {
		case "sync":
			if err := w.sync(ctx); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown command %q", cmd)
		}
		if err := json.NewEncoder(stdout).Encode(count.snapshot()); err != nil {
			return err
		}
	}
	return in.Err()
}

// writer writes the copies. copies holds the last copy written to each
// namespace/name, as the API server returned it: what a merge patch is
// computed from, as the operator computes it from its cache.
type writer struct {
	c        client.Client
	home     string
	selector labels.Selector
	workers  int

	mu     sync.Mutex
	copies map[string]*corev1.ConfigMap
}

func (w *writer) sync(ctx context.Context) error {
	var srcs corev1.ConfigMapList
	if err := w.c.List(ctx, &srcs, client.InNamespace(w.home)); err != nil {
		return fmt.Errorf("list the sources: %w", err)
	}
	var nss corev1.NamespaceList
	if err := w.c.List(ctx, &nss, client.MatchingLabelsSelector{Selector: w.selector}); err != nil {
		return fmt.Errorf("list the namespaces: %w", err)
	}
	work := make(chan *corev1.ConfigMap)
	errs := make([]error, w.workers)
	var wg sync.WaitGroup
	for i := range w.workers {
		wg.Go(func() {
			for src := range work {
				for _, ns := range nss.Items {
					if err := w.write(ctx, src, ns.Name); err != nil && errs[i] == nil {
						errs[i] = err
					}
				}
			}
		})
	}
	for i := range srcs.Items {
		work <- &srcs.Items[i]
	}
	close(work)
	wg.Wait()
	return errors.Join(errs...)
}

// write creates or merge-patches src's copy in namespace ns, as the Mirror
// reconciler's syncCopy does.
func (w *writer) write(ctx context.Context, src *corev1.ConfigMap, ns string) error {
	key := ns + "/" + src.Name
	w.mu.Lock()
	cur := w.copies[key]
	w.mu.Unlock()
	want := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: src.Name, Namespace: ns, Labels: map[string]string{
			mirror.LabelMirrorNamespace: src.Namespace, mirror.LabelMirrorName: src.Name,
		}},
		Data: maps.Clone(src.Data), BinaryData: maps.Clone(src.BinaryData),
	}
	switch {
	case cur == nil:
		if err := w.c.Create(ctx, want); err != nil {
			return fmt.Errorf("create %s: %w", key, err)
		}
	case maps.Equal(cur.Data, want.Data):
		return nil
	default:
		patched := cur.DeepCopy()
		patched.Data, patched.BinaryData = want.Data, want.BinaryData
		if err := w.c.Patch(ctx, patched, client.MergeFromWithOptions(cur, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("update %s: %w", key, err)
		}
		want = patched
	}
	w.mu.Lock()
	w.copies[key] = want
	w.mu.Unlock()
	return nil
}

// counts counts requests by HTTP method; its zero value is ready.
type counts struct {
	mu sync.Mutex
	m  map[string]*atomic.Int64
}

func (c *counts) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		c.counter(r.Method).Add(1)
		return next.RoundTrip(r)
	})
}

func (c *counts) counter(method string) *atomic.Int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*atomic.Int64{}
	}
	if c.m[method] == nil {
		c.m[method] = &atomic.Int64{}
	}
	return c.m[method]
}

func (c *counts) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int64{}
	for k, v := range c.m {
		out[k] = v.Load()
	}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
