package porting_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// startManager runs a manager of namespace ns, set up by setup, until the
// test ends; a modified cached object fails the test.
func startManager(t *testing.T, ns string, scheme *runtime.Scheme, setup func(*manager.Manager) error) {
	t.Helper()
	mgr, err := manager.New(env.Config(), manager.Options{
		Scheme:  scheme,
		Cache:   cache.Options{Namespaces: []string{ns}, Mutations: cache.MutationOptions{OnMutation: testenv.ReportMutations(t)}},
		Metrics: manager.MetricsOptions{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := setup(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// until reads events of w until cond accepts one; the bound only keeps a
// broken test from hanging. Unlike watchtools.UntilWithoutRetry, it leaves
// w open for the next wait.
func until(t *testing.T, w watch.Interface, what string, cond func(watch.Event) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("waiting for %s: the watch closed", what)
			}
			if cond(ev) {
				return
			}
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
	}
}

// The ported web reconciler creates one ConfigMap, controlled by its
// Deployment, and reads the Deployment from the cache without modifying it.
func TestWebReconciler(t *testing.T) {
	testWeb(t, setupWeb)
}

// crWebReconciler runs unchanged on the cached client, through
// crport.Reconciler, and does the same.
func TestPortedWebReconciler(t *testing.T) {
	testWeb(t, setupPortedWeb)
}

// testWeb runs the web controller that setup registers, and checks that a
// Deployment gets one ConfigMap it controls.
func testWeb(t *testing.T, setup func(*manager.Manager) error) {
	t.Helper()
	ns := env.Namespace(t)
	cs := env.Client()
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	startManager(t, ns, clientgoscheme.Scheme, setup)

	labels := map[string]string{"app": "web"}
	dep, err := cs.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"example.com/config": "debug"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.com/web"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	until(t, w, "the Deployment's ConfigMap", func(ev watch.Event) bool {
		cm, ok := ev.Object.(*corev1.ConfigMap)
		return ok && ev.Type == watch.Added && cm.Name == "web-config"
	})
	cms, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var owned int
	for i := range cms.Items {
		if metav1.IsControlledBy(&cms.Items[i], dep) {
			owned++
			if got := cms.Items[i].Data["config"]; got != "debug" {
				t.Errorf("data.config = %q, want debug", got)
			}
		}
	}
	if owned != 1 {
		t.Errorf("%d ConfigMaps controlled by the Deployment, want 1", owned)
	}
}

// The Mirror reconciler adds its finalizer, writes its status and an
// Event, and on deletion runs its cleanup before the Mirror goes.
func TestMirrorReconciler(t *testing.T) {
	ns := env.Namespace(t)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := crclient.NewWithWatch(env.Config(), crclient.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	mirrors, err := c.Watch(t.Context(), &v1alpha1.MirrorList{}, crclient.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer mirrors.Stop()
	events, err := env.Client().EventsV1().Events(ns).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer events.Stop()
	var cleanups atomic.Int32
	r := &mirrorReconciler{
		copyInto: func(context.Context, *v1alpha1.Mirror) (int32, error) { return 3, nil },
		deleteCopies: func(context.Context, *v1alpha1.Mirror) error {
			cleanups.Add(1)
			return nil
		},
	}
	startManager(t, ns, scheme, func(mgr *manager.Manager) error { return setupMirror(mgr, r) })

	m := &v1alpha1.Mirror{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ca-bundle"},
		Spec:       v1alpha1.MirrorSpec{Source: v1alpha1.SourceRef{Kind: v1alpha1.KindConfigMap, Name: "ca-bundle"}},
	}
	if err := c.Create(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	until(t, mirrors, "the finalizer and a Ready status", func(ev watch.Event) bool {
		m, ok := ev.Object.(*v1alpha1.Mirror)
		return ok && len(m.Finalizers) == 1 && m.Finalizers[0] == cleanupFinalizer &&
			m.Status.SyncedNamespaces == 3 && m.Status.ObservedGeneration == m.Generation &&
			apimeta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ConditionReady)
	})
	until(t, events, "the Synced Event", func(ev watch.Event) bool {
		e, ok := ev.Object.(*eventsv1.Event)
		return ok && e.Reason == v1alpha1.ReasonSynced && e.Regarding.Name == m.Name && e.ReportingController == "mirror"
	})

	if err := c.Delete(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	until(t, mirrors, "the Mirror to go", func(ev watch.Event) bool {
		return ev.Type == watch.Deleted
	})
	if n := cleanups.Load(); n < 1 {
		t.Errorf("cleanup ran %d times before the Mirror went, want at least 1", n)
	}
}
