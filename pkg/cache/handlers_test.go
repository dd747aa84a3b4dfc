package cache_test

import (
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// recorder records the names of the objects it is handed, by event.
type recorder struct {
	mu      sync.Mutex
	initial []string
	added   []string
	updated []string
	deleted []string
}

func (r *recorder) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			r.mu.Lock()
			defer r.mu.Unlock()
			name := obj.(*corev1.ConfigMap).Name
			if initial {
				r.initial = append(r.initial, name)
			} else {
				r.added = append(r.added, name)
			}
		},
		UpdateFunc: func(_, obj any) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.updated = append(r.updated, obj.(*corev1.ConfigMap).Name)
		},
		DeleteFunc: func(obj any) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.deleted = append(r.deleted, obj.(*corev1.ConfigMap).Name)
		},
	}
}

func (r *recorder) has(list *[]string, name string) func() bool {
	return func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return containsAll(*list, name)
	}
}

// A handler added before Start sees the initial list as such and every
// later event; one added after sync is handed what is cached as initial
// adds; a removed one hears nothing more.
func TestAddEventHandler(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var before, after recorder
	early, err := cms.AddEventHandler(before.handler())
	if err != nil {
		t.Fatal(err)
	}
	if early.HasSynced() {
		t.Error("a handler reports synced before its informers exist")
	}
	start(t, c)
	waitFor(t, 10*time.Second, early.HasSynced)
	late, err := cms.AddEventHandler(after.handler())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, late.HasSynced)
	for _, name := range []string{"csa", "ssa", "plain"} {
		if !before.has(&before.initial, name)() || !after.has(&after.initial, name)() {
			t.Errorf("%s was not handed to both handlers as part of the initial list", name)
		}
	}

	cl := writeClient(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: ns}}
	if err := cl.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, before.has(&before.added, "new"))
	waitFor(t, 10*time.Second, after.has(&after.added, "new"))

	if err := late.Remove(); err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"k": "v"}
	if err := cl.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, before.has(&before.updated, "new"))
	if err := cl.Delete(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, before.has(&before.deleted, "new"))
	after.mu.Lock()
	defer after.mu.Unlock()
	if len(after.updated)+len(after.deleted) > 0 {
		t.Errorf("a removed handler was handed updates %v and deletes %v", after.updated, after.deleted)
	}
}

func TestAddEventHandlerAfterRemove(t *testing.T) {
	c := newCache(t, cache.Options{})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Namespaces: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	cache.Remove(cms)
	var r recorder
	if _, err := cms.AddEventHandler(r.handler()); err == nil {
		t.Error("AddEventHandler on a removed type succeeded")
	}
}
