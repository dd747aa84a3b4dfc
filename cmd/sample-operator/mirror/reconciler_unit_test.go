package mirror_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/cache/cachetest"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// TestReconcilerUnit runs the Mirror reconciler built from its pieces,
// without a cluster: its Store over cachetest Listers (whose
// Options.ReadError makes reads fail), controller-runtime's fake client for
// its writes (interceptor.Funcs make them fail), and client-go's fake event
// recorder. The package's TestMain starts a control plane for the other
// tests; this one never uses it.
func TestReconcilerUnit(t *testing.T) {
	unavailable := errors.New("etcd is unavailable")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "cfg",
		errors.New(`User "system:serviceaccount:mirror-system:mirror" cannot create resource "configmaps" in API group "" in the namespace "team-a"`))
	for _, tc := range []struct {
		name string
		// readError fails the reads of the Lister of a kind ("Mirror",
		// "ConfigMap") with what it returns.
		readError func(kind, verb, namespace, name string) error
		createErr error // what the client's Create returns
		wantErr   error
		// What the API server holds after the reconcile: the copy's data
		// (nil for none) and the Mirror's Ready condition (nil for none).
		// The finalizer is the controller's (manager.Finalizer), not the
		// reconciler's.
		wantCopy   map[string]string
		wantReady  *metav1.Condition
		wantEvents []string
	}{{
		name:      "copies the source",
		wantCopy:  map[string]string{"k": "v"},
		wantReady: &metav1.Condition{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSynced, Message: "copied into 1 namespaces"},
	}, {
		name: "the Mirror cannot be read",
		readError: func(kind, verb, namespace, name string) error {
			if kind == "Mirror" {
				return unavailable
			}
			return nil
		},
		wantErr: unavailable,
	}, {
		name: "the source cannot be read",
		readError: func(kind, verb, namespace, name string) error {
			if kind == "ConfigMap" && verb == "get" && namespace == "home" {
				return unavailable
			}
			return nil
		},
		wantErr:    unavailable,
		wantReady:  &metav1.Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonSyncFailed, Message: "read source: etcd is unavailable"},
		wantEvents: []string{"Warning SyncFailed read source: etcd is unavailable"},
	}, {
		name:      "the copy cannot be written",
		createErr: forbidden,
		wantErr:   forbidden,
		wantReady: &metav1.Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonSyncFailed,
			Message: `copied into 0 namespaces; 1 writes failed: Forbidden (cannot create resource "configmaps") (the operator's log has the errors)`},
		wantEvents: []string{`Warning SyncFailed copied into 0 namespaces; 1 writes failed: Forbidden (cannot create resource "configmaps") (the operator's log has the errors)`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m := &v1alpha1.Mirror{
				ObjectMeta: metav1.ObjectMeta{Namespace: "home", Name: "cfg", Generation: 1},
				Spec: v1alpha1.MirrorSpec{
					Source:            v1alpha1.SourceRef{Kind: v1alpha1.KindConfigMap, Name: "cfg"},
					NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
				},
			}
			src := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "home", Name: "cfg"}, Data: map[string]string{"k": "v"}}
			store := newListerStore(t, tc.readError, []*v1alpha1.Mirror{m}, []*corev1.ConfigMap{src}, []*corev1.Namespace{
				{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"team": "a", mirror.AcceptLabel("home"): "true"}}},
				{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{"team": "b", mirror.AcceptLabel("home"): "true"}}},
			})
			c := fake.NewClientBuilder().WithScheme(newScheme(t)).
				WithObjects(m, src).WithStatusSubresource(m).
				WithInterceptorFuncs(interceptor.Funcs{
					Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
						if tc.createErr != nil {
							return tc.createErr
						}
						return c.Create(ctx, obj, opts...)
					},
				}).Build()
			rec := events.NewFakeRecorder(10)
			r := &mirror.Reconciler{Store: store, Client: client.WithFieldOwner(c, "mirror"), Recorder: rec}

			_, err := r.Reconcile(t.Context(), reconcile.Request{Namespace: "home", Name: "cfg"})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Reconcile = %v, want %v", err, tc.wantErr)
			}
			checkCopy(t, c, "team-a", tc.wantCopy)
			checkCopy(t, c, "team-b", nil)
			got := &v1alpha1.Mirror{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
				t.Fatal(err)
			}
			var ready *metav1.Condition
			if cond := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); cond != nil {
				ready = &metav1.Condition{Status: cond.Status, Reason: cond.Reason, Message: cond.Message}
			}
			if diff := cmp.Diff(tc.wantReady, ready); diff != "" {
				t.Errorf("Ready condition (-want +got):\n%s", diff)
			}
			close(rec.Events)
			var recorded []string
			for e := range rec.Events {
				recorded = append(recorded, e)
			}
			if diff := cmp.Diff(tc.wantEvents, recorded); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// checkCopy fails t unless the API server holds, in namespace ns, a copy
