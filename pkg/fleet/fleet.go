package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/opkit-dev/opkit/internal/budget"
	"github.com/opkit-dev/opkit/pkg/cache"
)

// ErrNotEngaged is wrapped by the errors about a member the fleet has not
// engaged, or has disengaged: Fleet.Cluster's, Lister.In's, the cause
// of a reconcile's context when its member goes, and the error of every
// request through a disengaged member's clients.
var ErrNotEngaged = errors.New("the member cluster is not engaged")

// ErrUnreachable is wrapped by the cause of a reconcile's context that
// ended because its member's API server stopped answering the fleet's
// probes (Cluster.Health).
var ErrUnreachable = errors.New("the member cluster's API server is unreachable")

// ErrStopped is wrapped by Engage's error once the fleet's Start has
// returned.
var ErrStopped = errors.New("the fleet has stopped")

// Member is a cluster a Provider engages.
type Member struct {
	// Name names the member in Requests and logs; engaging a name again
	// replaces the member of that name.
	Name string
	// Config reaches the member's API server. The fleet does not modify
	// it; its QPS and Burst are the member's API budget's by default
	// (APIBudgetOptions), and client-go's own limit of each client is off
	// while the budget is on.
	Config *rest.Config
	// Namespace, if set, confines the member to one namespace of the API
	// server Config reaches (namespaces as clusters): its cache holds the
	// namespaced types of that namespace only and its client refuses
	// namespaced objects of any other. Cluster-scoped types are the API
	// server's, shared by every member on it, and pass.
	Namespace string
}

// Engager engages members: what a Provider is handed.
type Engager interface {
	// Engage reconciles m until ctx ends (or the fleet stops), and returns
	// at once, without waiting for m's caches to sync. It fails only if m
	// is invalid or the fleet has stopped. It is safe for concurrent use.
	Engage(ctx context.Context, m Member) error
}

// Provider finds a fleet's members.
type Provider interface {
	// Run engages each member it finds with e, with a context it ends
	// when the member goes, until ctx ends; it returns nil then. An error
	// stops the fleet, which returns it.
	Run(ctx context.Context, e Engager) error
}

// ProviderFunc is a Provider that is a function.
type ProviderFunc func(ctx context.Context, e Engager) error

// Run calls p.
func (p ProviderFunc) Run(ctx context.Context, e Engager) error { return p(ctx, e) }

var _ Provider = ProviderFunc(nil)

// Options configure New.
type Options struct {
	// Scheme maps Go types to kinds in every member's cache and client.
	// Defaults to client-go's kubernetes scheme.
	Scheme *runtime.Scheme
	// Providers find the members; Start runs each. Defaults to none:
	// members are engaged by calling Engage.
	Providers []Provider
	// Logger logs members engaged and disengaged, members that become
	// unreachable and reachable again, and keys dropped because their
	// member went; each member's cache logs to it with the member's name
	// as "cluster". Defaults to logr.Discard().
	Logger logr.Logger
	// ProbeInterval is how often Start asks each member's API server
	// whether it is ready (Cluster.Health), a few members at a time.
	// Defaults to 10s; negative: never.
	ProbeInterval time.Duration
	// Registerer receives the fleet's metrics (MetricMembers,
	// MetricMemberReachable) and the members' writers'
	// (opkit_client_writes_total). Defaults to none.
	Registerer prometheus.Registerer
	// Mutations configure each member's detector of cached objects
	// modified in place, as cache.Options.Mutations does one cache's:
	// off unless OPKIT_CACHE_MUTATION_DETECTOR is "true". Each report
	// names its member (cache.MutationError.Cluster). Defaults to the
	// cache's defaults.
	Mutations cache.MutationOptions
	// UnregisteredReads say what a read of a kind nobody registered,
	// through a member's CachedClient or Writer, does besides returning
	// ErrNotRegistered, as cache.Options.UnregisteredReads does for one
	// cache: failing the test with OPKIT_CACHE_FAIL_UNREGISTERED_READS
	// set. Each report names its member
	// (cache.UnregisteredReadError.Cluster). Defaults to the cache's
	// defaults.
	UnregisteredReads cache.UnregisteredReadOptions
	// Sharding, if set, shares the members out among the fleet's
	// replicas (see ShardingOptions): each replica engages only the
	// members whose slots it holds, and acts on none other. Run the fleet
	// on every replica then, not on the leader alone. Defaults to nil:
	// this replica engages every member.
	Sharding *ShardingOptions
	// APIBudget configures each member's API budget: one per member,
	// which every request to the member goes through, adapting to that
	// member's pushbacks (APIBudgetOptions). Its metrics, with
	// Registerer, are the manager's budget's under names of their own
	// (opkit_fleet_member_api_budget_rate for opkit_api_budget_rate, and
	// so on), labelled by cluster, and unregistered when the member is
	// disengaged. Defaults to on, with no fixed rate.
	APIBudget APIBudgetOptions
}

