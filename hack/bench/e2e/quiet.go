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
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

// quietLoad is what one stretch of the quiet schedule offered and measured.
type quietLoad struct {
	issued  int            // changes issued: ticks × quiet tenants
	seconds float64        // from the first tick until the schedule stopped issuing
	changes []quietChanged // every change whose convergence was seen, in no order
}

// quietChanged is one quiet change's latency in seconds: from just before
// its update was sent until the driver saw every copy of its tenant hold
// its version or a newer one.
type quietChanged struct {
	tenant, version int
	seconds         float64
}

func (l quietLoad) latencies() []float64 {
	lat := make([]float64, len(l.changes))
	for i, c := range l.changes {
		lat[i] = c.seconds
	}
	return lat
}

// quietOpenLoop runs the quiet schedule, open-loop: at every tick, every
// quietEvery on n's clock from the first, every quiet tenant changes its
// source, all at once, whatever the latency of its earlier changes; a
// change may overtake one still under way. It runs ticks ticks, or, for
// ticks 0, until stop is closed; then it issues no more and returns once
// every change issued converged or timed out (they count). A tenant's
// updates reach the API server in the order of their versions.
func (n *noisy) quietOpenLoop(ctx context.Context, ticks int, stop <-chan struct{}) (quietLoad, error) {
	var (
		mu   sync.Mutex
		load quietLoad
		errs []error
		wg   sync.WaitGroup
	)
	sent := make([]chan struct{}, n.o.quiet) // closed once the tenant's last update issued was sent
	for t := range sent {
		sent[t] = make(chan struct{})
		close(sent[t])
	}
	start := n.clock.Now()
	for i := 0; ticks == 0 || i < ticks; i++ {
		if !n.untilTick(ctx, start.Add(time.Duration(i)*n.o.quietEvery), stop) {
			break
		}
		for t := range n.o.quiet {
			n.version[t]++
			v, prev, done := n.version[t], sent[t], make(chan struct{})
			sent[t] = done
			load.issued++
			wg.Go(func() {
				c, err := n.quietChange(ctx, t, v, prev, done)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				load.changes = append(load.changes, c)
			})
		}
	}
	load.seconds = n.clock.Since(start).Seconds()
	wg.Wait()
	return load, errors.Join(errs...)
}

// untilTick waits until at on n's clock and reports whether the tick is
// to be issued: not once stop is closed or ctx is done, even when at has
// come too.
func (n *noisy) untilTick(ctx context.Context, at time.Time, stop <-chan struct{}) bool {
	stopped := func() bool {
		select {
		case <-stop:
			return true
		case <-ctx.Done():
			return true
		default:
			return false
		}
	}
	if d := at.Sub(n.clock.Now()); d > 0 && !stopped() {
		t := n.clock.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C():
		case <-stop:
		case <-ctx.Done():
		}
	}
	return !stopped()
}

// quietChange updates quiet tenant t's source to version v once prev is
// closed (the tenant's previous update was sent), closes sent, and waits
// for the copies.
func (n *noisy) quietChange(ctx context.Context, t, v int, prev <-chan struct{}, sent chan<- struct{}) (quietChanged, error) {
	select {
	case <-prev:
	case <-ctx.Done():
		close(sent)
		return quietChanged{}, context.Cause(ctx)
	}
	cm := n.quietSource(t, v)
	w := n.track.expect(cm.Namespace, v)
	start := n.clock.Now()
	_, err := n.cs.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	close(sent)
	if err != nil {
		n.track.forget(cm.Namespace, w)
		return quietChanged{}, fmt.Errorf("update quiet source %s to version %d: %w", cm.Namespace, v, err)
	}
	at, err := n.track.await(ctx, cm.Namespace, w, n.timeout)
	if err != nil {
		return quietChanged{}, err
	}
	return quietChanged{tenant: t, version: v, seconds: at.Sub(start).Seconds()}, nil
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
