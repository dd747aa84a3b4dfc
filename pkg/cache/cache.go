package cache

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/go-logr/logr"

	"github.com/opkit-dev/opkit/internal/logging"
)

// Errors a caller can test for with errors.Is.
var (
	// ErrNotRegistered: a type was read that no Register, Metadata or
	// Unstructured call registered. The cache never starts an informer on
	// a read.
	ErrNotRegistered = errors.New("type not registered with the cache")
	// ErrNotInstalled: the API server does not serve the type yet, usually
	// because its CRD is not installed. The cache keeps looking, and syncs
	// the type once it appears.
	ErrNotInstalled = errors.New("type not installed in the cluster")
	// ErrNotSynced: a read, WaitForSync or a controller's start gave up
	// before the types it needs synced.
	ErrNotSynced = errors.New("cache not synced")
	// ErrRemoved: the type's informers stopped when its last hold was
	// released (Lister.Release).
	ErrRemoved = errors.New("type removed from the cache")
)

// Cache keeps one client-go SharedIndexInformer per cached type and scope
// (namespace, selectors, form), and hands out typed Listers over them. Its
// methods are safe for concurrent use.
type Cache struct {
	cfg        *rest.Config
	opts       Options
	codecs     serializer.CodecFactory
	paramCodec runtime.ParameterCodec
	// metaParams encodes the metadata watches' options, as client-go's
	// metadata client does.
	metaParams runtime.ParameterCodec
	metrics    *metrics
	log        logr.Logger
	// listWatchClient carries the informers' lists and watches:
	// opts.HTTPClient, asking for uncompressed responses, and reporting
	// failed watch streams with metrics on.
	listWatchClient *http.Client
	// reach holds the informers' lists and watches while the API server
	// is out of reach, so that they go on as soon as it is back.
	reach *reach

	mu   sync.Mutex
	regs []*registration // in registration order
	// lazyDetectors watch the objects LazyListers fetched, with
	// MutationOptions.Detect on.
	lazyDetectors []*detector
	// lazies are the LazyListers registered and not released, whose
	// fetched objects shedMemory drops.
	lazies []interface{ dropHeld() }
	// shedding is whether memory runs short (cacheaccess.Cache.ShedMemory):
	// LazyListers then hold nothing they fetch.
	shedding atomic.Bool
	// mutationFound wakes the periodic mutation check when a detector
	// finds a replaced object modified; nil with MutationOptions.Detect off.
	mutationFound chan struct{}
	unregistered  unregisteredReads
	// run starts a registration's informers; nil until Start, which binds
	// it to its context.
	run func(*registration)
	// slots are what sharded types hold, sorted; set by SetSlots, which
	// slotsMu serialises.
	slots   []int
	slotsMu sync.Mutex
	// probed is whether the API server applies shard selectors, once
	// probeOnce has asked; probeKnown is set once it has.
	probeOnce  sync.Once
	probed     bool
	probeKnown atomic.Bool
}

// New returns a cache for the cluster cfg points at. Nothing is listed or
// watched until Start.
func New(cfg *rest.Config, opts Options) (*Cache, error) {
	if cfg == nil {
		return nil, errors.New("cache: New needs a *rest.Config: pass the manager's, or one from clientcmd or rest.InClusterConfig")
	}
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("cache: invalid options: %w", err)
	}
	if opts.Scheme == nil {
		opts.Scheme = scheme.Scheme
	}
	if opts.CRDPollInterval == 0 {
		opts.CRDPollInterval = defaultCRDPollInterval
	}
	opts.Mutations.defaults()
	opts.UnregisteredReads.defaults()
	opts.Logger = logging.Or(opts.Logger)
	cfg = rest.CopyConfig(cfg)
	if opts.HTTPClient == nil {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, fmt.Errorf("cache: build HTTP client: %w", err)
		}
		opts.HTTPClient = hc
	}
	if opts.Mapper == nil {
		m, err := apiutil.NewDynamicRESTMapper(cfg, opts.HTTPClient)
		if err != nil {
			return nil, fmt.Errorf("cache: build REST mapper: %w", err)
		}
		opts.Mapper = m
	}
	c := &Cache{
		cfg:          cfg,
		opts:         opts,
		codecs:       serializer.NewCodecFactory(opts.Scheme),
		paramCodec:   runtime.NewParameterCodec(opts.Scheme),
		metaParams:   metadataParameterCodec(),
		log:          opts.Logger,
		unregistered: unregisteredReads{logged: map[unregisteredKey]bool{}},
	}
	if opts.Mutations.Detect {
		c.mutationFound = make(chan struct{}, 1)
	}
	m, err := newMetrics(opts.Registerer, c)
	if err != nil {
		return nil, fmt.Errorf("cache: register metrics: %w", err)
	}
	c.metrics = m
	if c.reach, err = newReach(cfg, opts.HTTPClient, c.codecs); err != nil {
		return nil, fmt.Errorf("cache: build the API server probe: %w", err)
	}
	c.listWatchClient = uncompressed(opts.HTTPClient)
	if m != nil {
		c.listWatchClient = withStreamErrors(c.listWatchClient)
	}
	return c, nil
}

// metadataParameterCodec encodes list options as client-go's metadata
// client does.
func metadataParameterCodec() runtime.ParameterCodec {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, metav1.Unversioned)
	return runtime.NewParameterCodec(s)
}