// of the source cfg with data want (none if want is nil).
func checkCopy(t *testing.T, c client.Client, ns string, want map[string]string) {
	t.Helper()
	cp := &corev1.ConfigMap{}
	err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "cfg"}, cp)
	switch {
	case want == nil && apierrors.IsNotFound(err):
		return
	case want == nil:
		t.Errorf("%s/cfg: %v, %v; want no copy", ns, cp.Data, err)
	case err != nil:
		t.Errorf("%s/cfg: %v, want a copy", ns, err)
	default:
		if diff := cmp.Diff(want, cp.Data); diff != "" {
			t.Errorf("%s/cfg's data (-want +got):\n%s", ns, diff)
		}
		if mirror.CopyOf(cp) != mirror.MirrorKey("home", "cfg") {
			t.Errorf("%s/cfg's labels = %v, want those of a copy of home/cfg", ns, cp.Labels)
		}
	}
}

// listerStore is a mirror.Store over cachetest Listers that hold whole
// objects. The operator's own Store (Setup's) cannot be built without an
// API server: it holds ConfigMaps and Secrets as metadata only
// (cache.Metadata) and fetches a source in full when it is read
// (cache.Lazy), while cachetest builds Listers of typed objects only. The
// reconciler takes any Store, and reads metadata where this one returns
// whole objects.
type listerStore struct {
	mirrors    *cache.Lister[*v1alpha1.Mirror]
	namespaces *cache.Lister[*corev1.Namespace]
	configMaps *cache.Lister[*corev1.ConfigMap]
	secrets    *cache.Lister[*corev1.Secret]
}

var _ mirror.Store = (*listerStore)(nil)

// newListerStore returns a listerStore holding copies of the objects given;
// readError, when not nil, is every Lister's cachetest.Options.ReadError,
// told the kind it reads. It fails t at the end of the test if the
// reconciler modified an object it read.
func newListerStore(t *testing.T, readError func(kind, verb, namespace, name string) error,
	mirrors []*v1alpha1.Mirror, configMaps []*corev1.ConfigMap, namespaces []*corev1.Namespace) *listerStore {
	t.Helper()
	opts := func(kind string) cachetest.Options {
		o := cachetest.Options{Scheme: newScheme(t)}
		if readError != nil {
			o.ReadError = func(verb, namespace, name string) error { return readError(kind, verb, namespace, name) }
		}
		return o
	}
	s := &listerStore{
		mirrors:    lister(t, opts("Mirror"), mirrors...),
		namespaces: lister(t, opts("Namespace"), namespaces...),
		configMaps: lister(t, opts(v1alpha1.KindConfigMap), configMaps...),
		secrets:    lister[*corev1.Secret](t, opts(v1alpha1.KindSecret)),
	}
	// The index Setup gives the copies' Listers.
	if err := errors.Join(
		s.configMaps.AddIndex(mirror.IndexCopyOf, func(c *corev1.ConfigMap) []string { return mirror.CopyIndex(c) }),
		s.secrets.AddIndex(mirror.IndexCopyOf, func(c *corev1.Secret) []string { return mirror.CopyIndex(c) }),
	); err != nil {
		t.Fatal(err)
	}
	return s
}

func lister[T cache.Object](t *testing.T, opts cachetest.Options, objs ...T) *cache.Lister[T] {
	t.Helper()
	s, err := cachetest.New(opts, objs...)
	if err != nil {
		t.Fatal(err)
	}
	cachetest.CheckMutationsAtCleanup(t, s)
	return s.Lister()
}

func (s *listerStore) Mirror(namespace, name string) (*v1alpha1.Mirror, error) {
	return s.mirrors.Get(namespace, name)
}

func (s *listerStore) Namespaces(selector labels.Selector) ([]*corev1.Namespace, error) {
	return s.namespaces.List("", selector)
}

func (s *listerStore) Object(_ context.Context, kind, namespace, name string) (client.Object, error) {
	return s.Meta(kind, namespace, name)
}

func (s *listerStore) Meta(kind, namespace, name string) (client.Object, error) {
	switch kind {
	case v1alpha1.KindConfigMap:
		return object(s.configMaps.Get(namespace, name))
	case v1alpha1.KindSecret:
		return object(s.secrets.Get(namespace, name))
	}
	return nil, errors.New("unknown kind " + kind)
}

// object returns obj as a client.Object, nil (not a nil *T) with an error.
func object[T client.Object](obj T, err error) (client.Object, error) {
	if err != nil {
		return nil, err
	}
	return obj, nil
}

func (s *listerStore) Copies(kind, mirrorNamespace, mirrorName string) ([]client.Object, error) {
	key := mirror.MirrorKey(mirrorNamespace, mirrorName)
	switch kind {
	case v1alpha1.KindConfigMap:
		return objects(s.configMaps.ByIndex(mirror.IndexCopyOf, key))
	case v1alpha1.KindSecret:
		return objects(s.secrets.ByIndex(mirror.IndexCopyOf, key))
	}
	return nil, errors.New("unknown kind " + kind)
}

// Fetch returns a copy: the Store's caller owns what Fetch returns.
func (s *listerStore) Fetch(_ context.Context, kind, namespace, name string) (client.Object, error) {
	obj, err := s.Meta(kind, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.DeepCopyObject().(client.Object), nil
}

func objects[T client.Object](items []T, err error) ([]client.Object, error) {
	out := make([]client.Object, len(items))
	for i, o := range items {
		out[i] = o
	}
	return out, err
}
