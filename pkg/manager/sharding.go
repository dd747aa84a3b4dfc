package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/opkit-dev/opkit/internal/sharding/autoscale"
	"github.com/opkit-dev/opkit/internal/sharding/membership"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager/internal/dispatch"
	"github.com/opkit-dev/opkit/pkg/sharding"
)

// DefaultSlots is the default of ShardingOptions.Slots: enough for a few
// dozen replicas to share evenly, few enough to hand over quickly.
const DefaultSlots = 64

// ShardingOptions configure the sharded mode: the keys of each controller
// NewController builds are shared out among the replicas in slots (package
// sharding), held through one coordination.k8s.io Lease per replica; a
// replica reconciles a key only while it holds the key's slot, and holds
// the slots rendezvous hashing gives it among the live replicas.
//
// Split caches: each replica caches only its slots' objects of the types
// its sharded controllers shard. NewController registers the For type
// with cache.TypeOptions{Sharded: true, ShardKey: <ShardBy>} and each
// Owns type sharded so that children land with their controller
// (sharding.ByControllerOwner under ByUID, ByNamespace under ByNamespace;
// unsharded under ByControllerOwner, whose children do not hash to the
// parent's slot), and sets a nil Lister of the reconciler's to that
// registration; cache.Register with the same TypeOptions returns the same
// registration. Where the API server ignores shard selectors
// (ShardedListAndWatch off, or cache.ServerFilterOff) each informer
// receives everything and keeps its slots' objects: the same split, at
// the cost of the full stream.
//
// One type, several ways: a type sharded by two keys (two controllers'
// For, or a For and another's Owns), or sharded by one controller and
// whole for another watch, keeps one registration per way, each with its
// own informers: correct, at the cost of memory. The cached client's reads
// of such a type are ambiguous; an unsharded watch of it reads the Lister it was
// given, or else registers the type with the default TypeOptions.
//
// Dispatch: a worker that takes a key of a slot this replica does not
// hold forgets it before the read-your-writes wait and before any
// reconcile, and counts it (opkit_sharding_dispatch_skipped_total), as it
// does a key whose object the split cache lacks: the replica holding its
// slot has it. A key of a slot it holds while its renewals are late (the
// last successful one older than RenewDeadline) is retried with backoff
// instead, counted with reason "fenced": the slot is still its own.
//
// Handover: a replica that gains slots first makes its cache hold them
// (cache.Cache.SetSlots with every slot it holds), and refuses their keys
// with a retry meanwhile, so a reconciler never reads NotFound for an
// object that exists; then it queues every key of them. One that gives
// slots up stops dispatching them at once, waits for their reconciles in
// flight, only then removes its claim, and drops them from its cache. A
// failed SetSlots is retried with backoff, counted
// (opkit_sharding_cache_set_slots_errors_total), and keeps the slots it
// may not hold refused. On a stop the replica leaves the group first (its
// slots move at the others' next round), then stops its controllers.
type ShardingOptions struct {
	// Enabled turns the sharded mode on. Defaults to false.
	Enabled bool
	// Group names the replicas sharing the slots: their Leases are named
	// "<Group>-<Identity>". Required when Enabled; every replica of the
	// operator sets the same.
	Group string
	// Namespace of the Leases. Defaults, as LeaderElection.Namespace
	// does, to the namespace of the pod's service account when in a
	// cluster; required otherwise.
	Namespace string
	// Identity of this replica in the group. Defaults to the lowercased
	// host name and random hex digits, so that a restarted process joins
	// as a new member, as LeaderElection.Identity does.
	Identity string
	// Slots is the number of slots: a power of two from 1 to
	// sharding.MaxSlots. Every replica must agree on it. Defaults to
	// DefaultSlots.
	Slots int
	// LeaseDuration is how long the others wait, on their own clocks,
	// after this replica's Lease last changed before they take its slots.
	// Defaults to DefaultLeaseDuration (15s), as for leader election.
	LeaseDuration time.Duration
	// RenewDeadline is how long after its last successful renewal a
	// replica goes on starting reconciles; it must be less than
	// LeaseDuration. Defaults to DefaultRenewDeadline (10s).
	RenewDeadline time.Duration
	// RetryPeriod is how often a replica renews its Lease and reads the
	// others'; it must be less than RenewDeadline. Defaults to
	// DefaultRetryPeriod (2s).
	RetryPeriod time.Duration
	// Autoscale, when enabled, sets the operator's replica count from
	// the load the replicas measure (see AutoscaleOptions). Defaults to
	// off.
	Autoscale AutoscaleOptions
	// Balance, when enabled, balances the slots among the replicas by
	// the work their keys take, measured, rather than by count alone
	// (see BalanceOptions). Defaults to off.
	Balance BalanceOptions
}

