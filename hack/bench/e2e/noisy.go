package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

// tenantLabel marks the namespaces a quiet tenant's Mirror selects.
const tenantLabel = "bench.opkit.dev/tenant"

type noisyOptions struct {
	quiet           int           // quiet tenants
	quietNamespaces int           // namespaces each quiet tenant's Mirror copies into
	quietEvery      time.Duration // the time between ticks of the quiet schedule
	floorWaves      int           // ticks of the quiet schedule with no flood
	flood           int           // the flooding tenant's sources and Mirrors
	floodNamespaces int           // namespaces each flood Mirror copies into
	burstUpdates    int           // updates of every flood source in the burst
}

// noisy is one run of the noisy-neighbour scenario: quiet tenants, each a
// namespace with one source and a Mirror, and a flooding tenant, the
// original workload's shape at scale (a workload), all with fresh names.
type noisy struct {
	cs      kubernetes.Interface
	dyn     dynamic.Interface
	run     string
	o       noisyOptions
	timeout time.Duration // for each wait
	clock   clock.Clock   // the quiet schedule's ticks and latencies
	flood   *workload
	track   *quietTracker
	version []int // each quiet tenant's source's last version issued: written by the schedule's loop only
}

func newNoisy(cs kubernetes.Interface, dyn dynamic.Interface, run string, o noisyOptions, timeout time.Duration, payload string) *noisy {
	return &noisy{cs: cs, dyn: dyn, run: run, o: o, timeout: timeout, clock: clock.RealClock{}, version: make([]int, o.quiet),
		flood: &workload{cs: cs, dyn: dyn, run: run + "-flood", namespaces: o.floodNamespaces, sources: o.flood, payload: payload}}
}

func (n *noisy) name() string { return n.run }

func (n *noisy) quietHome(t int) string { return fmt.Sprintf("quiet-%s-%02d", n.run, t) }

func (n *noisy) quietTarget(t, k int) string { return fmt.Sprintf("%s-%d", n.quietHome(t), k) }

func (n *noisy) tenant(t int) string { return fmt.Sprintf("%s-%02d", n.run, t) }

// exec sets up the quiet tenants, measures their changes with no flood,
// then during the flood, into res.Noisy. The quiet tenants are open-loop
// (see quietOpenLoop): both operators are offered the same quiet load, so
// the flood's time compares the same work.
func (n *noisy) exec(ctx context.Context, _ options, _ *process, res *runResult) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := n.follow(ctx); err != nil {
		return err
	}
	if err := n.setUp(ctx); err != nil {
		return err
	}
	res.Noisy = &noisyResult{}
	floor, err := n.quietOpenLoop(ctx, n.o.floorWaves, nil)
	res.Noisy.QuietFloor = floor.latencies()
	if err != nil {
		return fmt.Errorf("quiet changes with no flood: %w", err)
	}
	stop := make(chan struct{})
	type load struct {
		quietLoad
		err error
	}
	quiet := make(chan load, 1)
	go func() {
		l, err := n.quietOpenLoop(ctx, 0, stop)
		quiet <- load{l, err}
	}()
	floodErr := n.floodPhases(ctx, res.Noisy)
	close(stop)
	q := <-quiet
	res.Noisy.QuietFlood = q.latencies()
	res.Noisy.QuietFloodIssued, res.Noisy.QuietFloodIssuingSeconds = q.issued, q.seconds
	if q.err != nil {
		return errors.Join(floodErr, fmt.Errorf("quiet changes during the flood: %w", q.err))
	}
	return floodErr
}

// follow starts the tracker of the quiet tenants' copies.
func (n *noisy) follow(ctx context.Context) error {
	homes := make([]string, n.o.quiet)
	for t := range homes {
		homes[t] = n.quietHome(t)
	}
	var err error
	n.track, err = startQuietTracker(ctx, n.cs, homes, n.o.quietNamespaces, n.clock)
	return err
}

