package manager_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// seen records the keys a reconciler is handed.
type seen struct {
	mu   sync.Mutex
	keys map[reconcile.Request]int
}

func (s *seen) reconciler() reconcile.Reconciler[reconcile.Request] {
	return reconcile.Func[reconcile.Request](func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.keys == nil {
			s.keys = map[reconcile.Request]int{}
		}
		s.keys[req]++
		return reconcile.Done(), nil
	})
}

func (s *seen) count(ns, name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[reconcile.Request{Namespace: ns, Name: name}]
}

// NewController wires For, Owns and Watches: a Secret controlled by a
// ConfigMap queues the ConfigMap; a Pod queues what its label names. The
// Listers it registers are the ones it sets, and a Lister set before is
// watched as it is.
func TestNewControllerWatches(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{})
	var s seen
	var l struct {
		configMaps *cache.Lister[*corev1.ConfigMap]
		secrets    *cache.Lister[*corev1.Secret]
		pods       *cache.Lister[*corev1.Pod]
	}
	labelled, err := cache.Register[*corev1.Pod](m.Cache(), cache.TypeOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"watched": "yes"})})
	if err != nil {
		t.Fatal(err)
	}
	l.pods = labelled
	byLabel := func(p *corev1.Pod) []reconcile.Request {
		return []reconcile.Request{{Namespace: p.Namespace, Name: p.Labels["config"]}}
	}
	_, err = manager.NewController(m, "wired", s.reconciler(),
		manager.For(&l.configMaps, source.ResourceVersionChanged),
		manager.Owns(&l.secrets),
		manager.Watches(&l.pods, byLabel),
	)
	if err != nil {
		t.Fatal(err)
	}
	if l.configMaps == nil || l.secrets == nil {
		t.Fatalf("NewController left a Lister nil: %+v", l)
	}
	if l.pods != labelled {
		t.Error("NewController replaced the Pod Lister set before it")
	}
	for _, st := range m.Cache().Status() {
		if st.GVK.Kind == "Pod" && st.Selector == "" {
			t.Errorf("NewController registered Pods again, unselected: %+v", st)
		}
	}
	start(t, m)
	// start returns once the servers listen, which is before the cache has
	// synced; reading earlier is refused (ErrNotSynced), as it should be.
	if err := m.Cache().WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.configMaps.Get(ns, "owner"); !apierrors.IsNotFound(err) {
		t.Errorf("the bound ConfigMap Lister's Get = %v, want not found", err)
	}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
	if err := m.UncachedClient().Create(t.Context(), owner); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the primary object", func() bool { return s.count(ns, "owner") == 1 })
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "owned", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true),
	}}}}
	if err := m.UncachedClient().Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the owner of a new Secret", func() bool { return s.count(ns, "owner") == 2 })
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns, Labels: map[string]string{"config": "mapped", "watched": "yes"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if err := m.UncachedClient().Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the key a Pod maps to", func() bool { return s.count(ns, "mapped") == 1 })
	if n := s.count(ns, "owned") + s.count(ns, "p"); n != 0 {
		t.Errorf("a watched object itself was queued %d times", n)
	}
}

func TestNewControllerRejectsMisuse(t *testing.T) {
	m := newManager(t, "x", manager.Options{})
	var s seen
	for _, tt := range []struct {
		name    string
		options []manager.ControllerOption
		mention string
	}{
		{"no For", []manager.ControllerOption{manager.Owns[*corev1.Secret](nil)}, "no For watch"},
		{"two Fors", []manager.ControllerOption{manager.For[*corev1.ConfigMap](nil), manager.For[*corev1.Secret](nil)}, "one primary type"},
		{"nil map function", []manager.ControllerOption{manager.For[*corev1.ConfigMap](nil), manager.Watches[*corev1.Pod](nil, nil)}, "map function of Watches is nil"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := manager.NewController(m, "misused", s.reconciler(), tt.options...)
			if err == nil || !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("NewController = %v, want an error mentioning %q", err, tt.mention)
			}
		})
	}
}