func (so ShardingOptions) withDefaults() ShardingOptions {
	if so.Slots == 0 {
		so.Slots = DefaultSlots
	}
	if so.LeaseDuration == 0 {
		so.LeaseDuration = DefaultLeaseDuration
	}
	if so.RenewDeadline == 0 {
		so.RenewDeadline = DefaultRenewDeadline
	}
	if so.RetryPeriod == 0 {
		so.RetryPeriod = DefaultRetryPeriod
	}
	return so
}

// validate returns the errors of the sharding options, each naming the
// field to set; none when sharding is off.
func (so ShardingOptions) validate() []error {
	if !so.Enabled {
		return nil
	}
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if so.Group == "" {
		add("Options.Sharding.Group is empty: name the replicas' group, such as \"my-operator\", the same on every replica")
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"LeaseDuration", so.LeaseDuration}, {"RenewDeadline", so.RenewDeadline}, {"RetryPeriod", so.RetryPeriod}} {
		if d.v < 0 {
			add("Options.Sharding.%s is %v: it must be 0 (the default) or positive", d.field, d.v)
		}
	}
	if so.Slots < 0 {
		add("Options.Sharding.Slots is %d: it must be 0 (the default, %d) or a power of two up to %d", so.Slots, DefaultSlots, sharding.MaxSlots)
	} else if _, err := sharding.NewSlots(so.withDefaults().Slots); err != nil {
		add("Options.Sharding.Slots: %w", err)
	}
	so = so.withDefaults()
	if so.LeaseDuration <= so.RenewDeadline {
		add("Options.Sharding.LeaseDuration (%v) must be longer than RenewDeadline (%v): the difference is the margin that keeps a fenced replica's last reconcile from overlapping the next holder's", so.LeaseDuration, so.RenewDeadline)
	}
	if so.RenewDeadline <= so.RetryPeriod {
		add("Options.Sharding.RenewDeadline (%v) must be longer than RetryPeriod (%v): one late renewal would fence the replica", so.RenewDeadline, so.RetryPeriod)
	}
	errs = append(errs, so.Balance.validate()...)
	return append(errs, so.Autoscale.validate(so)...)
}

// sharded is the manager's sharded mode: its member, dispatcher and
// autoscaler (nil unless ShardingOptions.Autoscale).
type sharded struct {
	slots      sharding.Slots
	member     *membership.Member
	dispatcher *dispatch.Dispatcher
	autoscaler *autoscale.Recommender
}

// newSharded builds the member and dispatcher of Options.Sharding, and
// registers their metrics and readiness check. The member runs from Start.
func (m *Manager) newSharded() (*sharded, error) {
	so := m.opts.Sharding
	ns, err := namespaceOr("Sharding.Namespace", so.Namespace)
	if err != nil {
		return nil, fmt.Errorf("manager: invalid options: %w", err)
	}
	slots, err := sharding.NewSlots(so.Slots)
	if err != nil {
		return nil, fmt.Errorf("manager: invalid options: Options.Sharding.Slots: %w", err)
	}
	// A client of its own: busy controllers must not delay a renewal.
	cs, err := leaseClient(m.leaseConfig, "sharding", so.RetryPeriod)
	if err != nil {
		return nil, fmt.Errorf("manager: sharding client: %w", err)
	}
	if c := m.opts.Cache.Sharding.Slots.Count(); c != 1 && c != slots.Count() {
		return nil, fmt.Errorf("manager: invalid options: Options.Cache.Sharding.Slots counts %d slots and Options.Sharding.Slots %d: leave the cache's unset, the manager sets it", c, slots.Count())
	}
	s := &sharded{slots: slots}
	if s.autoscaler, err = m.newAutoscaler(s, ns); err != nil {
		return nil, err
	}
	var report func() string
	if s.autoscaler != nil {
		report = s.autoscaler.Report
	}
	// Held and Release go to the dispatcher, which makes the cache hold
	// the slots before it admits their keys.
	handler := membership.HandlerFuncs{
		OnHeld:    func(held []int) { s.dispatcher.Held(held) },
		OnRelease: func(ctx context.Context, released []int) { s.dispatcher.Release(ctx, released) },
	}
	s.member, err = membership.New(cs, membership.Options{
		Namespace: ns, Group: so.Group, Identity: so.Identity, Slots: so.Slots,
		LeaseDuration: so.LeaseDuration, RenewDeadline: so.RenewDeadline, RetryPeriod: so.RetryPeriod,
		Handler: handler, Logger: m.log.WithName("sharding"), Report: report,
		LoadHalfLife: so.Balance.halfLife(),
	})
	if err != nil {
		return nil, fmt.Errorf("manager: invalid options: Options.Sharding: %w", err)
	}
	var observe func(int, time.Duration)
	if so.Balance.Enabled {
		observe = balanceObserver(m.cache, s.member.ObserveLoad, m.log.WithName("sharding"))
	}
	s.dispatcher, err = dispatch.New(s.member, dispatch.Options{
		Cache: splitCache{m.cache}, Registerer: m.registry, Logger: m.log.WithName("sharding"),
		Observe: observe,
	})
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	if err := dispatch.RegisterMemberMetrics(m.registry, s.member.Stats); err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	if err := m.ready.add("sharding", s.holdsItsSlots); err != nil {
		return nil, err
	}
	return s, nil
}