// setUp creates the quiet tenants and waits for their first copies.
func (n *noisy) setUp(ctx context.Context) error {
	if err := n.createQuiet(ctx); err != nil {
		return err
	}
	for t := range n.o.quiet {
		if _, err := n.dyn.Resource(mirrors).Namespace(n.quietHome(t)).Create(ctx, n.quietMirror(t), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create quiet Mirror: %w", err)
		}
	}
	for t := range n.o.quiet {
		if _, err := n.track.wait(ctx, n.quietHome(t), 1, n.timeout); err != nil {
			return fmt.Errorf("quiet tenant %d's first copies: %w", t, err)
		}
	}
	return nil
}

// createQuiet creates the quiet tenants' namespaces and their sources at
// version 1.
func (n *noisy) createQuiet(ctx context.Context) error {
	for t := range n.o.quiet {
		if err := n.createNamespace(ctx, n.quietHome(t), nil); err != nil {
			return err
		}
		for k := range n.o.quietNamespaces {
			if err := n.createNamespace(ctx, n.quietTarget(t, k), map[string]string{tenantLabel: n.tenant(t), mirror.AcceptLabel(n.quietHome(t)): "true"}); err != nil {
				return err
			}
		}
	}
	for t := range n.o.quiet {
		n.version[t] = 1
		cm := n.quietSource(t, 1)
		if _, err := n.cs.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create quiet source: %w", err)
		}
	}
	return nil
}

func (n *noisy) createNamespace(ctx context.Context, name string, labels map[string]string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := n.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	return nil
}

// quietSource is quiet tenant t's source at version v.
func (n *noisy) quietSource(t, v int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: n.quietHome(t)},
		Data:       map[string]string{"version": "v" + strconv.Itoa(v), "greeting": "hello from a quiet tenant"},
	}
}

func (n *noisy) quietMirror(t int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "Mirror",
		"metadata":   map[string]any{"name": "settings", "namespace": n.quietHome(t)},
		"spec": map[string]any{
			"source":            map[string]any{"kind": v1alpha1.KindConfigMap, "name": "settings"},
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{tenantLabel: n.tenant(t)}},
		},
	}}
}

// floodPhases creates the flood's sources and Mirrors all at once and
// waits for its copies, then updates every source burstUpdates times all
// at once and waits for the copies to follow, timing both.
func (n *noisy) floodPhases(ctx context.Context, res *noisyResult) error {
	f := n.flood
	nss := []string{f.home()}
	for i := range f.namespaces {
		nss = append(nss, f.namespace(i))
	}
	if err := concurrently(len(nss), func(i int) error {
		var labels map[string]string
		if i > 0 {
			labels = map[string]string{runLabel: f.run, mirror.AcceptLabel(f.home()): "true"}
		}
		return n.createNamespace(ctx, nss[i], labels)
	}); err != nil {
		return err
	}
	start := time.Now()
	if err := concurrently(f.sources, func(i int) error { return f.createSource(ctx, i) }); err != nil {
		return err
	}
	if err := f.waitConverged(ctx, 1, n.timeout); err != nil {
		return fmt.Errorf("flood copies: %w", err)
	}
	res.FloodCreateSeconds = time.Since(start).Seconds()
	start = time.Now()
	last := 1 + n.o.burstUpdates
	if err := concurrently(f.sources, func(i int) error {
		for v := 2; v <= last; v++ {
			if err := f.updateSource(ctx, i, v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := f.waitConverged(ctx, last, n.timeout); err != nil {
		return fmt.Errorf("flood copies after the burst: %w", err)
	}
	res.FloodBurstSeconds = time.Since(start).Seconds()
	return nil
}

// floodGoroutines is how many requests the flooding tenant sends at once.
const floodGoroutines = 32

// concurrently calls f(0) … f(n-1), floodGoroutines at a time, and returns
// their errors.
func concurrently(n int, f func(i int) error) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	sem := make(chan struct{}, floodGoroutines)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// clean deletes the quiet tenants' and the flood's objects.
func (n *noisy) clean(ctx context.Context) error {
	var errs []error
	for t := range n.o.quiet {
		q := &workload{cs: n.cs, dyn: n.dyn, run: n.run}
		nss := []string{n.quietHome(t)}
		for k := range n.o.quietNamespaces {
			nss = append(nss, n.quietTarget(t, k))
		}
		errs = append(errs, q.cleanNamespaces(ctx, n.quietHome(t), nss))
	}
	return errors.Join(append(errs, n.flood.clean(ctx))...)
}
