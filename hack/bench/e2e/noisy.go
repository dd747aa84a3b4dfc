package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

// tenantLabel marks the namespaces a quiet tenant's Mirror selects.
const tenantLabel = "bench.opkit.dev/tenant"

type noisyOptions struct {
	quiet           int           // quiet tenants
	quietNamespaces int           // namespaces each quiet tenant's Mirror copies into
	quietEvery      time.Duration // the least time between a quiet tenant's changes
	floorWaves      int           // quiet changes per tenant with no flood
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
	flood   *workload
	track   *quietTracker
	version []int // each quiet tenant's source's current version
}

func newNoisy(cs kubernetes.Interface, dyn dynamic.Interface, run string, o noisyOptions, timeout time.Duration, payload string) *noisy {
	return &noisy{cs: cs, dyn: dyn, run: run, o: o, timeout: timeout, version: make([]int, o.quiet),
		flood: &workload{cs: cs, dyn: dyn, run: run + "-flood", namespaces: o.floodNamespaces, sources: o.flood, payload: payload}}
}

func (n *noisy) name() string { return n.run }

func (n *noisy) quietHome(t int) string { return fmt.Sprintf("quiet-%s-%02d", n.run, t) }

func (n *noisy) quietTarget(t, k int) string { return fmt.Sprintf("%s-%d", n.quietHome(t), k) }

func (n *noisy) tenant(t int) string { return fmt.Sprintf("%s-%02d", n.run, t) }

// exec sets up the quiet tenants, measures their changes with no flood,
// then during the flood, into res.Noisy.
func (n *noisy) exec(ctx context.Context, _ options, _ *process, res *runResult) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	homes := make([]string, n.o.quiet)
	for t := range homes {
		homes[t] = n.quietHome(t)
	}
	var err error
	if n.track, err = startQuietTracker(ctx, n.cs, homes, n.o.quietNamespaces, clock.RealClock{}); err != nil {
		return err
	}
	if err := n.setUp(ctx); err != nil {
		return err
	}
	res.Noisy = &noisyResult{}
	if res.Noisy.QuietFloor, err = n.quietWaves(ctx, n.o.floorWaves, nil); err != nil {
		return fmt.Errorf("quiet changes with no flood: %w", err)
	}
	stop := make(chan struct{})
	type waves struct {
		lat []float64
		err error
	}
	quiet := make(chan waves, 1)
	go func() {
		lat, err := n.quietWaves(ctx, 0, stop)
		quiet <- waves{lat, err}
	}()
	floodErr := n.floodPhases(ctx, res.Noisy)
	close(stop)
	q := <-quiet
	res.Noisy.QuietFlood = q.lat
	if q.err != nil {
		return errors.Join(floodErr, fmt.Errorf("quiet changes during the flood: %w", q.err))
	}
	return floodErr
}

