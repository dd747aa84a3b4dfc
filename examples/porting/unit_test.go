package porting_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/opkit-dev/opkit/pkg/cache/cachetest"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// webDeployment is the Deployment the unit tests reconcile, as the cache
// would hold it (with a UID, which owner references need).
func webDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Namespace: "shop", Name: "web", UID: "0b6c6bd4",
		Annotations: map[string]string{"example.com/config": "v1"},
	}}
}

// Before: a controller-runtime unit test reads and writes through a fake
// client; interceptor.Funcs makes its Get fail.
func TestWebReconcilerUnitControllerRuntime(t *testing.T) {
	unavailable := errors.New("etcd is unavailable")
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithObjects(webDeployment()).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c crclient.WithWatch, key crclient.ObjectKey, obj crclient.Object, opts ...crclient.GetOption) error {
				return unavailable
			},
		}).Build()
	r := &crWebReconciler{Client: c, Scheme: clientgoscheme.Scheme}
	_, err := r.Reconcile(t.Context(), crreconcile.Request{NamespacedName: crclient.ObjectKey{Namespace: "shop", Name: "web"}})
	if !errors.Is(err, unavailable) {
		t.Errorf("Reconcile = %v, want the injected read error", err)
	}
}

// After: the reconciler is built from the pieces it uses, not from a
// manager: cachetest Listers for its reads (Options.ReadError fails
// them), and controller-runtime's fake client for its writes
// (interceptor.Funcs fails them). No cluster, no manager.
func TestWebReconcilerUnit(t *testing.T) {
	unavailable := errors.New("etcd is unavailable")
	conflict := apierrors.NewAlreadyExists(schema.GroupResource{Resource: "configmaps"}, "web-config")
	for _, tc := range []struct {
		name      string
		readError error // what a Get of the Deployment returns
		writeErr  error // what the client's Create returns
		wantErr   error
		wantData  map[string]string // the ConfigMap created, nil for none
	}{
		{name: "creates the ConfigMap", wantData: map[string]string{"config": "v1"}},
		{name: "a read fails", readError: unavailable, wantErr: unavailable},
		{name: "the write fails", writeErr: conflict, wantErr: conflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deployments, err := cachetest.New(cachetest.Options{
				ReadError: func(verb, namespace, name string) error {
					if verb == "get" {
						return tc.readError
					}
					return nil
				},
			}, webDeployment())
			if err != nil {
				t.Fatal(err)
			}
			cachetest.CheckMutationsAtCleanup(t, deployments)
			configMaps := cachetest.NewLister[*corev1.ConfigMap](t)
			c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
				WithInterceptorFuncs(interceptor.Funcs{
					Create: func(ctx context.Context, c crclient.WithWatch, obj crclient.Object, opts ...crclient.CreateOption) error {
						if tc.writeErr != nil {
							return tc.writeErr
						}
						return c.Create(ctx, obj, opts...)
					},
				}).Build()
			r := &webReconciler{deployments: deployments.Lister(), configMaps: configMaps, client: c, scheme: clientgoscheme.Scheme}

			_, err = r.Reconcile(t.Context(), reconcile.Request{Namespace: "shop", Name: "web"})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Reconcile = %v, want %v", err, tc.wantErr)
			}
			var cm corev1.ConfigMap
			err = c.Get(t.Context(), crclient.ObjectKey{Namespace: "shop", Name: "web-config"}, &cm)
			if tc.wantData == nil {
				if !apierrors.IsNotFound(err) {
					t.Errorf("the ConfigMap: %v, want none created", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantData, cm.Data); diff != "" {
				t.Errorf("the ConfigMap's data (-want +got):\n%s", diff)
			}
			if !metav1.IsControlledBy(&cm, webDeployment()) {
				t.Errorf("the ConfigMap's owners = %v, want the Deployment as controller", cm.OwnerReferences)
			}
		})
	}
}
