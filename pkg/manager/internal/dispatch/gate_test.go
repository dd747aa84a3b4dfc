package dispatch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/internal/sharding/membership"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/sharding"
	"github.com/opkit-dev/opkit/pkg/source"
)

const gateSlots = 4

// fixture is a gate over ConfigMaps of one namespace, whose Record-wrapped
// source feeds q, with one member holding every slot.
type fixture struct {
	ns     string
	gate   *Gate[*corev1.ConfigMap]
	q      *queue.Queue[reconcile.Request]
	reg    *prometheus.Registry
	lister *cache.Lister[*corev1.ConfigMap]
}

func newFixture(t *testing.T, key sharding.Key, members ...string) []*fixture {
	t.Helper()
	ns := env.Namespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var out []*fixture
	for _, who := range members {
		f := &fixture{ns: ns, reg: prometheus.NewRegistry(), q: queue.New(queue.Options[reconcile.Request]{})}
		c, err := cache.New(env.Config(), cache.Options{Namespaces: []string{ns}})
		if err != nil {
			t.Fatal(err)
		}
		if f.lister, err = cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{}); err != nil {
			t.Fatal(err)
		}
		var d *Dispatcher
		member, err := membership.New(env.Client(), membership.Options{
			Namespace: ns, Group: "gate", Identity: who, Slots: gateSlots,
			LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 200 * time.Millisecond,
			Handler: membership.HandlerFuncs{OnHeld: func(s []int) { d.Held(s) }, OnRelease: func(ctx context.Context, s []int) { d.Release(ctx, s) }},
		})
		if err != nil {
			t.Fatal(err)
		}
		if d, err = New(member, Options{}); err != nil {
			t.Fatal(err)
		}
		slots, _ := sharding.NewSlots(gateSlots)
		if f.gate, err = NewGate(d, f.lister, GateOptions{Controller: "c", Slots: slots, Key: key, Registerer: f.reg}); err != nil {
			t.Fatal(err)
		}
		f.gate.Attach(f.q)
		src := source.NewKind(f.lister, f.gate.Record(source.EnqueueObject[*corev1.ConfigMap]()))
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := src.Start(ctx, f.q); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitForSync(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.q.ShutDown)
		done := make(chan error, 1)
		go func() { done <- member.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		out = append(out, f)
	}
	eventually(t, "the members to hold every slot between them, evenly", func() bool {
		n := 0
		for _, f := range out {
			held := 0
			for s := range gateSlots {
				if f.gate.d.member.MayDispatch(s) {
					held++
				}
			}
			if held < gateSlots/len(out) {
				return false
			}
			n += held
		}
		return n == gateSlots
	})
	return out
}

func (f *fixture) skipped(reason string) float64 {
	return testutil.ToFloat64(mustSkipped(f.reg).WithLabelValues("c", reason))
}

func mustSkipped(reg prometheus.Registerer) *prometheus.CounterVec {
	c, err := newSkipped(reg)
	if err != nil {
		panic(err)
	}
	return c
}

