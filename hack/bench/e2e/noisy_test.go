package main

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

func quietCopy(home, ns string, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns, Labels: map[string]string{mirror.LabelMirrorNamespace: home}},
		Data:       map[string]string{"version": v},
	}
}

// The tracker answers a waiter only once every copy of its tenant holds
// the version, not before, and not for another tenant's copies.
func TestQuietTracker(t *testing.T) {
	q := newQuietTracker(2, clock.RealClock{})
	q.observe(quietCopy("a", "a-0", "v1"), false)
	q.observe(quietCopy("a", "a-1", "v1"), false)
	w := q.expect("a", 2)
	q.observe(quietCopy("a", "a-0", "v2"), false)
	q.observe(quietCopy("b", "b-1", "v2"), false)
	select {
	case <-w.at:
		t.Fatal("answered with one of two copies at version 2")
	default:
	}
	q.observe(cache.DeletedFinalStateUnknown{Obj: quietCopy("a", "a-1", "v1")}, false)
	q.observe(quietCopy("a", "a-1", "v3"), false) // later than asked: holds
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := q.await(ctx, "a", w, time.Hour); err != nil {
		t.Fatal(err)
	}
	// Already held: answered at once.
	if _, err := q.wait(ctx, "a", 2, time.Hour); err != nil {
		t.Fatal(err)
	}
	q.observe(cache.DeletedFinalStateUnknown{Obj: quietCopy("a", "a-1", "v3")}, false)
	w = q.expect("a", 2)
	cancel()
	if _, err := q.await(ctx, "a", w, time.Hour); err == nil {
		t.Error("answered with a copy deleted")
	}
}

// Open-loop quiet tenants change again before their last change
// converged: the tracker keeps every outstanding wait of a tenant and
// answers each once the copies hold its version or a newer one.
func TestQuietTrackerOverlappingWaits(t *testing.T) {
	q := newQuietTracker(2, clock.RealClock{})
	q.observe(quietCopy("a", "a-0", "v1"), false)
	q.observe(quietCopy("a", "a-1", "v1"), false)
	w2, w3, w4 := q.expect("a", 2), q.expect("a", 3), q.expect("a", 4)
	answered := func(w waiter) bool {
		select {
		case <-w.at:
			return true
		default:
			return false
		}
	}
	q.observe(quietCopy("a", "a-0", "v3"), false)
	q.observe(quietCopy("a", "a-1", "v3"), false) // v2 overtaken by v3
	if !answered(w2) || !answered(w3) {
		t.Fatal("copies at version 3: the waits for versions 2 and 3 are not both answered")
	}
	if answered(w4) {
		t.Fatal("copies at version 3: the wait for version 4 is answered")
	}
	q.observe(quietCopy("a", "a-0", "v4"), false)
	q.observe(quietCopy("a", "a-1", "v4"), false)
	if !answered(w4) {
		t.Fatal("copies at version 4: the wait for version 4 is not answered")
	}
}
