package finalizer_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// countingTransport counts the requests that go through it.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// newClient returns a controller-runtime client on the test control plane
// and the count of the requests it sends.
func newClient(t *testing.T) (client.Client, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	cfg := rest.CopyConfig(env.Config())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &n} })
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Warm the REST mapper, so that only the requests under test count.
	if _, err := c.RESTMapper().RESTMapping(corev1.SchemeGroupVersion.WithKind("ConfigMap").GroupKind(), "v1"); err != nil {
		t.Fatal(err)
	}
	n.Store(0)
	return c, &n
}

// newConfigMap creates a ConfigMap holding finalizers and returns it as the
// API server stored it.
func newConfigMap(t *testing.T, ns string, finalizers ...string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-", Namespace: ns, Finalizers: finalizers},
		Data:       map[string]string{"k": "v"},
	}
	cm, err := env.Client().CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Tests leave finalizers behind; let the namespace go.
	t.Cleanup(func() { setFinalizers(t, cm) })
	return cm
}

// setFinalizers sets cm's finalizers on the server, as another writer
// would, whatever they are now. Errors for a ConfigMap already gone are
// ignored.
func setFinalizers(t *testing.T, cm *corev1.ConfigMap, finalizers ...string) {
	t.Helper()
	ctx := context.Background()
	cur, err := env.Client().CoreV1().ConfigMaps(cm.Namespace).Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil {
		return
	}
	cur.Finalizers = finalizers
	if _, err := env.Client().CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("set finalizers of %s: %v", cm.Name, err)
	}
}

// serverFinalizers returns cm's finalizers as the API server holds them.
func serverFinalizers(t *testing.T, cm *corev1.ConfigMap) []string {
	t.Helper()
	cur, err := env.Client().CoreV1().ConfigMaps(cm.Namespace).Get(t.Context(), cm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cur.Finalizers
}

// unchanged fails the test if obj differs from before, its copy taken
// before the call under test.
func unchanged(t *testing.T, before, obj *corev1.ConfigMap) {
	t.Helper()
	if d := cmp.Diff(before, obj); d != "" {
		t.Errorf("the object passed in was modified (-before +after):\n%s", d)
	}
}
