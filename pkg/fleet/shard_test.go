package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// replica is one sharded fleet of a test, with its controller.
type replica struct {
	name string
	f    *fleet.Fleet
	cms  *fleet.Lister[*corev1.ConfigMap]
	// cut, while it holds a channel, holds every request to the hub's
	// Leases until the channel is closed, then fails it: the replica's
	// renewals lapse, and its membership loop hangs in one, as a
	// partitioned replica's may.
	cut    *atomic.Pointer[chan struct{}]
	cancel context.CancelFunc
	done   chan struct{}
}

// startReplica runs a sharded fleet of the namespaces labelled label,
// sharing its members with the other replicas of group through Leases in
// leases, with a copier controller that calls before, if not nil, at the
// start of each reconcile; it stops at the test's end, or at stop.
func startReplica(t *testing.T, name, group, leases, label string, before func(context.Context, fleet.Request)) *replica {
	t.Helper()
	cut := &atomic.Pointer[chan struct{}]{}
	hub := rest.CopyConfig(env.Config())
	hub.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if ch := cut.Load(); ch != nil {
				select {
				case <-*ch:
				case <-req.Context().Done():
				}
				return nil, errors.New("the test cut this replica off the hub")
			}
			return rt.RoundTrip(req)
		})
	})
	f, err := fleet.New(fleet.Options{
		Providers: []fleet.Provider{fleet.Namespaces{Config: env.Config(), Selector: labels.SelectorFromSet(labels.Set{"fleet-test": label})}},
		Sharding: &fleet.ShardingOptions{Config: hub, Namespace: leases, Group: group, Identity: name, Slots: 8,
			LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 250 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var r reconcile.Reconciler[fleet.Request] = copier{cms}
	if before != nil {
		r = reconcile.Func[fleet.Request](func(ctx context.Context, req fleet.Request) (reconcile.Result, error) {
			before(ctx, req)
			return copier{cms}.Reconcile(ctx, req)
		})
	}
	ctl, err := controller.New[fleet.Request]("copier-"+name, fleet.Reconciler(f, r), controller.Options[fleet.Request]{Tenant: fleet.Request.Tenant})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Watch(fleet.Watch(cms, fleet.EnqueueObject[*corev1.ConfigMap]())); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rep := &replica{name: name, f: f, cms: cms, cut: cut, cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := f.Start(ctx); err != nil {
			t.Errorf("fleet %s: %v", name, err)
		}
	})
	wg.Go(func() {
		if err := ctl.Start(ctx); err != nil {
			t.Errorf("controller %s: %v", name, err)
		}
	})
	go func() { wg.Wait(); close(rep.done) }()
	t.Cleanup(rep.stop)
	return rep
}

// cutOff cuts the replica off the hub until restore is called, or the
// test ends.
func (r *replica) cutOff(t *testing.T) (restore func()) {
	ch := make(chan struct{})
	r.cut.Store(&ch)
	restore = sync.OnceFunc(func() {
		r.cut.Store(nil)
		close(ch)
	})
	t.Cleanup(restore)
	return restore
}

// stop stops the replica and waits until it has left the group.
func (r *replica) stop() {
	r.cancel()
	<-r.done
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// eachOwnedOnce waits until every member is engaged by exactly one of the
// replicas, and returns the owner of each.
func eachOwnedOnce(t *testing.T, members []string, rs ...*replica) map[string]*replica {
	t.Helper()
	var owners map[string]*replica
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		owners, last = map[string]*replica{}, nil
		for _, m := range members {
			for _, r := range rs {
				if _, err := r.f.Cluster(m); err != nil {
					continue
				}
				if o := owners[m]; o != nil {
					last = fmt.Errorf("member %s engaged by %s and %s", m, o.name, r.name)
					return false, nil
				}
				owners[m] = r
			}
			if owners[m] == nil {
				last = fmt.Errorf("member %s engaged by no replica", m)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("each member engaged by one replica: %v", last)
	}
	return owners
}

// Two replicas share eight members: each member is engaged by one
// replica, which reconciles it; the other refuses it on every path (its
// Cluster, its Lister, its Reconciler) at once. A replica whose renewals
// lapse is refused its member's writes, by the member's client it got
// before, while it still has the member engaged; the other takes the
// member over, and the first rejoins once it reaches the hub again. A
// replica that stops hands its members over.
func TestShardedMembersHaveOneOwner(t *testing.T) {
	label := "shard-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	leases := env.Namespace(t)
	var members []string
	for i := range 8 {
		members = append(members, member(t, label, "v"+strconv.Itoa(i)))
	}
	a := startReplica(t, "a", label, leases, label, nil)
	b := startReplica(t, "b", label, leases, label, nil)
	for i, m := range members {
		waitCopy(t, m, "v"+strconv.Itoa(i))
	}
	owners := eachOwnedOnce(t, members, a, b)

	var x string // a member of a's
	for _, m := range members {
		owner, other := owners[m], a
		if owner == a {
			other, x = b, m
		}
		_, err := other.f.Cluster(m)
		if !errors.Is(err, fleet.ErrNotOwned) || !errors.Is(err, fleet.ErrNotEngaged) {
			t.Errorf("%s.Cluster(%s), owned by %s: %v; want ErrNotOwned and ErrNotEngaged", other.name, m, owner.name, err)
		}
		if _, err := other.cms.In(m); !errors.Is(err, fleet.ErrNotOwned) {
			t.Errorf("%s's Lister.In(%s), owned by %s: %v; want ErrNotOwned", other.name, m, owner.name, err)
		}
		called := false
		rec := fleet.Reconciler(other.f, reconcile.Func[fleet.Request](func(context.Context, fleet.Request) (reconcile.Result, error) {
			called = true
			return reconcile.Done(), nil
		}))
		if _, err := rec.Reconcile(t.Context(), fleet.Request{Cluster: m}); err != nil || called {
			t.Errorf("%s reconciled a key of %s, owned by %s: called %t, %v", other.name, m, owner.name, called, err)
		}
	}
	if x == "" {
		t.Fatalf("replica a owns none of the members: %v", owners)
	}

	// a loses the hub, its membership loop hanging in a renewal: once its
	// last renewal is older than RenewDeadline, it refuses the member on
	// every path though it still has it engaged, before b may take it.
	cx := mustCluster(t, a.f, x)
	restore := a.cutOff(t)
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, err := a.f.Cluster(x)
		return errors.Is(err, fleet.ErrNotOwned), nil
	})
	if err != nil {
		t.Fatalf("a still owns %s with its renewals lapsed", x)
	}
	if _, err := a.f.Cluster(x); errors.Is(err, fleet.ErrNotEngaged) {
		t.Fatalf("a disengaged %s with its membership loop hung: %v; the test shows nothing", x, err)
	}
	called := false
	rec := fleet.Reconciler(a.f, reconcile.Func[fleet.Request](func(context.Context, fleet.Request) (reconcile.Result, error) {
		called = true
		return reconcile.Done(), nil
	}))
	if res, err := rec.Reconcile(t.Context(), fleet.Request{Cluster: x}); err != nil || called || res == reconcile.Done() {
		t.Errorf("a, renewals lapsed, reconciled a key of %s: called %t, %v, %v; want it requeued", x, called, res, err)
	}
	stray := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: x, Name: "stray"}}
	if err := cx.Client().Create(t.Context(), stray); !errors.Is(err, fleet.ErrNotOwned) {
		t.Errorf("a's client of %s, renewals lapsed, created a ConfigMap: %v; want ErrNotOwned", x, err)
	}
	if _, err := env.Client().CoreV1().ConfigMaps(x).Get(t.Context(), "stray", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused ConfigMap: %v; want NotFound", err)
	}
	waitEngaged(t, b.f, x, true)
	setSource(t, x, "b-took-over")
	waitCopy(t, x, "b-took-over")

	// a reaches the hub again: it rejoins, and the members are shared again.
	restore()
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(a.f.Clusters()) > 0, nil
	})
	if err != nil {
		t.Fatal("a engaged no member after it rejoined")
	}
	eachOwnedOnce(t, members, a, b)

	// a stops: b takes every member and reconciles it.
	a.stop()
	eachOwnedOnce(t, members, b)
	for i, m := range members {
		setSource(t, m, "after-"+strconv.Itoa(i))
	}
	for i, m := range members {
		waitCopy(t, m, "after-"+strconv.Itoa(i))
	}
}

