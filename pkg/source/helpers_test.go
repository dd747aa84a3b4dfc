package source_test

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// item is a key as a worker gets it.
type item struct {
	Key      reconcile.Request
	Priority int
}

// newQueue returns a queue that is shut down when the test ends.
func newQueue[K comparable](t *testing.T) *queue.Queue[K] {
	q := queue.New[K](queue.Options[K]{})
	t.Cleanup(q.ShutDown)
	return q
}

// drain gets every ready key of q, sorted by namespace and name.
func drain(q *queue.Queue[reconcile.Request]) []item {
	var out []item
	for q.Len() > 0 {
		k, p, _ := q.Get()
		q.Done(k)
		out = append(out, item{k, p})
	}
	slices.SortFunc(out, byKey)
	return out
}

func byKey(a, b item) int {
	return cmp.Or(cmp.Compare(a.Key.Namespace, b.Key.Namespace), cmp.Compare(a.Key.Name, b.Key.Name))
}

func req(ns, name string) reconcile.Request { return reconcile.Request{Namespace: ns, Name: name} }

func normal(ns, name string) item { return item{req(ns, name), queue.NormalPriority} }
func low(ns, name string) item    { return item{req(ns, name), queue.LowPriority} }

// fakeInformer is a SharedIndexInformer that only takes one handler, so
// that a test can call the handler as the informer would.
type fakeInformer struct {
	toolscache.SharedIndexInformer // nil: other methods are not called

	mu      sync.Mutex
	handler toolscache.ResourceEventHandler
	reg     *fakeRegistration
	removed chan struct{}
}

func newFakeInformer() *fakeInformer { return &fakeInformer{removed: make(chan struct{})} }

func (f *fakeInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handler, f.reg = h, &fakeRegistration{}
	return f.reg, nil
}

func (f *fakeInformer) RemoveEventHandler(toolscache.ResourceEventHandlerRegistration) error {
	close(f.removed)
	return nil
}

func (f *fakeInformer) events() toolscache.ResourceEventHandler {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.handler
}

type fakeRegistration struct{ synced atomic.Bool }

func (r *fakeRegistration) HasSynced() bool                          { return r.synced.Load() }
func (r *fakeRegistration) HasSyncedChecker() toolscache.DoneChecker { return nil }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