// Under ByUID a key's slot comes from its object: from the primary
// source's events, kept after a delete until the key has been reconciled;
// a key never seen is retried MaxUnknownRetries times, then dropped, and
// both are counted.
func TestGateByUID(t *testing.T) {
	f := newFixture(t, sharding.ByUID, "only")[0]
	cms := env.Client().CoreV1().ConfigMaps(f.ns)
	cm, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := reconcile.Request{Namespace: f.ns, Name: "a"}
	eventually(t, "the source to record a's slot", func() bool {
		f.gate.mu.Lock()
		defer f.gate.mu.Unlock()
		_, ok := f.gate.known[key]
		return ok
	})
	if err := cms.Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the delete to reach the gate", func() bool {
		f.gate.mu.Lock()
		defer f.gate.mu.Unlock()
		return !f.gate.known[key].deleted.IsZero()
	})
	// Deleted, not reconciled yet: its slot is still known, and a slot
	// gained queues it.
	v, done := f.gate.Admit(key, 0)
	if v != controller.Admit {
		t.Fatalf("Admit of a deleted key not yet reconciled = %v, want Admit", v)
	}
	if want := f.gate.slots.SlotOf(sharding.ByUID, cm); f.gate.d.InFlight() != 1 || f.gate.d.inflight[want] != 1 {
		t.Errorf("in flight %v, want one reconcile of slot %d", f.gate.d.inflight, want)
	}
	done(true) // requeued: still known
	if v, done := f.gate.Admit(key, 1); v != controller.Admit {
		t.Fatalf("Admit after a requeue = %v, want Admit", v)
	} else {
		done(false) // reconciled: forgotten
	}
	for retries := range MaxUnknownRetries {
		if v, _ := f.gate.Admit(key, retries); v != controller.Retry {
			t.Fatalf("Admit of an unknown key at retry %d = %v, want Retry", retries, v)
		}
	}
	if v, _ := f.gate.Admit(key, MaxUnknownRetries); v != controller.Skip {
		t.Fatalf("Admit of an unknown key after %d retries = %v, want Skip", MaxUnknownRetries, v)
	}
	if got := f.skipped(imetrics.SkippedSlotUnknown); got != MaxUnknownRetries {
		t.Errorf("%s = %v, want %d", imetrics.SkippedSlotUnknown, got, MaxUnknownRetries)
	}
	if got := f.skipped(imetrics.SkippedSlotUnknownDropped); got != 1 {
		t.Errorf("%s = %v, want 1", imetrics.SkippedSlotUnknownDropped, got)
	}
	if n := f.gate.d.InFlight(); n != 0 {
		t.Errorf("InFlight() = %d after every admitted reconcile returned", n)
	}
}

// Under ByNamespace a key's slot is its namespace's, with no lookup: a key
// of a slot another member holds is skipped and counted, and Held queues
// every cached key of the slots gained.
func TestGateByNamespaceAndHeld(t *testing.T) {
	fs := newFixture(t, sharding.ByNamespace, "a", "b")
	slots, _ := sharding.NewSlots(gateSlots)
	for _, f := range fs {
		heldHere, heldThere := -1, -1
		var here, there string
		for i := 0; heldHere < 0 || heldThere < 0; i++ {
			ns := fmt.Sprintf("ns-%d", i)
			s := slots.OfValue(ns)
			if f.gate.d.member.MayDispatch(s) && heldHere < 0 {
				heldHere, here = s, ns
			} else if !f.gate.d.member.MayDispatch(s) && heldThere < 0 {
				heldThere, there = s, ns
			}
		}
		// Neither object exists: ByNamespace needs none.
		v, done := f.gate.Admit(reconcile.Request{Namespace: here, Name: "x"}, 0)
		if v != controller.Admit {
			t.Errorf("Admit of a key of held slot %d = %v, want Admit", heldHere, v)
		} else {
			done(false)
		}
		if v, _ := f.gate.Admit(reconcile.Request{Namespace: there, Name: "x"}, 0); v != controller.Skip {
			t.Errorf("Admit of a key of slot %d held elsewhere = %v, want Skip", heldThere, v)
		}
		if got := f.skipped(imetrics.SkippedNotHeld); got != 1 {
			t.Errorf("%s = %v, want 1", imetrics.SkippedNotHeld, got)
		}
	}
	// Held queues the cached key of a slot gained.
	f := fs[0]
	if _, err := env.Client().CoreV1().ConfigMaps(f.ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "h"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cache to hold h", func() bool { _, err := f.lister.Get(f.ns, "h"); return err == nil })
	for f.q.Len() > 0 {
		k, _, _ := f.q.Get()
		f.q.Done(k)
	}
	f.gate.d.Held([]int{slots.OfValue(f.ns)})
	if f.q.Len() != 1 {
		t.Fatalf("queue holds %d keys after Held of h's slot, want 1", f.q.Len())
	}
	if k, _, _ := f.q.Get(); k != (reconcile.Request{Namespace: f.ns, Name: "h"}) {
		t.Errorf("Held queued %v, want h", k)
	}
}