// Options.Sharding that cannot work are refused by New, saying what to
// set; a sharded fleet runs on every replica, an unsharded one on the
// leader.
func TestShardingOptions(t *testing.T) {
	for _, tt := range []struct {
		name string
		so   fleet.ShardingOptions
	}{
		{"no hub", fleet.ShardingOptions{Namespace: "ns", Group: "g"}},
		{"no group", fleet.ShardingOptions{Config: env.Config(), Namespace: "ns"}},
		{"no namespace", fleet.ShardingOptions{Config: env.Config(), Group: "g"}},
		{"slots not a power of two", fleet.ShardingOptions{Config: env.Config(), Namespace: "ns", Group: "g", Slots: 12}},
		{"renew deadline past the lease", fleet.ShardingOptions{Config: env.Config(), Namespace: "ns", Group: "g", LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}},
	} {
		if _, err := fleet.New(fleet.Options{Sharding: &tt.so}); err == nil {
			t.Errorf("%s: New accepted %+v", tt.name, tt.so)
		}
	}
	sharded := newFleet(t, fleet.Options{Sharding: &fleet.ShardingOptions{Config: env.Config(), Namespace: "ns", Group: "g"}})
	if sharded.NeedLeaderElection() || !newFleet(t, fleet.Options{}).NeedLeaderElection() {
		t.Errorf("NeedLeaderElection: sharded %t, unsharded %t; want false, true", sharded.NeedLeaderElection(), newFleet(t, fleet.Options{}).NeedLeaderElection())
	}
}

