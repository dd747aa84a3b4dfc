package faults

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/pkg/metrics"
)

// retries reads the mirror controller's rate-limited retries and error
// results.
func (op *operator) retries(t testing.TB) (retries, errs float64) {
	t.Helper()
	return op.counter(t, "workqueue_retries_total", map[string]string{"name": "mirror"}),
		op.counter(t, metrics.ReconcileTotal, map[string]string{"controller": "mirror", "result": metrics.ResultError})
}

// quiet checks that the operator neither retries nor fails a reconcile for
// d: what bad input must look like once reported.
func quiet(t *testing.T, op *operator, d time.Duration) {
	t.Helper()
	r0, e0 := op.retries(t)
	time.Sleep(d)
	r1, e1 := op.retries(t)
	t.Logf("over %v: %v retries, %v errors", d, r1-r0, e1-e0)
	if r1 != r0 || e1 != e0 {
		t.Errorf("over %v the operator retried %v times and failed %v reconciles: bad input must not be retried until it changes", d, r1-r0, e1-e0)
	}
}

// A selector the CRD accepts but labels.Selector rejects (a value with
// spaces) is a terminal error: reported, counted once, never retried.
func TestBadInputMalformedSelector(t *testing.T) {
	w := newWorld(t)
	op := startOperator(t, opOptions{})
	w.configMap(w.home, "cfg", map[string]string{"k": "v"})
	sel := w.selector()
	sel.MatchLabels["team"] = "not a valid label value"
	m := w.mirror("bad-selector", "cfg", sel)

	w.eventually("Ready=False InvalidSpec", w.condition(m, metav1.ConditionFalse, v1alpha1.ReasonInvalidSpec))
	w.eventually("an InvalidSpec Event", w.event(m, v1alpha1.ReasonInvalidSpec))
	eventually(t, 10*time.Second, "a terminal error counted", func() error {
		if n := op.counter(t, metrics.TerminalReconcileErrors, map[string]string{"controller": "mirror"}); n < 1 {
			return fmt.Errorf("%s = %v", metrics.TerminalReconcileErrors, n)
		}
		return nil
	})
	quiet(t, op, 3*time.Second)

	// Fixing the spec is the change that ends it.
	fixed := &v1alpha1.Mirror{}
	if err := w.cl.Get(t.Context(), client.ObjectKeyFromObject(m), fixed); err != nil {
		t.Fatal(err)
	}
	fixed.Spec.NamespaceSelector = w.selector()
	if err := w.cl.Update(t.Context(), fixed); err != nil {
		t.Fatal(err)
	}
	nss := w.namespaces(1)
	w.eventually("Ready once fixed", w.condition(m, metav1.ConditionTrue, v1alpha1.ReasonSynced))
	w.eventually("a copy once fixed", w.hasData(nss[0], "cfg", map[string]string{"k": "v"}))
}

// A missing source is reported and waited for, not polled: its creation
// is the event that resumes the Mirror.
func TestBadInputMissingSource(t *testing.T) {
	w := newWorld(t)
	nss := w.namespaces(2)
	op := startOperator(t, opOptions{})
	m := w.mirror("missing", "not-yet", w.selector())

	w.eventually("Ready=False SourceNotFound", w.condition(m, metav1.ConditionFalse, v1alpha1.ReasonSourceNotFound))
	w.eventually("a SourceNotFound Event", w.event(m, v1alpha1.ReasonSourceNotFound))
	quiet(t, op, 3*time.Second)

	w.configMap(w.home, "not-yet", map[string]string{"k": "v"})
	w.eventually("copies once the source exists", w.copiesEqual(nss, "not-yet", map[string]string{"k": "v"}))
	w.eventually("Ready once the source exists", w.condition(m, metav1.ConditionTrue, v1alpha1.ReasonSynced))
}

// An object of the source's name that the Mirror does not own is left
// untouched, reported, and not retried; the other namespaces get copies.
func TestBadInputNameCollision(t *testing.T) {
	w := newWorld(t)
	nss := w.namespaces(3)
	theirs := w.configMap(nss[0], "cfg", map[string]string{"owner": "someone else"})
	op := startOperator(t, opOptions{})
	w.configMap(w.home, "cfg", map[string]string{"k": "v"})
	m := w.mirror("collide", "cfg", w.selector())

	w.eventually("copies where there is no collision", w.copiesEqual(nss[1:], "cfg", map[string]string{"k": "v"}))
	w.eventually("Ready=False Conflict", w.condition(m, metav1.ConditionFalse, v1alpha1.ReasonConflict))
	w.eventually("a Conflict Event", w.event(m, v1alpha1.ReasonConflict))
	quiet(t, op, 3*time.Second)
	got := &corev1.ConfigMap{}
	if err := w.cl.Get(t.Context(), client.ObjectKeyFromObject(theirs), got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != theirs.ResourceVersion || len(got.Labels) != 0 {
		t.Errorf("the unowned object was written: resourceVersion %s -> %s, labels %v", theirs.ResourceVersion, got.ResourceVersion, got.Labels)
	}
}

// A copy that cannot hold what the Mirror puts on it. A copy's data is the
// source's, and the API server's 1 MiB limit on a ConfigMap counts data
// only, so a source at the limit always fits in a copy; what a copy adds
// is two labels, and a label value holds at most 63 characters while a
// Mirror's name may have 253. A Mirror named with 64 or more characters
// therefore has copies the API server rejects, whatever the source.
//
// The operator must say so (Ready=False and a Warning Event) and back off.
func TestBadInputCopyCannotHoldTheMirrorLabel(t *testing.T) {
	w := newWorld(t)
	nss := w.namespaces(1)
	op := startOperator(t, opOptions{})
	w.configMap(w.home, "cfg", map[string]string{"k": "v"})
	m := w.mirror("long-"+strings.Repeat("x", 64), "cfg", w.selector())

	start := time.Now()
	var samples []float64
	for range 4 {
		time.Sleep(3 * time.Second)
		r, _ := op.retries(t)
		samples = append(samples, r)
	}
	t.Logf("retries of a Mirror whose copies are rejected, cumulative at 3s intervals after %v: %v", time.Since(start).Round(time.Second), samples)
	first, last := samples[0], samples[3]-samples[2]
	if first == 0 {
		t.Fatalf("no retries in the first 3s: the rejected copy was not retried at all")
	}
	if last >= first/2 {
		t.Errorf("retries did not back off: %v in the first 3s, %v in 9-12s", first, last)
	}
	if err := w.gone(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: nss[0], Name: "cfg"}})(); err != nil {
		t.Errorf("a copy exists: %v", err)
	}
	// What a user sees: the status and an Event must say the copy fails.
	got := &v1alpha1.Mirror{}
	if err := w.cl.Get(t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
		t.Fatal(err)
	}
	t.Logf("status of the Mirror: %+v", got.Status)
	if err := w.condition(m, metav1.ConditionTrue, v1alpha1.ReasonSynced)(); err == nil {
		t.Errorf("BUG: Ready=True reason Synced (%d namespaces synced) while every copy is rejected by the API server; "+
			"the reconciler reports Synced whenever syncCopy errors, and records no Event", got.Status.SyncedNamespaces)
	}
	if err := w.event(m, "")(); err != nil {
		t.Errorf("no Warning Event tells the user why no copy is made: %v", err)
	}
}
