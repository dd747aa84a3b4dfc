package status_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/conditions"
	"github.com/opkit-dev/opkit/pkg/status"
)

// A reconciler's status writes over a Widget's life: one request per change,
// none when nothing changed, lastTransitionTime moving only with the status,
// and the object passed in never modified.
func TestPatch(t *testing.T) {
	ns := env.Namespace(t)
	c, requests := newClient(t)
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	setter := conditions.Setter{Clock: clk}
	report := func(st metav1.ConditionStatus, reason string, copies int32) func(*Widget) {
		return func(w *Widget) {
			w.Status.ObservedGeneration = w.Generation
			w.Status.Copies = copies
			setter.Set(&w.Status.Conditions, w, metav1.Condition{Type: "Ready", Status: st, Reason: reason, Message: reason})
		}
	}
	steps := []struct {
		name     string
		mutate   func(*Widget)
		wantSent bool
		wantLTT  time.Time
	}{
		{"first status", report(metav1.ConditionFalse, "Pending", 0), true, t0},
		{"same again", report(metav1.ConditionFalse, "Pending", 0), false, t0},
		{"reason changes", report(metav1.ConditionFalse, "SyncFailed", 0), true, t0},
		{"count changes", report(metav1.ConditionFalse, "SyncFailed", 2), true, t0},
		{"status changes", report(metav1.ConditionTrue, "Synced", 2), true, t0.Add(4 * time.Minute)},
		{"nothing to do", func(*Widget) {}, false, t0.Add(4 * time.Minute)},
	}
	w := newWidget(t, c, ns)
	for _, s := range steps {
		cached := &Widget{} // as the cache would hold it
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(w), cached); err != nil {
			t.Fatal(err)
		}
		before := cached.DeepCopy()
		requests.Store(0)
		patched, err := status.Patch(t.Context(), c, cached, s.mutate)
		if err != nil || patched != s.wantSent {
			t.Fatalf("%s: Patch = %v, %v; want %v, nil", s.name, patched, err, s.wantSent)
		}
		if d := cmp.Diff(before, cached); d != "" {
			t.Errorf("%s: Patch modified the object passed in (-before +after):\n%s", s.name, d)
		}
		if want := map[bool]int64{true: 1, false: 0}[s.wantSent]; requests.Load() != want {
			t.Errorf("%s: %d requests, want %d", s.name, requests.Load(), want)
		}
		got := &Widget{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(w), got); err != nil {
			t.Fatal(err)
		}
		ready := got.Status.Conditions[0]
		if !ready.LastTransitionTime.Time.Equal(s.wantLTT) || ready.ObservedGeneration != got.Generation {
			t.Errorf("%s: Ready at generation %d since %v; want generation %d since %v", s.name,
				ready.ObservedGeneration, ready.LastTransitionTime.Time, got.Generation, s.wantLTT)
		}
		clk.SetTime(clk.Now().Add(time.Minute))
	}
}

func (w *Widget) DeepCopy() *Widget { return w.DeepCopyObject().(*Widget) }

// With WithOptimisticLock, a status computed from an object that changed
// since it was read is refused with a Conflict, whether the spec or the
// status changed, and the newer status stays. Without it, the patch is
// written, and carries only the fields the reconcile changed.
func TestPatchConflict(t *testing.T) {
	ns := env.Namespace(t)
	c, _ := newClient(t)
	tests := []struct {
		name   string
		change func(context.Context, *Widget) error
	}{
		{"spec", func(ctx context.Context, w *Widget) error {
			w.Spec = map[string]string{"size": "2"}
			return c.Update(ctx, w)
		}},
		{"status", func(ctx context.Context, w *Widget) error {
			w.Status.Copies = 7
			return c.Status().Update(ctx, w)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stale := newWidget(t, c, ns)
			if err := tt.change(t.Context(), stale.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			cur := &Widget{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(stale), cur); err != nil {
				t.Fatal(err)
			}
			patched, err := status.Patch(t.Context(), c, stale, func(w *Widget) { w.Status.Copies = 1 }, status.WithOptimisticLock())
			if !apierrors.IsConflict(err) || patched {
				t.Fatalf("Patch of a stale object = %v, %v; want false and a Conflict", patched, err)
			}
			got := &Widget{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(stale), got); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(cur.Status, got.Status); d != "" {
				t.Errorf("status overwritten (-want +got):\n%s", d)
			}
		})
	}
}

// Unguarded, a patch computed from a stale object is written, and sends
// only what the reconcile changed: a status field it left alone keeps the
// newer value another writer gave it.
func TestPatchUnguardedSendsOnlyChanges(t *testing.T) {
	ns := env.Namespace(t)
	c, _ := newClient(t)
	stale := newWidget(t, c, ns)
	newer := stale.DeepCopy()
	newer.Spec = map[string]string{"size": "2"}
	if err := c.Update(t.Context(), newer); err != nil {
		t.Fatal(err)
	}
	newer.Status.ObservedGeneration = 5
	if err := c.Status().Update(t.Context(), newer); err != nil {
		t.Fatal(err)
	}
	patched, err := status.Patch(t.Context(), c, stale, func(w *Widget) { w.Status.Copies = 3 })
	if err != nil || !patched {
		t.Fatalf("Patch of a stale object = %v, %v; want true, nil", patched, err)
	}
	got := &Widget{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(stale), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Copies != 3 || got.Status.ObservedGeneration != 5 {
		t.Errorf("status = %+v, want copies 3 written and observedGeneration 5 kept", got.Status)
	}
}

// A deleted object's status patch fails with NotFound, named.
func TestPatchNotFound(t *testing.T) {
	ns := env.Namespace(t)
	c, _ := newClient(t)
	w := newWidget(t, c, ns)
	if err := c.Delete(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	_, err := status.Patch(t.Context(), c, w, func(w *Widget) { w.Status.Copies = 1 })
	if !apierrors.IsNotFound(err) {
		t.Errorf("Patch of a deleted object: %v; want NotFound", err)
	}
}

// The object a Lister hands out is shared: Patch leaves it as it is. The
// mutation detector that testenv.Main turns on would fail the test binary
// otherwise; the comparison with a copy says so here.
func TestPatchListerObject(t *testing.T) {
	ns := env.Namespace(t)
	c, requests := newClient(t)
	w := newWidget(t, c, ns)
	informers, err := cache.New(env.Config(), cache.Options{Namespaces: []string{ns}, Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	widgets, err := cache.Register[*Widget](informers, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := informers.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := informers.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	cached, err := widgets.Get(ns, w.Name)
	if err != nil {
		t.Fatal(err)
	}
	before := cached.DeepCopy()
	requests.Store(0)
	patched, err := status.Patch(ctx, c, cached, func(w *Widget) {
		w.Status.Copies = 3
		conditions.Set(&w.Status.Conditions, w, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Synced"})
	})
	if err != nil || !patched || requests.Load() != 1 {
		t.Fatalf("Patch = %v, %v after %d requests; want true, nil after 1", patched, err, requests.Load())
	}
	if d := cmp.Diff(before, cached); d != "" {
		t.Errorf("Patch modified the Lister's object (-before +after):\n%s", d)
	}
}
