package manager

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/opkit-dev/opkit/internal/actas"
	"github.com/opkit-dev/opkit/internal/bodybudget"
	"github.com/opkit-dev/opkit/internal/budget"
	"github.com/opkit-dev/opkit/internal/cacheaccess"
	"github.com/opkit-dev/opkit/internal/consistency"
	"github.com/opkit-dev/opkit/internal/fence"
	"github.com/opkit-dev/opkit/internal/logging"
	"github.com/opkit-dev/opkit/internal/memguard"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/cachedclient"
	"github.com/opkit-dev/opkit/pkg/sharding"
)

// Errors a caller can test for with errors.Is.
var (
	// ErrLeaderLost: with Options.LeaderElection.ExitOnLoss, the manager
	// lost its leader lease; its leader-only runnables were stopped at
	// once and Start returned. By default a lost lease is ridden out
	// instead: the fence stays closed (controllers start no reconcile,
	// leader-only writes are refused with ErrFenced), leader-only
	// runnables keep their context, caches and queues are kept, and the
	// manager campaigns again; once elected, reconciles resume. Another
	// replica may win meanwhile: this one is then a warm standby.
	ErrLeaderLost = errors.New("leader election lost")
	// ErrUnreachable: Start found that the API server does not answer (a
	// connection refused, reset or timed out, a TLS failure), and returned
	// at once, rather than after Options.CacheSyncTimeout. Later, the
	// cache logs "Cannot reach the API server" for a type it cannot look
	// up for that reason (a type whose CRD is not installed aside).
	ErrUnreachable = errors.New("API server unreachable")
)

// Manager builds the clients, cache and metrics registry of an operator
// once, and runs its runnables: HTTP servers first, then the cache (waiting
// for it to sync), then the runnables that need no lease, then, once
// elected, the leader-only ones such as controllers. Its methods are safe
// for concurrent use.
type Manager struct {
	opts   Options
	config *rest.Config
	// leaseConfig is config before the fence and tracing wrap it, for the
	// Leases' own clients (see leaseClient).
	leaseConfig *rest.Config
	scheme      *runtime.Scheme
	mapper      meta.RESTMapper
	cache       *cache.Cache
	client      client.Client
	uncached    client.Client // UncachedClient's: client, with KeepStripped's Update
	// actingClient sends each request as the user its context carries
	// (package actas): the client under WriterAs.
	actingClient client.Client
	clientset    kubernetes.Interface
	registry     *prometheus.Registry
	fence        *fence.Fence // with leader election: may this process act as the leader now?
	identity     string       // with leader election: this candidate's
	leaseSeen    leaseSeen    // with leader election: what the last request for the Lease found
	log          logr.Logger
	broadcast    events.EventBroadcaster
	// eventsRefused is opkit_events_refused_total, whose series each recorder
	// starts at zero.
	eventsRefused *prometheus.CounterVec
	elected       chan struct{} // closed once leader-only runnables may run
	health        *checks
	ready         *checks
	synced        atomic.Bool      // the cache has synced once
	webhook       crwebhook.Server // nil without Options.Webhook
	// deferredWebhook holds the webhook server's start with
	// Options.Webhook.StartOnRegister.
	deferredWebhook deferredWebhook
	// admissionBodies is GuardWebhook's budget of admission request
	// bodies in flight; nil without Options.Webhook.
	admissionBodies *bodybudget.Budget
	shard           *sharded // nil without Options.Sharding
	memory          memoryState
	budget          *budget.Budget  // nil with Options.APIBudget.Off
	guard           *memguard.Guard // set by Start; nil when MemoryLimitOptions.Off

	mu        sync.Mutex
	runnables []Runnable
	started   bool
	servers   []*server
	writers   map[string]client.Client // by controller name, made by Writer
	// actingWriters are WriterAs's, by controller name, each shared by
	// every user the controller acts as.
	actingWriters map[string]client.Client
	// launch starts a runnable added once the runnables have started, as
	// they were (leader-only ones once elected); nil until then. Called
	// with mu held.
	launch func(Runnable)
	// controllers are NewController's, by name, from the moment
	// NewController reserves the name (nil until built) until
	// RemoveController has stopped the controller and cleaned up.
	controllers map[string]*managedController
}

