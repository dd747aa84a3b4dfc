package dispatch

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/opkit-dev/opkit/pkg/cache/cachetest"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/sharding"
	"github.com/opkit-dev/opkit/pkg/source"
)

// UIDs whose slot of two is 0 and 1.
const (
	uidSlot0 = "5d2c9e7a-1f43-4b8e-a6d0-92c4e1f7a3b5"
	uidSlot1 = "0b6f4c1e-8a65-4d3a-9c51-3f2a7e9d1b20"
)

// A deleted object's slot is kept only TombstoneTTL on a replica that does
// not hold the slot (the holder's reconcile is not seen there), and until
// its key is reconciled on one that does: a replica's memory does not grow
// with every object ever deleted.
func TestTombstonesPruned(t *testing.T) {
	slots, _ := sharding.NewSlots(2)
	if slots.OfValue(uidSlot0) != 0 || slots.OfValue(uidSlot1) != 1 {
		t.Fatal("the test's UIDs are not in slots 0 and 1")
	}
	static, err := cachetest.New[*corev1.ConfigMap](cachetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	d, err := New(MemberFunc(func(slot int) bool { return slot == 0 }), Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGate(d, static.Lister(), GateOptions{Controller: "c", Slots: slots, TombstoneTTL: time.Minute, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	q := queue.New(queue.Options[reconcile.Request]{})
	defer q.ShutDown()
	h := g.Record(source.HandlerFunc[*corev1.ConfigMap, reconcile.Request](func(source.Event[*corev1.ConfigMap], *queue.Queue[reconcile.Request]) {}))
	deleted := func(name, uid string) {
		h.Handle(source.Event[*corev1.ConfigMap]{Type: source.Delete, Object: &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)}}}, q)
	}
	deleted("there", uidSlot1) // another replica holds slot 1
	deleted("here", uidSlot0)  // this one holds slot 0, and has not reconciled it yet
	key := func(name string) reconcile.Request { return reconcile.Request{Namespace: "ns", Name: name} }
	if v, _ := g.Admit(key("there"), 0); v != controller.Skip {
		t.Fatalf("Admit(there) = %v before the TTL, want Skip (its slot known, not held)", v)
	}
	clk.Step(time.Minute)
	deleted("later", uidSlot1) // a delete prunes
	if v, _ := g.Admit(key("there"), 0); v != controller.Retry {
		t.Errorf("Admit(there) = %v after the TTL, want Retry: its tombstone should be pruned", v)
	}
	if v, done := g.Admit(key("here"), 0); v != controller.Admit {
		t.Errorf("Admit(here) = %v after the TTL, want Admit: the slot is held, so its tombstone stays until reconciled", v)
	} else {
		done(false)
	}
	if v, _ := g.Admit(key("here"), 0); v != controller.Retry {
		t.Errorf("Admit(here) = %v once reconciled, want Retry: its tombstone should be gone", v)
	}
}
