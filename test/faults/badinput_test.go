package faults

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
)

// retries reads the mirror controller's rate-limited retries and error
// results.
func (op *operator) retries(t testing.TB) (retries, errs float64) {
	t.Helper()
	return op.counter(t, "workqueue_retries_total", map[string]string{"name": "mirror"}),
		op.counter(t, imetrics.ReconcileTotal, map[string]string{"controller": "mirror", "result": imetrics.ResultError})
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
		if n := op.counter(t, imetrics.TerminalReconcileErrors, map[string]string{"controller": "mirror"}); n < 1 {
			return fmt.Errorf("%s = %v", imetrics.TerminalReconcileErrors, n)
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

// A copy that a namespace cannot hold (its quota allows no more
// ConfigMaps; a source's data always fits a copy, which adds two short
// labels) is reported as SyncFailed with an Event, the other namespaces
// still get theirs, and the retries back off.
func TestBadInputNamespaceCannotHoldACopy(t *testing.T) {
	w := newWorld(t)
	nss := w.namespaces(2)
	full, fine := nss[0], nss[1]
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-configmaps", Namespace: full},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/configmaps": resource.MustParse("0")}},
	}
	w.create(quota)
	// No quota controller runs here: set the usage it would.
	quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{"count/configmaps": resource.MustParse("0")}}
	if err := w.cl.Status().Update(t.Context(), quota); err != nil {
		t.Fatal(err)
	}
	op := startOperator(t, opOptions{})
	w.configMap(w.home, "cfg", map[string]string{"k": "v"})
	m := w.mirror("quota", "cfg", w.selector())

	w.eventually("the copy in the namespace with room", w.hasData(fine, "cfg", map[string]string{"k": "v"}))
	w.eventually("SyncFailed", w.condition(m, metav1.ConditionFalse, v1alpha1.ReasonSyncFailed))
	w.eventually("a SyncFailed Event", w.event(m, v1alpha1.ReasonSyncFailed))
	start := time.Now()
	var samples []float64
	for range 4 {
		time.Sleep(3 * time.Second)
		r, _ := op.retries(t)
		samples = append(samples, r)
	}
	t.Logf("retries of a Mirror whose copy a quota rejects, cumulative at 3s intervals after %v: %v", time.Since(start).Round(time.Second), samples)
	if first, last := samples[0], samples[3]-samples[2]; last >= first/2+1 {
		t.Errorf("retries did not back off: %v by 3s, %v in 9-12s", first, last)
	}
	if err := w.gone(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: full, Name: "cfg"}})(); err != nil {
		t.Errorf("a copy exists despite the quota: %v", err)
	}
}

// A Mirror whose name cannot label its copies is refused at admission.
func TestBadInputNameTooLongForALabel(t *testing.T) {
	w := newWorld(t)
	err := w.cl.Create(t.Context(), &v1alpha1.Mirror{
		ObjectMeta: metav1.ObjectMeta{Name: "long-" + strings.Repeat("x", 64), Namespace: w.home},
		Spec:       v1alpha1.MirrorSpec{Source: v1alpha1.SourceRef{Kind: v1alpha1.KindConfigMap, Name: "cfg"}},
	})
	if err == nil || !strings.Contains(err.Error(), "at most 63 characters") {
		t.Errorf("Create of a Mirror with a 69-character name = %v, want a validation error", err)
	}
}
