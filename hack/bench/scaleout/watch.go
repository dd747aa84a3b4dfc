package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/pkg/sharding"
)

// progress watches the ConfigMaps of one run and counts them by the
// generation their operator recorded, so that the driver learns the moment
// the last one converges from the watch, without loading the API server
// with a LIST of every object many times a second.
type progress struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every count change
	done    map[string]int
	atGen   map[int]int // how many objects have recorded each generation
	key     sharding.Key
	slotOf  map[string]int // each object's slot under key
	stop    context.CancelFunc
}

// watchProgress starts watching the ConfigMaps of run in ns, which the
// replicas shard by key, and returns once the watch has listed them.
func watchProgress(ctx context.Context, cs kubernetes.Interface, run, ns string, key sharding.Key) (*progress, error) {
	ctx, cancel := context.WithCancel(ctx)
	p := &progress{changed: make(chan struct{}), done: map[string]int{}, atGen: map[int]int{}, stop: cancel,
		key: key, slotOf: map[string]int{}}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = runLabel + "=" + run }))
	inf := f.Core().V1().ConfigMaps().Informer()
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.set(obj, false) },
		UpdateFunc: func(_, obj any) { p.set(obj, false) },
		DeleteFunc: func(obj any) { p.set(obj, true) },
	}); err != nil {
		cancel()
		return nil, err
	}
	f.Start(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		cancel()
		f.Shutdown()
		return nil, fmt.Errorf("watch the configmaps of %s: not synced: %w", run, context.Cause(ctx))
	}
	go func() { <-ctx.Done(); f.Shutdown() }()
	return p, nil
}

// set records the generation obj's operator recorded, or forgets obj.
func (p *progress) set(obj any, deleted bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	gen, err := strconv.Atoi(cm.Annotations[doneKey])
	if err != nil {
		gen = -1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if deleted {
		delete(p.slotOf, cm.Name)
	} else {
		p.slotOf[cm.Name] = slotsOf.SlotOf(p.key, cm)
	}
	old, had := p.done[cm.Name]
	if had && !deleted && old == gen {
		return
	}
	if had {
		p.atGen[old]--
		delete(p.done, cm.Name)
	}
	if !deleted {
		p.done[cm.Name] = gen
		p.atGen[gen]++
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// count returns how many objects have recorded gen, and a channel closed
// at the next change.
func (p *progress) count(gen int) (int, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.atGen[gen], p.changed
}

// wait waits until n objects have recorded generation gen, and returns
// when the watch delivered the last of them.
func (p *progress) wait(ctx context.Context, n, gen int, timeout time.Duration) (time.Time, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		got, changed := p.count(gen)
		if got == n {
			return time.Now(), nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-deadline.C:
			return time.Time{}, fmt.Errorf("%d of %d configmaps converged at generation %d within %v", got, n, gen, timeout)
		}
	}
}

func (p *progress) close() { p.stop() }

// perSlot returns how many of the objects each slot holds.
func (p *progress) perSlot() []float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]float64, slots)
	for _, s := range p.slotOf {
		out[s]++
	}
	return out
}

// slotsOf is the replicas' slots.
var slotsOf = func() sharding.Slots {
	s, err := sharding.NewSlots(slots)
	if err != nil {
		panic(err)
	}
	return s
}()