// setUp creates the quiet tenants and waits for their first copies.
func (n *noisy) setUp(ctx context.Context) error {
	for t := range n.o.quiet {
		if err := n.createNamespace(ctx, n.quietHome(t), nil); err != nil {
			return err
		}
		for k := range n.o.quietNamespaces {
			if err := n.createNamespace(ctx, n.quietTarget(t, k), map[string]string{tenantLabel: n.tenant(t)}); err != nil {
				return err
			}
		}
	}
	for t := range n.o.quiet {
		n.version[t] = 1
		cm := n.quietSource(t)
		if _, err := n.cs.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create quiet source: %w", err)
		}
		if _, err := n.dyn.Resource(mirrors).Namespace(cm.Namespace).Create(ctx, n.quietMirror(t), metav1.CreateOptions{}); err != nil {
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

func (n *noisy) createNamespace(ctx context.Context, name string, labels map[string]string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := n.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	return nil
}

// quietSource is quiet tenant t's source at its current version.
func (n *noisy) quietSource(t int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: n.quietHome(t)},
		Data:       map[string]string{"version": "v" + strconv.Itoa(n.version[t]), "greeting": "hello from a quiet tenant"},
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

// quietWaves has every quiet tenant, all at once, change its source and
// wait for its copies, again and again: waves times, or until stop is
// closed (a change under way then finishes). A tenant starts a change
// quietEvery after its previous one started, or as soon as that one
// converged if it took longer. It returns every change's latency.
func (n *noisy) quietWaves(ctx context.Context, waves int, stop <-chan struct{}) ([]float64, error) {
	var mu sync.Mutex
	var lat []float64
	var errs []error
	var wg sync.WaitGroup
	for t := range n.o.quiet {
		wg.Go(func() {
			for i := 0; waves == 0 || i < waves; i++ {
				next := time.Now().Add(n.o.quietEvery)
				l, err := n.quietChange(ctx, t)
				mu.Lock()
				lat, errs = append(lat, l), append(errs, err)
				mu.Unlock()
				if err != nil {
					return
				}
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				case <-time.After(time.Until(next)):
				}
			}
		})
	}
	wg.Wait()
	return lat, errors.Join(errs...)
}

// quietChange updates quiet tenant t's source and returns the seconds from
// just before the update was sent until the driver saw the last of the
// tenant's copies hold it.
func (n *noisy) quietChange(ctx context.Context, t int) (float64, error) {
	n.version[t]++
	cm := n.quietSource(t)
	w := n.track.expect(cm.Namespace, n.version[t])
	start := time.Now()
	if _, err := n.cs.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return 0, fmt.Errorf("update quiet source: %w", err)
	}
	at, err := n.track.await(ctx, cm.Namespace, w, n.timeout)
	if err != nil {
		return 0, err
	}
	return at.Sub(start).Seconds(), nil
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
			labels = map[string]string{runLabel: f.run}
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

// quietTracker follows the quiet tenants' copies with an informer
// restricted to them, and tells waiters when a tenant's copies all hold a
// version or a newer one. Open-loop tenants change again before their
// last change converged, so a tenant has any number of waiters at once.
type quietTracker struct {
	per   int                // copies per tenant
	clock clock.PassiveClock // when a version was seen

	mu      sync.Mutex
	copies  map[string]map[string]int // version by tenant home, copy namespace
	waiters map[string][]waiter       // by tenant home: every wait not yet answered
}

// waiter is one wait for every copy of a tenant to hold version or a
// newer one; at receives the time that was first seen.
type waiter struct {
	version int
	at      chan time.Time // buffered: observe never blocks on it
}

func newQuietTracker(per int, clk clock.PassiveClock) *quietTracker {
	return &quietTracker{per: per, clock: clk, copies: map[string]map[string]int{}, waiters: map[string][]waiter{}}
}

func startQuietTracker(ctx context.Context, cs kubernetes.Interface, homes []string, per int, clk clock.PassiveClock) (*quietTracker, error) {
	q := newQuietTracker(per, clk)
	sel := fmt.Sprintf("%s in (%s)", mirror.LabelMirrorNamespace, strings.Join(homes, ","))
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }))
	inf := f.Core().V1().ConfigMaps().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { q.observe(obj, false) },
		UpdateFunc: func(_, obj any) { q.observe(obj, false) },
		DeleteFunc: func(obj any) { q.observe(obj, true) },
	}); err != nil {
		return nil, fmt.Errorf("follow the quiet copies: %w", err)
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("follow the quiet copies: %w", context.Cause(ctx))
	}
	return q, nil
}

func (q *quietTracker) observe(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = d.Obj, true
	}
	c, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	now := q.clock.Now()
	home := c.Labels[mirror.LabelMirrorNamespace]
	v, _ := strconv.Atoi(strings.TrimPrefix(c.Data["version"], "v"))
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.copies[home] == nil {
		q.copies[home] = map[string]int{}
	}
	if deleted {
		delete(q.copies[home], c.Namespace)
	} else {
		q.copies[home][c.Namespace] = v
	}
	q.waiters[home] = slices.DeleteFunc(q.waiters[home], func(w waiter) bool {
		if !q.holdLocked(home, w.version) {
			return false
		}
		w.at <- now
		return true
	})
}

// holdLocked reports whether every copy of home's tenant holds version v
// or later.
func (q *quietTracker) holdLocked(home string, v int) bool {
	if len(q.copies[home]) < q.per {
		return false
	}
	for _, have := range q.copies[home] {
		if have < v {
			return false
		}
	}
	return true
}

// wait returns when the tracker saw every copy of home's tenant hold
// version v or a newer one.
func (q *quietTracker) wait(ctx context.Context, home string, v int, timeout time.Duration) (time.Time, error) {
	return q.await(ctx, home, q.expect(home, v), timeout)
}

// expect registers a waiter for every copy of home's tenant to hold
// version v or a newer one: before the change, so that no event is missed.
func (q *quietTracker) expect(home string, v int) waiter {
	w := waiter{version: v, at: make(chan time.Time, 1)}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.holdLocked(home, v) {
		w.at <- q.clock.Now()
		return w
	}
	q.waiters[home] = append(q.waiters[home], w)
	return w
}

// await returns when w's version was seen: the time it was. timeout is in
// real time whatever the tracker's clock: a safety net, not a measurement.
func (q *quietTracker) await(ctx context.Context, home string, w waiter, timeout time.Duration) (time.Time, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	var err error
	select {
	case at := <-w.at:
		return at, nil
	case <-t.C:
		err = fmt.Errorf("copies of %s not at version %d within %v", home, w.version, timeout)
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	q.forget(home, w)
	return time.Time{}, err
}

// forget drops w, a wait given up, so that it does not outlive it.
func (q *quietTracker) forget(home string, w waiter) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.waiters[home] = slices.DeleteFunc(q.waiters[home], func(o waiter) bool { return o.at == w.at })
}
