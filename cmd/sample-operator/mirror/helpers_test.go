package mirror_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1beta1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror/mirrortest"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(s), v1alpha1.AddToScheme(s), v1beta1.AddToScheme(s)); err != nil {
		t.Fatal(err)
	}
	return s
}

// world is a running Mirror operator and a client to drive it as a user
// would.
type world struct {
	t   *testing.T
	mgr *manager.Manager
	cl  client.Client
	// label is a label unique to the test, on every namespace it makes, so
	// that its Mirrors select only those.
	label map[string]string
	home  string // the Mirrors' namespace
}

func operator(t *testing.T) *world {
	t.Helper()
	return operatorWith(t, env.Config(), mirror.Policy{})
}

// operatorWith is operator with the operator's REST config cfg and
// tenancy policy p.
func operatorWith(t *testing.T, cfg *rest.Config, p mirror.Policy) *world {
	t.Helper()
	scheme := newScheme(t)
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:  scheme,
		Metrics: manager.MetricsOptions{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mirror.Setup(mgr, p, controller.Options[reconcile.Request]{MaxConcurrentReconciles: 2}); err != nil {
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
	cl, err := client.New(env.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	home := env.Namespace(t)
	// The Mirrors' ServiceAccount may copy anywhere: what limits them here
	// is the operator's policy.
	if err := mirrortest.GrantCopier(t.Context(), env.Client(), home, v1alpha1.DefaultServiceAccountName); err != nil {
		t.Fatal(err)
	}
	return &world{t: t, mgr: mgr, cl: cl, home: home, label: map[string]string{"mirror-test": home}}
}

// namespace makes a namespace with the test's label and extra labels that
// accepts copies from every Mirror of the test's home namespace
// (mirror.AcceptLabel).
func (w *world) namespace(extra map[string]string) string {
	w.t.Helper()
	return w.namespaceLabelled(true, extra)
}

// foreignNamespace makes a namespace with the test's label and extra
// labels that accepts no copy.
func (w *world) foreignNamespace(extra map[string]string) string {
	w.t.Helper()
	return w.namespaceLabelled(false, extra)
}

func (w *world) namespaceLabelled(accept bool, extra map[string]string) string {
	w.t.Helper()
	name := env.Namespace(w.t)
	ns := &corev1.Namespace{}
	if err := w.cl.Get(w.t.Context(), client.ObjectKey{Name: name}, ns); err != nil {
		w.t.Fatal(err)
	}
	ns.Labels = map[string]string{}
	for k, v := range w.label {
		ns.Labels[k] = v
	}
	if accept {
		ns.Labels[mirror.AcceptLabel(w.home)] = "true"
	}
	for k, v := range extra {
		ns.Labels[k] = v
	}
	if err := w.cl.Update(w.t.Context(), ns); err != nil {
		w.t.Fatal(err)
	}
	return name
}

func (w *world) relabel(ns string, labels map[string]string) {
	w.t.Helper()
	patch := client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"metadata":{"labels":%s}}`, mustJSON(labels))))
	if err := w.cl.Patch(w.t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, patch); err != nil {
		w.t.Fatal(err)
	}
}

func mustJSON(m map[string]string) string {
	out := "{"
	first := true
	for k, v := range m {
		if !first {
			out += ","
		}
		first = false
		if v == "" {
			out += fmt.Sprintf("%q:null", k)
		} else {
			out += fmt.Sprintf("%q:%q", k, v)
		}
	}
	return out + "}"
}

// selecting returns a selector of the test's namespaces with extra labels.
func (w *world) selecting(extra map[string]string) metav1.LabelSelector {
	l := map[string]string{}
	for k, v := range w.label {
		l[k] = v
	}
	for k, v := range extra {
		l[k] = v
	}
	return metav1.LabelSelector{MatchLabels: l}
}

func (w *world) create(obj client.Object) {
	w.t.Helper()
	if err := w.cl.Create(w.t.Context(), obj); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) mirror(name, kind, source string, sel metav1.LabelSelector) *v1alpha1.Mirror {
	w.t.Helper()
	m := &v1alpha1.Mirror{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.home},
		Spec:       v1alpha1.MirrorSpec{Source: v1alpha1.SourceRef{Kind: kind, Name: source}, NamespaceSelector: sel},
	}
	w.create(m)
	return m
}

func (w *world) configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	w.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}
	w.create(cm)
	return cm
}

// eventually polls cond, through the API server, until it holds.
func (w *world) eventually(what string, cond func() error) {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out waiting for %s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// copyData returns the data of the ConfigMap ns/name, from the API server.
func (w *world) copyData(ns, name string) (map[string]string, error) {
	cm := &corev1.ConfigMap{}
	if err := w.cl.Get(w.t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		return nil, err
	}
	return cm.Data, nil
}

func (w *world) hasData(ns, name string, want map[string]string) func() error {
	return func() error {
		got, err := w.copyData(ns, name)
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("%s/%s holds %v, want %v", ns, name, got, want)
		}
		return nil
	}
}

func (w *world) gone(obj client.Object) func() error {
	return func() error {
		err := w.cl.Get(w.t.Context(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("%s/%s still exists", obj.GetNamespace(), obj.GetName())
	}
}

// ready returns a check that the Mirror's Ready condition has reason and
// that it counts synced namespaces.
func (w *world) ready(m *v1alpha1.Mirror, reason string, synced int32) func() error {
	return func() error {
		got := &v1alpha1.Mirror{}
		if err := w.cl.Get(w.t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
			return err
		}
		c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Reason != reason || got.Status.SyncedNamespaces != synced || got.Status.ObservedGeneration != got.Generation {
			return fmt.Errorf("status %+v, want Ready reason %s with %d namespaces synced", got.Status, reason, synced)
		}
		return nil
	}
}

// event returns a check that a Warning Event with reason is about m.
func (w *world) event(m *v1alpha1.Mirror, reason string) func() error {
	return func() error {
		evs := &eventsv1.EventList{}
		if err := w.cl.List(w.t.Context(), evs, client.InNamespace(m.Namespace)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == m.Name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return fmt.Errorf("no Warning Event %s about %s", reason, m.Name)
	}
}

// reconciles returns how many times the mirror controller reconciled, by
// result.
func (w *world) reconciles(result string) float64 {
	w.t.Helper()
	n, err := testutil.GatherAndCount(w.mgr.Registry(), imetrics.ReconcileTotal)
	if err != nil || n == 0 {
		w.t.Fatalf("no %s series: %v", imetrics.ReconcileTotal, err)
	}
	mfs, err := w.mgr.Registry().Gather()
	if err != nil {
		w.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != imetrics.ReconcileTotal {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
