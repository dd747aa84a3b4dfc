package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/internal/sharding/membership"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/sharding"
)

// ErrNotOwned is wrapped by the errors about a member another replica
// owns, or that this replica cannot be sure it still owns: Fleet.Cluster's,
// Lister.In's, and those of writes refused by a member's client. A member
// owned by another replica is not engaged here either, so those errors
// wrap ErrNotEngaged too; a member engaged here whose owner's renewals
// are late (Options.Sharding's RenewDeadline passed) wraps ErrNotOwned
// alone: it is still this replica's, and its keys are retried.
var ErrNotOwned = errors.New("this replica does not own the member cluster")

// ShardingOptions share a fleet's members out among its replicas: each
// member name falls in one of Slots slots (package sharding's
// Slots.OfValue of the name), and the replicas share the slots through one
// coordination.k8s.io Lease each on the hub, as the manager's sharded mode
// does (manager.ShardingOptions). A replica engages (caches, watches,
// reconciles, writes to) only the members of the slots it holds.
type ShardingOptions struct {
	// Config reaches the API server holding the Leases: the hub. Required.
	Config *rest.Config
	// Namespace of the Leases. Required.
	Namespace string
	// Group names the replicas sharing the members: their Leases are named
	// "<Group>-<Identity>". Required; every replica sets the same.
	Group string
	// Identity of this replica in the group. Defaults to the lowercased
	// host name and random hex digits, so that a restarted process joins
	// as a new replica.
	Identity string
	// Slots is the number of slots: a power of two from 1 to
	// sharding.MaxSlots, the same on every replica. Defaults to
	// manager.DefaultSlots.
	Slots int
	// LeaseDuration is how long the others wait, on their own clocks,
	// after this replica's Lease last changed before they take its
	// members. Defaults to manager.DefaultLeaseDuration.
	LeaseDuration time.Duration
	// RenewDeadline is how long after its last successful renewal a
	// replica goes on acting on its members; less than LeaseDuration.
	// Defaults to manager.DefaultRenewDeadline.
	RenewDeadline time.Duration
	// RetryPeriod is how often a replica renews its Lease and reads the
	// others'; less than RenewDeadline. Defaults to
	// manager.DefaultRetryPeriod.
	RetryPeriod time.Duration
}

func (so ShardingOptions) withDefaults() ShardingOptions {
	if so.Slots == 0 {
		so.Slots = manager.DefaultSlots
	}
	if so.LeaseDuration == 0 {
		so.LeaseDuration = manager.DefaultLeaseDuration
	}
	if so.RenewDeadline == 0 {
		so.RenewDeadline = manager.DefaultRenewDeadline
	}
	if so.RetryPeriod == 0 {
		so.RetryPeriod = manager.DefaultRetryPeriod
	}
	return so
}

// sharder is a fleet's share of the slots.
type sharder struct {
	slots  sharding.Slots
	member *membership.Member
	retry  time.Duration // RetryPeriod: how long a fenced key waits
}

// newSharder builds f's membership of so's group; Start runs it.
func newSharder(f *Fleet, so ShardingOptions) (*sharder, error) {
	so = so.withDefaults()
	if so.Config == nil {
		return nil, errors.New("fleet: invalid options: Sharding.Config is nil: set it to the hub's, where the replicas' Leases live")
	}
	if so.Group == "" {
		return nil, errors.New("fleet: invalid options: Sharding.Group is empty: name the replicas' group, the same on every replica")
	}
	slots, err := sharding.NewSlots(so.Slots)
	if err != nil {
		return nil, fmt.Errorf("fleet: invalid options: Sharding.Slots: %w", err)
	}
	// A client of its own, not rate limited: a busy fleet must not delay
	// a renewal.
	lc := rest.AddUserAgent(rest.CopyConfig(so.Config), "fleet-sharding")
	lc.RateLimiter, lc.QPS, lc.Burst = nil, 50, 100
	cs, err := kubernetes.NewForConfig(lc)
	if err != nil {
		return nil, fmt.Errorf("fleet: sharding client: %w", err)
	}
	s := &sharder{slots: slots, retry: so.RetryPeriod}
	s.member, err = membership.New(cs, membership.Options{
		Namespace: so.Namespace, Group: so.Group, Identity: so.Identity, Slots: so.Slots,
		LeaseDuration: so.LeaseDuration, RenewDeadline: so.RenewDeadline, RetryPeriod: so.RetryPeriod,
		Handler: membership.HandlerFuncs{OnHeld: f.held, OnRelease: f.release},
		Logger:  f.opts.Logger.WithName("sharding"),
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: invalid options: Sharding: %w", err)
	}
	return s, nil
}

func (s *sharder) slot(name string) int { return s.slots.OfValue(name) }

// known is a member a provider engaged, which this replica engages only
// while it holds the member's slot.
type known struct {
	ctx context.Context // the provider's: the member's lifetime
	m   Member
}

// engageOwned records m and engages it if this replica holds its slot.
// The fleet's shardMu orders it with held and release, so that a member
// is engaged once per holding.
func (f *Fleet) engageOwned(ctx context.Context, m Member) error {
	k := &known{ctx: ctx, m: m}
	f.shardMu.Lock()
	defer f.shardMu.Unlock()
	f.mu.Lock()
	stopped := f.stopped
	if !stopped {
		f.known[m.Name] = k
	}
	f.mu.Unlock()
	if stopped {
		return fmt.Errorf("engage member %q: %w", m.Name, ErrStopped)
	}
	context.AfterFunc(ctx, func() { f.forget(k) })
	if !f.shard.member.Holds(f.shard.slot(m.Name)) {
		return nil
	}
	return f.engage(ctx, m, k)
}

// forget drops k once its provider's context ended, unless the provider
// engaged its name again since. (The member, if engaged, goes by itself:
// its life ends with the provider's context.)
func (f *Fleet) forget(k *known) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.known[k.m.Name] == k {
		delete(f.known, k.m.Name)
	}
}

