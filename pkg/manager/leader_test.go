package manager_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// spans records when each manager reconciled, to check that two never
// reconcile at once.
type spans struct {
	mu  sync.Mutex
	all []span
}

type span struct {
	who        string
	start, end time.Time
}

// reconciler reconciles as who: each key is requeued soon, so the leader
// keeps working.
func (s *spans) reconciler(who string) reconcile.Reconciler[reconcile.Request] {
	return reconcile.Func[reconcile.Request](func(context.Context, reconcile.Request) (reconcile.Result, error) {
		sp := span{who: who, start: time.Now()}
		time.Sleep(5 * time.Millisecond)
		sp.end = time.Now()
		s.mu.Lock()
		s.all = append(s.all, sp)
		s.mu.Unlock()
		return reconcile.RequeueAfter(20 * time.Millisecond), nil
	})
}

func (s *spans) count(who string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sp := range s.all {
		if sp.who == who {
			n++
		}
	}
	return n
}

// overlaps returns a pair of spans of different managers that overlap.
func (s *spans) overlaps() (span, span, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, a := range s.all {
		for _, b := range s.all[i+1:] {
			if a.who != b.who && a.start.Before(b.end) && b.start.Before(a.end) {
				return a, b, true
			}
		}
	}
	return span{}, span{}, false
}

func leaderOptions(ns string, release bool) manager.Options {
	return manager.Options{LeaderElection: manager.LeaderElectionOptions{
		Enabled: true, Name: "test-lease", Namespace: ns, ReleaseOnCancel: release,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond,
	}}
}

// candidate is a manager campaigning for the test lease, with a controller
// that records its reconciles.
func candidate(t *testing.T, ns, who string, s *spans, release bool) (*manager.Manager, *started) {
	t.Helper()
	opts := leaderOptions(ns, release)
	opts.LeaderElection.Identity = who
	m := newManager(t, ns, opts)
	if _, err := manager.NewController(m, "leader-test", s.reconciler(who), manager.For[*corev1.ConfigMap](nil)); err != nil {
		t.Fatal(err)
	}
	return m, start(t, m)
}

func elected(m *manager.Manager) bool {
	select {
	case <-m.Elected():
		return true
	default:
		return false
	}
}

// Of two managers only the leader reconciles; when it stops, the other
// takes over: after the lease expires, or at once if the leader releases it.
func TestLeaderElection(t *testing.T) {
	for _, release := range []bool{false, true} {
		t.Run(fmt.Sprintf("release=%v", release), func(t *testing.T) {
			ns := env.Namespace(t)
			var s spans
			a, sa := candidate(t, ns, "a", &s, release)
			eventually(t, "a to be elected", func() bool { return elected(a) })
			b, _ := candidate(t, ns, "b", &s, release)
			for i := range 3 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm-", i), Namespace: ns}}
				if err := a.UncachedClient().Create(t.Context(), cm); err != nil {
					t.Fatal(err)
				}
			}
			eventually(t, "a to reconcile", func() bool { return s.count("a") > 10 })
			time.Sleep(time.Second)
			if elected(b) || s.count("b") > 0 {
				t.Fatal("the standby was elected or reconciled while the leader held the lease")
			}

			if l := gauge(t, a.Registry(), imetrics.Leader); l != 1 {
				t.Errorf("the leader's %s = %v, want 1", imetrics.Leader, l)
			}
			if l := gauge(t, b.Registry(), imetrics.Leader); l != 0 {
				t.Errorf("the standby's %s = %v, want 0", imetrics.Leader, l)
			}

			stopped := time.Now()
			if err := sa.stop(t); err != nil {
				t.Errorf("the leader's Start = %v after a clean stop", err)
			}
			// a's last renewal, as the Lease records it: a stopped leader
			// renews no more.
			last := lease(t, ns)
			eventually(t, "b to take over", func() bool { return elected(b) })
			takeover := time.Since(stopped)
			t.Logf("takeover %v after the leader stopped (release on cancel: %v; lease duration 3s, retry period 250ms)", takeover.Round(time.Millisecond), release)
			eventually(t, "b to reconcile", func() bool { return s.count("b") > 10 })
			if l := gauge(t, b.Registry(), imetrics.Leader); l != 1 {
				t.Errorf("the new leader's %s = %v, want 1", imetrics.Leader, l)
			}
			if x, y, ok := s.overlaps(); ok {
				t.Errorf("two managers reconciled at once: %+v and %+v", x, y)
			}
			// Without a release the standby waits for the unreleased lease
			// to expire. What safety needs is that it acquires only after
			// the stopped leader would have fenced itself: RenewDeadline
			// after its last renewal. Both times are the Lease's, written by
			// clients on this machine's clock; how long after the stop that
			// is depends on when the leader last renewed, which a loaded
			// machine delays. (Runs here, on main before this check too, saw
			// acquisitions 2.91-2.93 s after a 3 s lease's last RenewTime,
			// cause not pinned down; the fence's margin covers it.)
			taken := lease(t, ns)
			if release {
				// The release is a's last write; b saw the Lease free and did
				// not wait for it to expire.
				if gap := taken.Spec.AcquireTime.Sub(last.Spec.RenewTime.Time); gap >= 3*time.Second {
					t.Errorf("b acquired the lease %v after a released it: it waited for the lease to expire", gap)
				}
			} else {
				gap := taken.Spec.AcquireTime.Sub(last.Spec.RenewTime.Time)
				t.Logf("b acquired the lease %v after a's last renewal (lease %ds)", gap.Round(time.Millisecond), *last.Spec.LeaseDurationSeconds)
				if gap <= 2*time.Second {
					t.Errorf("b acquired the lease at %v, %v after a's last renewal at %v: before a, had it been frozen instead of stopped, would have fenced itself (RenewDeadline 2s)",
						taken.Spec.AcquireTime.Time, gap, last.Spec.RenewTime.Time)
				}
			}
		})
	}
}