// A replica that gives a member up (here it stops, and leaves) does so
// only once the member's reconcile in flight has returned: until then the
// other replica does not engage it, however long the reconcile goes on
// after its context ended.
func TestReleaseWaitsForReconcilesInFlight(t *testing.T) {
	label := "release-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	leases := env.Namespace(t)
	var members []string
	for i := range 4 {
		members = append(members, member(t, label, "v"+strconv.Itoa(i)))
	}
	var (
		armed   atomic.Bool
		other   atomic.Pointer[replica] // the replica that does not own members[0]
		entered = make(chan struct{})
		took    = make(chan bool, 1) // whether other engaged members[0] before the reconcile returned
	)
	block := func(ctx context.Context, req fleet.Request) {
		if req.Cluster != members[0] || req.Name != "source" || !armed.CompareAndSwap(true, false) {
			return
		}
		close(entered)
		<-ctx.Done()
		// Go on past the context's end, for several of the other's
		// ticks, and see whether it engages the member meanwhile.
		engaged := false
		for range 20 {
			time.Sleep(50 * time.Millisecond)
			if _, err := other.Load().f.Cluster(req.Cluster); err == nil {
				engaged = true
			}
		}
		took <- engaged
	}
	a := startReplica(t, "a", label, leases, label, block)
	b := startReplica(t, "b", label, leases, label, block)
	owner := eachOwnedOnce(t, members, a, b)[members[0]]
	other.Store(a)
	if owner == a {
		other.Store(b)
	}
	armed.Store(true)
	setSource(t, members[0], "blocked")
	<-entered
	owner.stop()
	if <-took {
		t.Errorf("%s engaged %s while %s's reconcile of it was in flight", other.Load().name, members[0], owner.name)
	}
	eachOwnedOnce(t, members, other.Load())
	waitCopy(t, members[0], "blocked")
}
