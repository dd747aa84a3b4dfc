package dispatch

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/opkit-dev/opkit/pkg/cache/cachetest"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/sharding"
	"github.com/opkit-dev/opkit/pkg/source"
)

// fencedMember holds every slot; its fence is open while open is true, as
// a member's is while its last successful renewal is younger than the
// renew deadline.
type fencedMember struct{ open atomic.Bool }

func (m *fencedMember) Holds(int) bool       { return true }
func (m *fencedMember) MayDispatch(int) bool { return m.open.Load() }

// A key taken while this replica's fence is closed (a renewal sent before
// the renew deadline and answered after it) is still this replica's: the
// fence opens again at that renewal with no Held in between, so nothing
// queues the key again. The gate has it retried, not forgotten, and it is
// reconciled once the fence opens, with no new event.
func TestFencedKeyReconciledWhenTheFenceOpens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &fencedMember{}
		d, err := New(m, Options{})
		if err != nil {
			t.Fatal(err)
		}
		static, err := cachetest.New[*corev1.ConfigMap](cachetest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		g, err := NewGate(d, static.Lister(), GateOptions{Controller: "c", Key: sharding.ByNamespace})
		if err != nil {
			t.Fatal(err)
		}
		var reconciled atomic.Int32
		r := reconcile.Func[reconcile.Request](func(context.Context, reconcile.Request) (reconcile.Result, error) {
			reconciled.Add(1)
			return reconcile.Done(), nil
		})
		c, err := controller.New("c", r, controller.Options[reconcile.Request]{Gate: g, ReadYourWritesTimeout: -1})
		if err != nil {
			t.Fatal(err)
		}
		g.Attach(c.Queue())
		keys := make(chan reconcile.Request, 1)
		keys <- reconcile.Request{Namespace: "ns", Name: "cm"}
		if err := c.Watch(source.NewChannel(keys)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- c.Start(ctx) }()

		time.Sleep(time.Second)
		synctest.Wait()
		if n := reconciled.Load(); n != 0 {
			t.Fatalf("reconciled %d times while the fence was closed, want 0", n)
		}
		m.open.Store(true)
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := reconciled.Load(); n != 1 {
			t.Errorf("reconciled %d times after the fence opened, want 1: a key of a held slot taken while fenced was forgotten", n)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// The gate's verdict per state of a key's slot: held and open, Admit;
// held and fenced, Retry; not held, Skip.
func TestGateVerdictByHoldAndFence(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Member
		want controller.Verdict
	}{
		{"held", MemberFunc(func(int) bool { return true }), controller.Admit},
		{"held, fenced", &fencedMember{}, controller.Retry},
		{"not held", MemberFunc(func(int) bool { return false }), controller.Skip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(tc.m, Options{})
			if err != nil {
				t.Fatal(err)
			}
			static, err := cachetest.New[*corev1.ConfigMap](cachetest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			g, err := NewGate(d, static.Lister(), GateOptions{Controller: "c", Key: sharding.ByNamespace})
			if err != nil {
				t.Fatal(err)
			}
			v, done := g.Admit(reconcile.Request{Namespace: "ns", Name: "cm"}, 0)
			if v != tc.want {
				t.Errorf("Admit = %v, want %v", v, tc.want)
			}
			if done != nil {
				done(false)
			}
		})
	}
}