// Start starts an informer for every registered type, and for every type
// registered later, and returns at once. They run until ctx ends. Start may
// be called once.
func (c *Cache) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.run != nil {
		return errors.New("cache: Start called twice")
	}
	c.run = func(r *registration) { go r.run(ctx) }
	if m := c.opts.Mutations; m.Detect && m.Interval > 0 {
		go c.checkMutations(ctx)
	}
	for _, r := range c.regs {
		c.run(r)
	}
	return nil
}

// WaitForSync blocks until every registered type has synced (its informers
// have listed everything once), or ctx ends. Then it returns an error that
// wraps ErrNotSynced and the context's cause, and names each type not
// synced and why: not installed, forbidden, or still listing.
func (c *Cache) WaitForSync(ctx context.Context) error {
	c.mu.Lock()
	regs := slices.Clone(c.regs)
	c.mu.Unlock()
	for _, r := range regs {
		select {
		case <-r.syncedCh:
		case <-r.removedCh:
		case <-ctx.Done():
			return c.notSyncedError(context.Cause(ctx))
		}
	}
	return nil
}

func (c *Cache) notSyncedError(cause error) error {
	var errs []error
	for _, s := range c.Status() {
		if s.Synced {
			continue
		}
		why := "still listing"
		if s.Err != nil {
			why = s.Err.Error()
		}
		errs = append(errs, fmt.Errorf("%s: %s", s.describe(), why))
	}
	return fmt.Errorf("cache: wait for sync: %w (%d types): %w: %w", ErrNotSynced, len(errs), errors.Join(errs...), cause)
}

// TypeStatus is the state of one registered type.
type TypeStatus struct {
	GVK schema.GroupVersionKind
	// Form is "typed", "metadata" or "unstructured".
	Form string
	// Namespaces the type is cached in; empty for every namespace.
	Namespaces []string
	// Selector is the label and field selector, if any.
	Selector string
	// Owners says who holds the type: each TypeOptions.Owner whose
	// Listers hold it, with how many of them have not been released.
	// Empty for a type held only by registrations without an owner,
	// which hold it for the cache's life. The manager serves every
	// type's owners as JSON at /debug/holds on its metrics server.
	Owners map[string]int
	// Installed reports whether the API server serves the type.
	Installed bool
	// Synced reports whether every informer of the type has synced.
	Synced bool
	// Err is the latest error from listing or watching the type (or from
	// looking it up), nil once a list or watch succeeds after it.
	Err error
	// Unwatched is when one of the type's informers last lost its watch
	// without opening a new one yet: zero while every informer that has
	// watched is watching. An informer reopens a watch that ends within
	// moments; one unwatched for long serves an ever staler cache (the
	// API server is out of reach, say), even though it has synced.
	Unwatched time.Time
	// Slots are the slots a sharded type's informers hold, sorted: while
	// SetSlots changes them, the old set until the new one has synced.
	// Empty for a type not sharded, or holding no slot.
	Slots []int
	// Deleted is when the cache found the type's CRD deleted after it had
	// cached the type: zero unless the CRD is deleted now. Err then wraps
	// ErrDeleted. Installed and Synced are false until it is installed
	// again, when fresh informers list it.
	Deleted time.Time
	// AfterStart reports a type registered after Start (a kind a
	// controller added at run time watches): it reports its failures here
	// and through its Lister's Status only, not through the manager's
	// readiness check.
	AfterStart bool
}

func (s TypeStatus) describe() string {
	d := fmt.Sprintf("%s (%s)", s.GVK, s.Form)
	if len(s.Namespaces) > 0 {
		d += " in namespaces " + strings.Join(s.Namespaces, ",")
	}
	if s.Selector != "" {
		d += " selecting " + s.Selector
	}
	return d
}

// Status returns the state of every registered type, in registration order.
func (c *Cache) Status() []TypeStatus {
	c.mu.Lock()
	regs := slices.Clone(c.regs)
	c.mu.Unlock()
	out := make([]TypeStatus, 0, len(regs))
	for _, r := range regs {
		out = append(out, r.status())
	}
	return out
}

// register returns the registration for key, creating it with newReg if
// there is none, and the hold of opts.Owner on it (nil for no owner). A
// registration made after Start is started at once. A registration being
// dropped is no longer in c.regs: a new one is made beside it.
func (c *Cache) register(key regKey, opts TypeOptions, newReg func() *registration) (*registration, *hold, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.regs {
		if r.key != key || r.isRemoved() {
			continue
		}
		if opts.Transform != nil || r.ownTransform {
			return nil, nil, fmt.Errorf("cache: %s is already registered with these namespaces and selectors, and one of the two registrations has its own Transform: reuse the Lister the first returned", key.gvk)
		}
		return r, r.acquire(opts.Owner), nil
	}
	r := newReg()
	r.slots = c.slots
	r.afterStart = c.run != nil
	c.regs = append(c.regs, r)
	c.metrics.registered(r)
	h := r.acquire(opts.Owner)
	if c.run != nil {
		c.run(r)
	}
	return r, h, nil
}

func (c *Cache) registered(key func(regKey) bool) []*registration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*registration
	for _, r := range c.regs {
		if key(r.key) {
			out = append(out, r)
		}
	}
	return out
}