// New returns a manager for the cluster cfg points at (see Config to find
// it as kubectl and in-cluster pods do). Invalid options fail here, with a
// message naming the field.
func New(cfg *rest.Config, opts Options) (*Manager, error) {
	if cfg == nil {
		return nil, errors.New("manager: New needs a *rest.Config: use manager.Config, which looks where kubectl and in-cluster pods look")
	}
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("manager: invalid options: %w", err)
	}
	opts = opts.withDefaults()
	if opts.LeaderElection.Enabled {
		if _, err := leaseNamespace(opts.LeaderElection); err != nil {
			return nil, fmt.Errorf("manager: invalid options: %w", err)
		}
	}
	m := &Manager{
		opts:     opts,
		scheme:   opts.Scheme,
		registry: prometheus.NewRegistry(),
		log:      opts.Logger,
		elected:  make(chan struct{}),
		health:   newChecks("healthz"),
		ready:    newChecks("readyz"),
	}
	m.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if opts.LeaderElection.Enabled {
		le := opts.LeaderElection
		m.fence = fence.New(le.Name, fenceMargin(le))
		m.identity = identity(le)
		if err := newLeaderGauge(m.registry, le.Name, m.fence); err != nil {
			return nil, err
		}
		m.ready.addNoted("leader-election", m.leaderReady)
	}
	rm, err := imetrics.NewRESTClientMetrics(m.registry)
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	// Registered here, so that Writer cannot fail on it.
	if _, err := imetrics.NewClientWrites(m.registry); err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	if m.memory.metrics, err = imetrics.NewMemory(m.registry); err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	m.ready.addNoted("memory", m.memory.ready)
	m.config = rest.CopyConfig(cfg)
	m.config.Wrap(rm.Wrap)
	m.leaseConfig = rest.CopyConfig(m.config)
	m.traceRequests()
	// A leader-only runnable's write is refused while its fence is
	// closed: here, once it has its token, since the lease may lapse while
	// it waits for one; and outermost, so that a write refused at once
	// neither waits nor spends a token.
	m.config.Wrap(fence.Transport)
	// Outside the metrics and tracing, so that a request's wait for a
	// token is not counted as the API server's latency.
	if err := m.newBudget(); err != nil {
		return nil, err
	}
	m.config.Wrap(fence.Transport)
	if err := m.buildClients(); err != nil {
		return nil, err
	}
	m.health.add("ping", func(*http.Request) error { return nil })
	m.ready.add("cache-sync", m.cacheSynced)
	if err := m.newWebhookServer(); err != nil {
		return nil, err
	}
	if opts.Sharding.Enabled {
		if m.shard, err = m.newSharded(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (o Options) withDefaults() Options {
	if o.Scheme == nil {
		o.Scheme = scheme.Scheme
	}
	if o.CacheSyncTimeout == 0 {
		o.CacheSyncTimeout = defaultCacheSyncTimeout
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.Health.UnwatchedGrace == 0 {
		o.Health.UnwatchedGrace = defaultUnwatchedGrace
	}
	if o.Metrics.BindAddress == "" {
		o.Metrics.BindAddress = defaultMetricsBindAddress
	}
	o.Logger = logging.Or(o.Logger)
	o.LeaderElection = o.LeaderElection.withDefaults()
	o.Sharding = o.Sharding.withDefaults()
	o.Webhook = o.Webhook.withDefaults()
	o.MemoryLimit = o.MemoryLimit.withDefaults()
	return o
}

// buildClients makes the HTTP client, REST mapper, cache, write client,
// clientset and event broadcaster, all sharing one HTTP client.
func (m *Manager) buildClients() error {
	hc, err := rest.HTTPClientFor(m.config)
	if err != nil {
		return fmt.Errorf("manager: build HTTP client: %w", err)
	}
	if m.mapper, err = apiutil.NewDynamicRESTMapper(m.config, hc); err != nil {
		return fmt.Errorf("manager: build REST mapper: %w", err)
	}
	if m.cache, err = cache.New(m.config, m.cacheOptions(hc)); err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	c, err := client.New(m.config, client.Options{HTTPClient: hc, Scheme: m.scheme, Mapper: m.mapper})
	if err != nil {
		return fmt.Errorf("manager: build client: %w", err)
	}
	// Writes inside a reconcile are recorded for read-your-writes.
	m.client = consistency.NewClient(c, cache.Internal(m.cache, cacheaccess.Key{}))
	m.uncached = cachedclient.KeepStripped(cachedclient.NewReader(m.cache), m.client)
	// The same HTTP client and connections, each request sent as the user
	// its context names.
	acting := &http.Client{Transport: actas.Transport(hc.Transport), Timeout: hc.Timeout}
	if c, err = client.New(m.config, client.Options{HTTPClient: acting, Scheme: m.scheme, Mapper: m.mapper}); err != nil {
		return fmt.Errorf("manager: build client: %w", err)
	}
	m.actingClient = consistency.NewClient(c, cache.Internal(m.cache, cacheaccess.Key{}))
	if m.clientset, err = kubernetes.NewForConfigAndClient(m.config, hc); err != nil {
		return fmt.Errorf("manager: build clientset: %w", err)
	}
	sink, err := newRefusals(&events.EventSinkImpl{Interface: m.clientset.EventsV1()}, m.log.WithName("events"), m.registry)
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	m.eventsRefused = sink.refused
	m.broadcast = events.NewBroadcaster(sink)
	return nil
}

// cacheOptions returns Options.Cache with what it leaves empty filled in
// from the manager's own: a value the user set is the cache's, even where
// it differs from what the manager's client uses.
func (m *Manager) cacheOptions(hc *http.Client) cache.Options {
	co := m.opts.Cache
	if co.Scheme == nil {
		co.Scheme = m.scheme
	}
	if co.Mapper == nil {
		co.Mapper = m.mapper
	}
	if co.HTTPClient == nil {
		co.HTTPClient = m.informerLane(hc)
	} else {
		co.HTTPClient = m.cacheHTTPClient(co.HTTPClient)
	}
	if co.Registerer == nil {
		co.Registerer = m.registry
	}
	if co.Logger.GetSink() == nil {
		co.Logger = m.log.WithName("cache")
	}
	if so := m.opts.Sharding; so.Enabled && co.Sharding.Slots.Count() == 1 {
		// An invalid count is reported by newSharded.
		co.Sharding.Slots, _ = sharding.NewSlots(so.Slots)
	}
	return co
}

// Config returns the REST config the manager's clients use, its transport
// instrumented for metrics.
func (m *Manager) Config() *rest.Config { return m.config }

// Scheme returns the scheme.
func (m *Manager) Scheme() *runtime.Scheme { return m.scheme }

// Cache returns the shared cache. Register types with cache.Register before
// Start.
func (m *Manager) Cache() *cache.Cache { return m.cache }

// UncachedClient returns a client that reads and writes through the API
// server, never the cache: controller-runtime's GetAPIReader, and a client
// for writes without Writer's field owner and skipped no-op writes. Most
// code wants Writer (see "Which client" in the package documentation). Its
// writes inside a reconcile are recorded for read-your-writes (see
// controller.Options.ReadYourWritesTimeout). Its Update of a copy read
// from the cache (a Lister's, the CachedClient's) keeps on the API server
// what the cache strips, as the CachedClient's does
// (cachedclient.KeepStripped).
func (m *Manager) UncachedClient() client.Client { return m.uncached }

// Registry returns the metrics registry served at /metrics. Register your
// own metrics with it.
func (m *Manager) Registry() *prometheus.Registry { return m.registry }

// Logger returns the manager's logger.
func (m *Manager) Logger() logr.Logger { return m.log }

// Elected is closed once this process may run leader-only work: when it
// first wins the election, or at start without leader election. It stays
// closed if the lease is lost later; CheckLeadership and
// leader_election_master_status say whether this process may act now.
func (m *Manager) Elected() <-chan struct{} { return m.elected }

// Add adds a runnable, which Start starts. It must be called before Start;
// NewController, unlike Add, also adds controllers to a running manager.
func (m *Manager) Add(r Runnable) error {
	if r == nil {
		return errors.New("manager: Add: the runnable is nil")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return fmt.Errorf("manager: Add %s after Start: add every runnable before Start", named(r))
	}
	m.runnables = append(m.runnables, r)
	return nil
}

// AddHealthCheck adds a check to /healthz: the process is alive while every
// check returns nil. It must be called before Start.
//
// A check's requests to the API server, sent with the request's context
// (r.Context()) through a client of the manager's, go in the API budget's
// health lane and never wait, however flooded the budget; a context of
// your own puts them behind reconciles. Probes of one path (/healthz, or
// /healthz/<name>) share a run of its checks: a run answers every probe
// that arrives while it runs or, if every check passed, within a second
// of its start, so that probes, which anyone who reaches the port may
// send, run passing checks at most once a second a path. The run's context ends after 30 seconds.
func (m *Manager) AddHealthCheck(name string, check func(*http.Request) error) error {
	return m.health.add(name, check)
}

// AddReadyCheck adds a check to /readyz, beside the cache's. It must be
// called before Start. Its requests and its runs are as AddHealthCheck's.
func (m *Manager) AddReadyCheck(name string, check func(*http.Request) error) error {
	return m.ready.add(name, check)
}

func (m *Manager) setServers(s []*server) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.servers = s
}

// MetricsAddr returns the address /metrics is served on, such as
// "127.0.0.1:39017" for a BindAddress of "127.0.0.1:0", or "" before Start
// or when off.
func (m *Manager) MetricsAddr() string { return m.addr("metrics") }

// HealthProbeAddr returns the address /healthz and /readyz are served on,
// or "" before Start or when off.
func (m *Manager) HealthProbeAddr() string { return m.addr("health probes") }

func (m *Manager) addr(name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.servers {
		if s.name == name {
			return s.Addr().String()
		}
	}
	return ""
}
