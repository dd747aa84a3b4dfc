package faults

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
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
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror/mirrortest"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

func newScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(s), v1alpha1.AddToScheme(s)); err != nil {
		t.Fatal(err)
	}
	return s
}

// operator is a Mirror operator running in the test process.
type operator struct {
	mgr    *manager.Manager
	cancel context.CancelFunc
	done   chan error // receives Start's result once
	once   sync.Once
	err    error
}

// opOptions change how startOperator runs the operator.
type opOptions struct {
	config  *rest.Config // defaults to env.Config()
	manager manager.Options
	workers int // defaults to 2
	logger  logr.Logger
}

// startOperator runs mirror.Setup on a new manager until the test ends (or
// stop is called).
func startOperator(t testing.TB, o opOptions) *operator {
	t.Helper()
	if o.config == nil {
		o.config = env.Config()
	}
	if o.workers == 0 {
		o.workers = 2
	}
	mo := o.manager
	mo.Scheme = newScheme(t)
	if mo.Metrics.BindAddress == "" {
		mo.Metrics.BindAddress = "0"
	}
	if mo.ShutdownTimeout == 0 {
		mo.ShutdownTimeout = 20 * time.Second
	}
	mgr, err := manager.New(o.config, mo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mirror.Setup(mgr, mirror.Policy{}, controller.Options[reconcile.Request]{MaxConcurrentReconciles: o.workers, Logger: o.logger}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	op := &operator{mgr: mgr, cancel: cancel, done: make(chan error, 1)}
	go func() { op.done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		if err := op.stop(); err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return op
}

// stop cancels the operator's context and returns Start's result.
func (op *operator) stop() error {
	op.once.Do(func() {
		op.cancel()
		select {
		case op.err = <-op.done:
		case <-time.After(60 * time.Second):
			op.err = errors.New("manager did not stop within 60s")
		}
	})
	return op.err
}

// world is a client to drive the operator as a user would, and a home
// namespace for the test's Mirrors.
type world struct {
	t     testing.TB
	cl    client.Client
	label map[string]string // on every namespace the test makes
	home  string
}

func newWorld(t testing.TB) *world {
	t.Helper()
	cl, err := client.New(env.Config(), client.Options{Scheme: newScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	home := env.Namespace(t)
	if err := mirrortest.GrantCopier(context.Background(), env.Client(), home, v1alpha1.DefaultServiceAccountName); err != nil {
		t.Fatal(err)
	}
	return &world{t: t, cl: cl, home: home, label: map[string]string{"faults-test": home}}
}

// namespaces makes n namespaces carrying the test's label, which accept
// copies from the Mirrors of w.home.
func (w *world) namespaces(n int) []string {
	w.t.Helper()
	out := make([]string, n)
	for i := range out {
		name := env.Namespace(w.t)
		patch := client.RawPatch("application/merge-patch+json",
			fmt.Appendf(nil, `{"metadata":{"labels":{"faults-test":%q,%q:"true"}}}`, w.home, mirror.AcceptLabel(w.home)))
		if err := w.cl.Patch(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, patch); err != nil {
			w.t.Fatal(err)
		}
		out[i] = name
	}
	return out
}

func (w *world) selector() metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: maps.Clone(w.label)}
}

func (w *world) create(obj client.Object) {
	w.t.Helper()
	if err := w.cl.Create(context.Background(), obj); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) mirror(name, source string, sel metav1.LabelSelector) *v1alpha1.Mirror {
	w.t.Helper()
	m := &v1alpha1.Mirror{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.home},
		Spec:       v1alpha1.MirrorSpec{Source: v1alpha1.SourceRef{Kind: v1alpha1.KindConfigMap, Name: source}, NamespaceSelector: sel},
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

// setData replaces the data of the ConfigMap ns/name, retrying conflicts.
func (w *world) setData(ns, name string, data map[string]string) error {
	for range 20 {
		cm := &corev1.ConfigMap{}
		if err := w.cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
			return err
		}
		cm.Data = data
		err := w.cl.Update(context.Background(), cm)
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("update %s/%s: 20 conflicts in a row", ns, name)
}

// eventually polls cond until it holds, for at most timeout.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() error) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		err := cond()
		if err == nil {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *world) eventually(what string, cond func() error) time.Duration {
	w.t.Helper()
	return eventually(w.t, 60*time.Second, what, cond)
}

func (w *world) data(ns, name string) (map[string]string, error) {
	cm := &corev1.ConfigMap{}
	if err := w.cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		return nil, err
	}
	return cm.Data, nil
}

func (w *world) hasData(ns, name string, want map[string]string) func() error {
	return func() error {
		got, err := w.data(ns, name)
		if err != nil {
			return err
		}
		if !maps.Equal(got, want) {
			return fmt.Errorf("%s/%s holds %v, want %v", ns, name, got, want)
		}
		return nil
	}
}

// copiesEqual checks that every namespace in nss holds a copy of name with
// want.
func (w *world) copiesEqual(nss []string, name string, want map[string]string) func() error {
	return func() error {
		var errs []error
		for _, ns := range nss {
			errs = append(errs, w.hasData(ns, name, want)())
		}
		return errors.Join(errs...)
	}
}

func (w *world) gone(obj client.Object) func() error {
	return func() error {
		err := w.cl.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("%s/%s still exists", obj.GetNamespace(), obj.GetName())
	}
}

// condition returns a check that m's Ready condition has status and reason.
func (w *world) condition(m *v1alpha1.Mirror, status metav1.ConditionStatus, reason string) func() error {
	return func() error {
		got := &v1alpha1.Mirror{}
		if err := w.cl.Get(context.Background(), client.ObjectKeyFromObject(m), got); err != nil {
			return err
		}
		c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != status || c.Reason != reason || got.Status.ObservedGeneration != got.Generation {
			return fmt.Errorf("status %+v, want Ready=%s reason %s", got.Status, status, reason)
		}
		return nil
	}
}

// event returns a check that a Warning Event with reason ("" for any) is
// about m.
func (w *world) event(m *v1alpha1.Mirror, reason string) func() error {
	return func() error {
		evs := &eventsv1.EventList{}
		if err := w.cl.List(context.Background(), evs, client.InNamespace(m.Namespace)); err != nil {
			return err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Regarding.Name != m.Name {
				continue
			}
			if (reason == "" || e.Reason == reason) && e.Type == corev1.EventTypeWarning {
				return nil
			}
			seen = append(seen, e.Type+"/"+e.Reason)
		}
		return fmt.Errorf("no Warning Event %s about %s (seen: %s)", reason, m.Name, strings.Join(seen, ", "))
	}
}

// counter sums the counters (or gauges) called name in the operator's
// registry whose labels include every pair of match.
func (op *operator) counter(t testing.TB, name string, match map[string]string) float64 {
	t.Helper()
	mfs, err := op.mgr.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range match {
				if labels[k] != v {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}