// held engages the members of slots, which this replica has come to hold.
// It runs on the membership's loop and does not block: engaging starts
// caches without waiting for them.
func (f *Fleet) held(slots []int) {
	f.shardMu.Lock()
	defer f.shardMu.Unlock()
	f.mu.Lock()
	var todo []*known
	for name, k := range f.known {
		if c := f.members[name]; c != nil && c.engagedBy == k && c.life.Err() == nil {
			continue
		}
		if slices.Contains(slots, f.shard.slot(name)) && k.ctx.Err() == nil {
			todo = append(todo, k)
		}
	}
	f.mu.Unlock()
	for _, k := range todo {
		if err := f.engage(k.ctx, k.m, k); err != nil {
			f.opts.Logger.Error(err, "Cannot engage a member cluster of a slot gained", "cluster", k.m.Name)
		}
	}
}

// release disengages the members of slots, which this replica gives up,
// and returns once their reconciles in flight have returned: only then
// may another replica take them. Their writes are refused from the start
// (MayDispatch is already false for the slots), so a reconcile that goes
// on writing fails instead.
func (f *Fleet) release(_ context.Context, slots []int) {
	f.shardMu.Lock()
	f.mu.Lock()
	// Members disengaged already (their provider's context ended, as it
	// does when the fleet stops) may still have reconciles in flight.
	var gone []*Cluster
	for c := range f.undrained {
		if slices.Contains(slots, f.shard.slot(c.name)) {
			gone = append(gone, c)
		}
	}
	f.mu.Unlock()
	for _, c := range gone {
		c.cancel()
	}
	f.shardMu.Unlock()
	for _, c := range gone {
		c.drain()
	}
	if len(gone) > 0 {
		f.opts.Logger.V(1).Info("Member clusters of released slots disengaged", "slots", slots, "clusters", len(gone))
	}
}

// owned returns nil if this replica may act on c now: c is engaged and,
// in a sharded fleet, this replica holds c's slot and its last renewal is
// within the renew deadline.
func (f *Fleet) owned(c *Cluster) error {
	if c.life.Err() != nil {
		return fmt.Errorf("cluster %q: %w", c.name, ErrNotEngaged)
	}
	if f.shard == nil {
		return nil
	}
	if s := f.shard.slot(c.name); !f.shard.member.MayDispatch(s) {
		return fmt.Errorf("cluster %q: %w: its slot %d is released, or this replica's renewals of its Lease are late", c.name, ErrNotOwned, s)
	}
	return nil
}

// notOwned returns the error of Fleet.Cluster for a member not engaged
// here: ErrNotOwned too if a provider reported it, and another replica's
// slot has it.
func (f *Fleet) notOwned(name string) error {
	f.mu.Lock()
	_, ok := f.known[name]
	f.mu.Unlock()
	if f.shard == nil || !ok {
		return fmt.Errorf("cluster %q: %w", name, ErrNotEngaged)
	}
	return fmt.Errorf("cluster %q: %w: %w: its slot %d is not this replica's", name, ErrNotEngaged, ErrNotOwned, f.shard.slot(name))
}

// ownedTransport refuses a member's writes (any method but GET, HEAD and
// OPTIONS) that this replica may not send: the member's client and
// cache reach its API server through it, whatever context a call
// carries.
type ownedTransport struct {
	next http.RoundTripper
	f    *Fleet
	c    *Cluster
}

func (t ownedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if err := t.f.owned(t.c); err != nil {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, fmt.Errorf("%s %s refused: %w", req.Method, req.URL.Path, err)
		}
	}
	return t.next.RoundTrip(req)
}

// WrappedRoundTripper lets client-go see through it.
func (t ownedTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// inflight counts a Cluster's reconciles in flight, so that a release
// waits for them.
type inflight struct {
	mu sync.Mutex // orders enter with drain's barrier
	wg sync.WaitGroup
}

// enter counts a reconcile of c in, unless c is disengaged: then it
// returns false and the reconcile must not run.
func (c *Cluster) enter() bool {
	c.inflight.mu.Lock()
	defer c.inflight.mu.Unlock()
	if c.life.Err() != nil {
		return false
	}
	c.inflight.wg.Add(1)
	return true
}

func (c *Cluster) exit() { c.inflight.wg.Done() }

// drain waits for c's reconciles in flight; c must be disengaged already,
// so that none enters after.
func (c *Cluster) drain() {
	c.inflight.mu.Lock()
	//lint:ignore SA2001 the empty section is a barrier: every enter that saw c alive has added to wg.
	c.inflight.mu.Unlock()
	c.inflight.wg.Wait()
}

// NeedLeaderElection reports whether the fleet runs on the leader alone
// (manager.LeaderElectionRunnable): a sharded fleet runs on every
// replica, an unsharded one on the leader.
func (f *Fleet) NeedLeaderElection() bool { return f.shard == nil }

var _ manager.LeaderElectionRunnable = (*Fleet)(nil)
