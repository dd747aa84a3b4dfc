package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The names the benchmark shares with its operator (operator/main.go).
const (
	runLabel = "scaleout.opkit.dev/run"
	doneKey  = "scaleout.opkit.dev/done"
	genKey   = "gen"
	// fillRun labels the filler ConfigMaps: already converged, so the
	// operator caches them and reconciles each once without a call.
	fillRun        = "fill"
	fillNamespace  = "scaleout-fill"
	leaseNamespace = "default"
	// writers are the driver's concurrent writes: enough that writing the
	// changes takes less time than reconciling them, when it can.
	writers = 32
)

// dependency is the slow external system: a loopback HTTP server that
// answers every request after delay, and counts them, in all and by the
// replica parameter the operator sends (its process ID).
type dependency struct {
	srv   *http.Server
	url   string
	calls atomic.Int64

	mu        sync.Mutex
	byReplica map[string]int64
	// first and last hold, by replica, the times of its first and last
	// call since the last mark.
	first, last map[string]time.Time
}

func startDependency(delay time.Duration) (*dependency, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start the dependency: %w", err)
	}
	d := &dependency{url: "http://" + l.Addr().String() + "/", byReplica: map[string]int64{},
		first: map[string]time.Time{}, last: map[string]time.Time{}}
	d.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.calls.Add(1)
		d.mu.Lock()
		who, now := r.URL.Query().Get("replica"), time.Now()
		d.byReplica[who]++
		if _, ok := d.first[who]; !ok {
			d.first[who] = now
		}
		d.last[who] = now
		d.mu.Unlock()
		select { // the dependency's latency: what the reconciles wait on
		case <-time.After(delay):
		case <-r.Context().Done():
		}
	}), ReadHeaderTimeout: time.Minute}
	go func() { _ = d.srv.Serve(l) }()
	return d, nil
}

func (d *dependency) stop() { _ = d.srv.Close() }

// mark forgets the times of every replica's first and last call.
func (d *dependency) mark() {
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.first)
	clear(d.last)
}

// span returns the times of the first and last call pid made since the
// last mark; zero times if it made none.
func (d *dependency) span(pid int) (first, last time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.first[strconv.Itoa(pid)], d.last[strconv.Itoa(pid)]
}

// callsOf returns how many calls the process pid has made.
func (d *dependency) callsOf(pid int) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.byReplica[strconv.Itoa(pid)]
}

// configMap is object i of run, at generation gen; converged when done.
func configMap(run, namespace string, i, gen int, done bool, payload string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", run, i), Namespace: namespace, Labels: map[string]string{runLabel: run}},
		Data:       map[string]string{genKey: strconv.Itoa(gen)},
	}
	if payload != "" {
		cm.Data["payload"] = payload
	}
	if done {
		cm.Annotations = map[string]string{doneKey: strconv.Itoa(gen)}
	}
	return cm
}

// parallel runs f(i) for i in [0, n) on writers goroutines, and calls
// after(i) once f(i) has returned; it returns the first error.
func parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error, after func(done int)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next, done atomic.Int64
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range min(writers, n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if err := f(ctx, i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					cancel()
					return
				}
				if after != nil {
					after(int(done.Add(1)))
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ensureNamespace creates namespace ns unless it exists.
func ensureNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return nil
}

// layout places the objects of a round in namespaces: all in one
// (uniform), or over hotNamespaces namespaces whose sizes fall off as
// 1/rank^0.8, the largest holding 12% of the objects (skewed), which the
// operator then shards by namespace.
type layout struct {
	skewed bool
	ns     []string // object i's namespace; nil when uniform
}

const (
	hotNamespaces = 100
	hotExponent   = 0.8
)

func newLayout(skewed bool, objects int) layout {
	if !skewed {
		return layout{}
	}
	sizes := make([]float64, hotNamespaces)
	total := 0.0
	for k := range sizes {
		sizes[k] = math.Pow(float64(k+1), -hotExponent)
		total += sizes[k]
	}
	l := layout{skewed: true, ns: make([]string, objects)}
	i := 0
	for k, sz := range sizes {
		n := int(math.Round(sz / total * float64(objects)))
		for ; n > 0 && i < objects; n, i = n-1, i+1 {
			l.ns[i] = hotNamespace(k)
		}
	}
	for ; i < objects; i++ { // rounding's remainder, to the smallest
		l.ns[i] = hotNamespace(hotNamespaces - 1)
	}
	return l
}

// hotNamespace names namespace k of the skewed layout with its rank
// first: names that differ only at their end share a slot under
// sharding.ByNamespace (docs/sharding.md, "Namespaces with similar
// names"), which would measure that, not the skew.
func hotNamespace(k int) string { return fmt.Sprintf("hot%03d-%s", k, workNamespace) }

// of returns object i's namespace.
func (l layout) of(i int) string {
	if l.ns == nil {
		return workNamespace
	}
	return l.ns[i]
}

// namespaces returns every namespace the layout uses.
func (l layout) namespaces() []string {
	if l.ns == nil {
		return []string{workNamespace}
	}
	return slices.Compact(slices.Clone(l.ns))
}

// createAll creates n converged ConfigMaps of run, object i in
// namespace nsOf(i), at generation 0.
func createAll(ctx context.Context, cs kubernetes.Interface, run string, nsOf func(int) string, n int, payload string) error {
	seen := map[string]bool{}
	for i := range n {
		if ns := nsOf(i); !seen[ns] {
			seen[ns] = true
			if err := ensureNamespace(ctx, cs, ns); err != nil {
				return err
			}
		}
	}
	return parallel(ctx, n, func(ctx context.Context, i int) error {
		ns := nsOf(i)
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(run, ns, i, 0, true, payload), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create configmap %d of %s: %w", i, run, err)
		}
		return nil
	}, nil)
}

// bump sets every ConfigMap of run to generation gen, one write each;
// after(k) is called once k of them are written.
func bump(ctx context.Context, cs kubernetes.Interface, run string, nsOf func(int) string, n, gen int, after func(int)) error {
	patch := []byte(fmt.Sprintf(`{"data":{%q:%q}}`, genKey, strconv.Itoa(gen)))
	return parallel(ctx, n, func(ctx context.Context, i int) error {
		ns := nsOf(i)
		name := configMap(run, ns, i, gen, false, "").Name
		if _, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("set configmap %s/%s to generation %d: %w", ns, name, gen, err)
		}
		return nil
	}, after)
}

// deleteRun deletes the ConfigMaps of run in each of namespaces.
func deleteRun(ctx context.Context, cs kubernetes.Interface, run string, namespaces ...string) error {
	var errs []error
	for _, ns := range namespaces {
		err := cs.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: runLabel + "=" + run})
		if err != nil {
			errs = append(errs, fmt.Errorf("delete the configmaps of %s in %s: %w", run, ns, err))
		}
	}
	return errors.Join(errs...)
}

// payloadOf is n bytes of filler data.
func payloadOf(n int) string { return strings.Repeat("x", n) }