// With ExitOnLoss, a leader whose lease is taken stops reconciling at once
// and Start returns ErrLeaderLost.
func TestLeaderLostExits(t *testing.T) {
	ns := env.Namespace(t)
	var s spans
	opts := leaderOptions(ns, false)
	opts.LeaderElection.Identity = "a"
	opts.LeaderElection.ExitOnLoss = true
	m := newManager(t, ns, opts)
	if _, err := manager.NewController(m, "leader-test", s.reconciler("a"), manager.For[*corev1.ConfigMap](nil)); err != nil {
		t.Fatal(err)
	}
	st := start(t, m)
	eventually(t, "a to be elected", func() bool { return elected(m) })
	if err := m.UncachedClient().Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a to reconcile", func() bool { return s.count("a") > 3 })

	// Another process takes the lease, as after a partition.
	takeLease(t, ns, "thief", 60)
	taken := time.Now()
	var startErr error
	select {
	case startErr = <-st.done:
		close(st.done)
	case <-time.After(30 * time.Second):
		t.Fatal("Start did not return after the lease was taken")
	}
	if !errors.Is(startErr, manager.ErrLeaderLost) {
		t.Errorf("Start = %v, want ErrLeaderLost", startErr)
	}
	t.Logf("Start returned %v after the lease was taken: %v", time.Since(taken).Round(time.Millisecond), startErr)
	n := s.count("a")
	time.Sleep(500 * time.Millisecond)
	if s.count("a") != n {
		t.Error("reconciles went on after the lease was lost")
	}
}

func ptrTo[T any](v T) *T { return &v }

// takeLease makes holder the holder of the test Lease in ns, renewed now
// for seconds, as another process taking it over would.
func takeLease(t *testing.T, ns, holder string, seconds int32) {
	t.Helper()
	leases := env.Client().CoordinationV1().Leases(ns)
	lease, err := leases.Get(t.Context(), "test-lease", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lease.Spec.HolderIdentity = ptrTo(holder)
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	lease.Spec.LeaseDurationSeconds = ptrTo(seconds)
	if _, err := leases.Update(t.Context(), lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// leaseHolder returns the holder of the test Lease in ns, "" if none.
func leaseHolder(t *testing.T, ns string) string {
	t.Helper()
	lease, err := env.Client().CoordinationV1().Leases(ns).Get(t.Context(), "test-lease", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// lease returns the test's Lease.
func lease(t *testing.T, ns string) *coordinationv1.Lease {
	t.Helper()
	l, err := env.Client().CoordinationV1().Leases(ns).Get(t.Context(), "test-lease", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.RenewTime == nil || l.Spec.AcquireTime == nil {
		t.Fatalf("the Lease records no renewal or acquisition: %+v", l.Spec)
	}
	return l
}