// Fleet is the member clusters a fleet operator reconciles across. Make
// it with New, register types with Register, watch them with Watch, and
// run it with Start (a manager.Runnable: add it to the manager, which runs
// it on the leader, or on every replica with Options.Sharding).
type Fleet struct {
	opts    Options
	metrics *fleetMetrics // nil without Options.Registerer
	shard   *sharder      // nil without Options.Sharding
	// hub is the manager's API budget, which Start's context carries
	// under a manager: the members' budgets take its controllers'
	// weights.
	hub atomic.Pointer[budget.Budget]

	// shardMu orders, in a sharded fleet, the engaging of a member a
	// provider reports with the engaging and releasing of its slot.
	shardMu sync.Mutex

	mu      sync.Mutex
	members map[string]*Cluster
	types   []*registration // registered with Register, in order
	watches []*watching     // started Watches
	// known holds, in a sharded fleet, every member the providers engaged,
	// owned here or not, by name: members holds those of them engaged.
	known map[string]*known
	// undrained holds, in a sharded fleet, every Cluster engaged until it
	// is disengaged and its reconciles in flight have returned: what a
	// release of its slot waits for, though it left members already.
	undrained map[*Cluster]struct{}
	stopped   bool
}

// New returns a fleet with no member. It fails only if the metrics cannot
// be registered.
func New(opts Options) (*Fleet, error) {
	if opts.Scheme == nil {
		opts.Scheme = scheme.Scheme
	}
	if opts.ProbeInterval == 0 {
		opts.ProbeInterval = defaultProbeInterval
	}
	if err := opts.APIBudget.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	f := &Fleet{opts: opts, metrics: m, members: map[string]*Cluster{}, known: map[string]*known{}, undrained: map[*Cluster]struct{}{}}
	if opts.Sharding != nil {
		if f.shard, err = newSharder(f, *opts.Sharding); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Start runs the providers until ctx ends or one fails, then disengages
// every member and returns: nil when ctx ended, else the provider's error.
// A sharded fleet joins its replicas' group first and, when ctx ends,
// leaves it: it hands its members over once their reconciles in flight
// have returned.
func (f *Fleet) Start(ctx context.Context) error {
	if h := budget.FromContext(ctx); h != nil {
		f.hub.Store(h)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(f.opts.Providers))
	var wg sync.WaitGroup
	if f.opts.ProbeInterval > 0 {
		wg.Go(func() { f.probeAll(ctx, f.opts.ProbeInterval) })
	}
	if f.shard != nil {
		wg.Go(func() {
			if err := f.shard.member.Run(ctx); err != nil {
				f.opts.Logger.Error(err, "Leaving the fleet's shard group")
			}
		})
	}
	for _, p := range f.opts.Providers {
		wg.Go(func() {
			if err := p.Run(ctx, f); err != nil {
				errs <- fmt.Errorf("run fleet provider %T: %w", p, err)
				cancel()
			}
		})
	}
	<-ctx.Done()
	wg.Wait()
	f.stop()
	close(errs)
	return errors.Join(collect(errs)...)
}

func collect(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// stop disengages every member and refuses later engagements.
func (f *Fleet) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	for name, c := range f.members {
		c.cancel()
		delete(f.members, name)
	}
}

// Engage engages m until ctx ends; see Engager. A sharded fleet engages
// m only while this replica holds m's slot, and from when it comes to
// hold it.
func (f *Fleet) Engage(ctx context.Context, m Member) error {
	if m.Name == "" || m.Config == nil {
		return fmt.Errorf("engage member %q: a member needs a name and a config", m.Name)
	}
	if f.shard != nil {
		return f.engageOwned(ctx, m)
	}
	return f.engage(ctx, m, nil)
}

// engage engages m, for k in a sharded fleet.
func (f *Fleet) engage(ctx context.Context, m Member, k *known) error {
	c, err := f.newCluster(ctx, m)
	if err != nil {
		return fmt.Errorf("engage member %q: %w", m.Name, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		c.cancel()
		return fmt.Errorf("engage member %q: %w", m.Name, ErrStopped)
	}
	if old, ok := f.members[m.Name]; ok {
		old.cancel()
		old.closeBudget() // now: its metrics make way for c's
	}
	if err := f.registerBudget(c); err != nil {
		c.cancel()
		return fmt.Errorf("engage member %q: %w", m.Name, err)
	}
	c.engagedBy = k
	f.members[m.Name] = c
	if f.shard != nil {
		f.undrained[c] = struct{}{}
	}
	if f.metrics != nil {
		f.metrics.members.Set(float64(len(f.members)))
		f.metrics.reachable.WithLabelValues(m.Name).Set(1)
	}
	for _, r := range f.types {
		c.register(r)
	}
	if err := c.cache.Start(c.life); err != nil {
		delete(f.members, m.Name)
		c.cancel()
		return fmt.Errorf("engage member %q: start its cache: %w", m.Name, err)
	}
	for _, w := range f.watches {
		w.startOn(c)
	}
	context.AfterFunc(c.life, func() { f.disengaged(c) })
	f.opts.Logger.Info("Member cluster engaged", "cluster", m.Name, "namespace", m.Namespace)
	return nil
}

// disengaged forgets c once its life has ended, unless a member of its
// name has replaced it.
func (f *Fleet) disengaged(c *Cluster) {
	f.mu.Lock()
	if f.members[c.name] == c {
		delete(f.members, c.name)
		if f.metrics != nil {
			f.metrics.members.Set(float64(len(f.members)))
			f.metrics.reachable.DeleteLabelValues(c.name)
		}
	}
	f.mu.Unlock()
	c.releaseClients()
	f.opts.Logger.Info("Member cluster disengaged", "cluster", c.name)
	if f.shard != nil {
		c.drain()
		f.mu.Lock()
		delete(f.undrained, c)
		f.mu.Unlock()
	}
}

// Cluster returns the engaged member named name, or an error at once:
// one wrapping ErrNotEngaged if there is none, and ErrNotOwned too if
// another replica of a sharded fleet owns it; one wrapping ErrNotOwned
// alone if this replica's renewals are late (ShardingOptions).
func (f *Fleet) Cluster(name string) (*Cluster, error) {
	f.mu.Lock()
	c, ok := f.members[name]
	f.mu.Unlock()
	if !ok || c.life.Err() != nil {
		return nil, f.notOwned(name)
	}
	if err := f.owned(c); err != nil {
		return nil, err
	}
	return c, nil
}

// Clusters returns the names of the engaged members, in no order.
func (f *Fleet) Clusters() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	names := make([]string, 0, len(f.members))
	for name := range f.members {
		names = append(names, name)
	}
	return names
}

// Cluster is one engaged member: its cache, its clients and writers, and
// the Listers of the types registered with the fleet.
type Cluster struct {
	name   string
	member Member
	// config is member.Config, with client-go's own rate limit off while
	// the member's budget is on: what its clients are made with.
	config     *rest.Config
	budget     *budget.Budget // nil with Options.APIBudget.Off
	cache      *cache.Cache
	client     client.Client
	httpClient *http.Client               // the cache's and the clients'
	discovery  *discovery.DiscoveryClient // the probe's
	clients    clients                    // the writers and the cached client: client.go
	// engagedBy is the provider's report the member was engaged for, in a
	// sharded fleet; nil otherwise.
	engagedBy *known
	// inflight counts its reconciles, for a release to wait on.
	inflight inflight
	// life ends when the member is disengaged: the member's own lifetime,
	// which its cache, its sources and its reconciles run under, kept
	// here because the member is what it describes.
	life   context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// listers holds each registration's Lister (a *cache.Lister[T]) or
	// the error registering it.
	listers map[*registration]any
	health  Health
	// reach ends, with a cause wrapping ErrUnreachable, once a probe finds
	// the member unreachable; a new one begins when it answers again.
	reach       context.Context
	unreachable context.CancelCauseFunc
	// ending holds the cancel funcs of the member's reconciles in flight
	// (onUnreachable), which setHealth calls before it ends reach: a
	// reconcile's context has its cause by the time its requests, ended
	// by reach, fail.
	ending map[*context.CancelCauseFunc]struct{}
}

func (f *Fleet) newCluster(ctx context.Context, m Member) (_ *Cluster, err error) {
	life, cancel := context.WithCancel(ctx)
	defer func() {
		if err != nil {
			cancel()
		}
	}()
	// The member's own API budget, released when it is disengaged.
	b, err := f.newBudget(m)
	if err != nil {
		return nil, err
	}
	cfg := m.Config
	if b != nil {
		context.AfterFunc(life, b.Close)
		cfg = rest.CopyConfig(m.Config)
		cfg.QPS = -1 // the budget replaces client-go's limit of each client
	}
	// One HTTP client for the member's cache and client: one transport,
	// one set of connections. (client-go shares transports between
	// clients of equal TLS configs, so namespaces of one API server share
	// theirs too.)
	base, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("make its HTTP client: %w", err)
	}
	// A copy: for a config without TLS, credentials or timeout, client-go
	// hands out http.DefaultClient itself.
	hc := &http.Client{Timeout: base.Timeout}
	// The clients' requests, their REST mapper's discovery among them
	// (which no context bounds), end when a probe finds the member
	// unreachable (reachTransport); the cache's informers and the probes
	// go on through hc, so that they see the member come back.
	c := &Cluster{name: m.Name, member: m, config: cfg, budget: b, httpClient: hc, life: life, cancel: cancel, listers: map[*registration]any{},
		health: Health{Reachable: true, Since: time.Now()}}
	c.reach, c.unreachable = context.WithCancelCause(context.Background())
	rt := base.Transport
	if rt == nil { // http.DefaultClient's
		rt = http.DefaultTransport
	}
	if f.shard != nil {
		// Every write to the member, by any path, passes the ownership
		// check last, just before the wire: after its wait for the budget.
		rt = ownedTransport{next: rt, f: f, c: c}
	}
	// A request to a member disengaged is refused before it waits for
	// the budget.
	hc.Transport = whileEngaged(m.Name, life.Done(), budgeted(m.Name, b, rt))
	reaching := &http.Client{Transport: reachTransport{c: c, next: hc.Transport}, Timeout: hc.Timeout}
	// One REST mapper too: its discovery of a group, held per mapper,
	// is most of what a member's first write would cost otherwise.
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, reaching)
	if err != nil {
		return nil, fmt.Errorf("make its REST mapper: %w", err)
	}
	opts := cache.Options{Scheme: f.opts.Scheme, Mapper: mapper, HTTPClient: informerLane(b, hc), Logger: f.opts.Logger.WithValues("cluster", m.Name),
		Mutations: f.memberMutations(m.Name), UnregisteredReads: f.memberUnregisteredReads(m.Name)}
	if m.Namespace != "" {
		opts.Namespaces = []string{m.Namespace}
	}
	c.cache, err = cache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("make its cache: %w", err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: f.opts.Scheme, Mapper: mapper, HTTPClient: reaching})
	if err != nil {
		return nil, fmt.Errorf("make its client: %w", err)
	}
	c.setClient(cl, f.opts.Registerer)
	if err := newDiscovery(c); err != nil {
		return nil, err
	}
	return c, nil
}

// closeBudget closes the member's budget, if it has one: its waiting
// requests fail, its metrics are unregistered.
func (c *Cluster) closeBudget() {
	if c.budget != nil {
		c.budget.Close()
	}
}

// Name returns the member's name.
func (c *Cluster) Name() string { return c.name }

// Namespace returns the namespace the member is confined to, or "".
func (c *Cluster) Namespace() string { return c.member.Namespace }

// Cache returns the member's cache.
func (c *Cluster) Cache() *cache.Cache { return c.cache }

// Client returns a client of the member's API server, uncached, as the
// operator's own identity there: manager.Manager.UncachedClient for the
// member. Its writes inside a reconcile are recorded for read-your-writes
// against the member's cache. A member confined to a namespace has one
// that refuses objects of other namespaces. In a sharded fleet it refuses
// writes, with an error wrapping ErrNotOwned, once the member is
// disengaged or this replica may not act on it (ShardingOptions).
func (c *Cluster) Client() client.Client { return c.client }

// Done is closed once the member is disengaged.
func (c *Cluster) Done() <-chan struct{} { return c.life.Done() }