// holdsItsSlots is the readiness check of the sharded mode: it passes once
// a round of membership has completed, the last renewal is within the
// renew deadline, and this replica holds at least its share of the slots
// (of N members each holds Slots/N or one more).
func (s *sharded) holdsItsSlots(*http.Request) error {
	st := s.member.Stats()
	if st.Members == 0 {
		return errors.New("not a member of the shard group yet: no round of membership has completed")
	}
	want := s.slots.Count() / st.Members
	if st.Held < want {
		return fmt.Errorf("holds %d slots of the %d it expects (%d slots among %d members): a handover is in progress, or renewals fail", st.Held, want, s.slots.Count(), st.Members)
	}
	if err := s.dispatcher.CacheReady(); err != nil {
		return err
	}
	cached := s.dispatcher.Cached()
	for _, slot := range s.member.Held() {
		if !slices.Contains(cached, slot) {
			return fmt.Errorf("holds slot %d, which the cache does not hold yet (it holds %v): its keys wait", slot, cached)
		}
	}
	return nil
}

// splitCache is the manager's cache as the dispatcher's SlotCache. A cache
// without a sharded type holds every slot: no controller shards, so none
// waits for it.
type splitCache struct{ c *cache.Cache }

func (sc splitCache) SetSlots(ctx context.Context, slots []int) error {
	if err := sc.c.SetSlots(ctx, slots); err != nil && !errors.Is(err, cache.ErrNotSharded) {
		return err
	}
	return nil
}

// run runs the member until ctx ends; it returns once the member has left
// the group (its slots released, its reconciles returned, its Lease
// deleted). Errors are logged: a failed leave only delays the others until
// LeaseDuration.
func (s *sharded) run(ctx context.Context, m *Manager) {
	var wg sync.WaitGroup
	defer wg.Wait()
	// The dispatcher keeps the cache holding the slots; it stops with the
	// member's ctx, leaving the cache as it is while the member leaves.
	wg.Go(func() { s.dispatcher.Run(ctx) })
	if s.autoscaler != nil {
		wg.Go(func() { s.autoscaler.Run(ctx) })
	}
	if err := s.member.Run(ctx); err != nil {
		m.log.Error(err, "Leaving the shard group")
	}
}

// ShardedTypeOptions returns the TypeOptions that register a sharded
// controller's For type, sharded by key (its ShardBy, sharding.ByUID by
// default), so that a reconciler reading its primary objects through its
// own cache.Register Lister shares the controller's registration and holds only
// this replica's slots of them. Without Options.Sharding it returns the
// zero TypeOptions, so one call serves both modes:
//
//	mirrors, err := cache.Register[*v1alpha1.Mirror](mgr.Cache(), mgr.ShardedTypeOptions(sharding.ByUID))
//
// Registered with other options (the zero TypeOptions in sharded mode,
// say), the type is cached twice: whole for the reconciler, split for the
// controller.
func (m *Manager) ShardedTypeOptions(key sharding.Key) cache.TypeOptions {
	if m.shard == nil {
		return cache.TypeOptions{}
	}
	return cache.TypeOptions{Sharded: true, ShardKey: key}
}
