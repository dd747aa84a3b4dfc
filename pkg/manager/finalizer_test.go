package manager_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// finalizing records what a controller with a Finalizer hands its
// reconciler and its cleanup.
type finalizing struct {
	configMaps *cache.Lister[*corev1.ConfigMap]
	mu         sync.Mutex
	reconciled []string // names, with "deleting" if the object was
	cleaned    []string
	failOnce   bool // the first cleanup fails
}

func (f *finalizing) Reconcile(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := req.Name
	if cm, err := f.configMaps.Get(req.Namespace, req.Name); err == nil && cm.DeletionTimestamp != nil {
		name += " deleting"
	}
	f.reconciled = append(f.reconciled, name)
	return reconcile.Done(), nil
}

func (f *finalizing) cleanup(_ context.Context, cm *corev1.ConfigMap) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleaned = append(f.cleaned, cm.Name)
	if f.failOnce {
		f.failOnce = false
		return errors.New("the record service is down")
	}
	return nil
}

func (f *finalizing) seen() (reconciled, cleaned []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reconciled), slices.Clone(f.cleaned)
}

// A controller with a Finalizer adds it to each live object before the
// reconciler runs, and on deletion runs the cleanup, retried until it
// succeeds, instead of the reconciler, then lets the object go.
func TestFinalizerHoldsObjectsUntilCleanup(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{})
	const name = "test.opkit.dev/cleanup"
	f := &finalizing{failOnce: true}
	if _, err := manager.NewController(m, "finalizing", f,
		manager.Finalizer(name, f.cleanup), manager.For(&f.configMaps)); err != nil {
		t.Fatal(err)
	}
	start(t, m)
	cl := m.UncachedClient()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held"}}
	if err := cl.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the finalizer", func() bool {
		if err := cl.Get(t.Context(), client.ObjectKeyFromObject(cm), cm); err != nil {
			t.Fatal(err)
		}
		return slices.Contains(cm.Finalizers, name)
	})
	eventually(t, "a reconcile", func() bool { r, _ := f.seen(); return len(r) > 0 })
	if err := cl.Delete(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ConfigMap to go", func() bool {
		return apierrors.IsNotFound(cl.Get(t.Context(), client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}))
	})
	reconciled, cleaned := f.seen()
	if slices.ContainsFunc(reconciled, func(s string) bool { return strings.HasSuffix(s, "deleting") }) {
		t.Errorf("the reconciler was handed an object being deleted: %v", reconciled)
	}
	if want := []string{"held", "held"}; !slices.Equal(cleaned, want) {
		t.Errorf("cleanups %v, want %v: the first fails, the second succeeds", cleaned, want)
	}
}

func TestFinalizerRejectsMisuse(t *testing.T) {
	m := newManager(t, "x", manager.Options{})
	var cms *cache.Lister[*corev1.ConfigMap]
	cleanSecret := func(context.Context, *corev1.Secret) error { return nil }
	cleanConfigMap := func(context.Context, *corev1.ConfigMap) error { return nil }
	for _, tt := range []struct {
		name    string
		options []manager.ControllerOption
		mention string
	}{
		{"another type", []manager.ControllerOption{manager.For(&cms), manager.Finalizer("test.opkit.dev/x", cleanSecret)}, "cleanup takes *v1.Secret, and the For type is *v1.ConfigMap"},
		{"no domain", []manager.ControllerOption{manager.For(&cms), manager.Finalizer("cleanup", cleanConfigMap)}, "domain prefix"},
		{"nil cleanup", []manager.ControllerOption{manager.For(&cms), manager.Finalizer[*corev1.ConfigMap]("test.opkit.dev/x", nil)}, "cleanup is nil"},
		{"two", []manager.ControllerOption{manager.For(&cms), manager.Finalizer("test.opkit.dev/x", cleanConfigMap), manager.Finalizer("test.opkit.dev/y", cleanConfigMap)}, "two Finalizers"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s seen
			_, err := manager.NewController(m, "misused", s.reconciler(), tt.options...)
			if err == nil || !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("NewController = %v, want an error mentioning %q", err, tt.mention)
			}
		})
	}
}
