package cache

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	"github.com/opkit-dev/opkit/internal/informer"
	"github.com/opkit-dev/opkit/pkg/sharding"
)

// form is how a type's objects are decoded and cached.
type form = cacheaccess.Form

const (
	typed            = cacheaccess.Typed
	metadataOnly     = cacheaccess.Metadata
	unstructuredForm = cacheaccess.Unstructured
)

// regKey identifies a registration: one set of informers per key.
type regKey struct {
	gvk        schema.GroupVersionKind
	form       form
	namespaces string // sorted, comma-separated; "" for every namespace
	selector   string // labels and fields
	keepMF     bool
	keepLA     bool
	sharded    bool
	shardKey   sharding.Key
}

// registration is one registered type and scope: the informers that cache
// it, one per namespace (or one for every namespace), once the API server
// is found to serve the type.
type registration struct {
	c            *Cache
	key          regKey
	namespaces   []string
	opts         TypeOptions
	ownTransform bool
	newObject    func() runtime.Object // the informer's example object

	syncedCh  chan struct{} // closed once every informer has first synced
	firstSync sync.Once     // closes syncedCh
	removedCh chan struct{} // closed by remove
	// notFound receives a token when a list or watch is answered 404:
	// the type's CRD may have been deleted (see untilDeleted).
	notFound chan struct{}

	mu       sync.Mutex
	indexers toolscache.Indexers
	started  bool // the informers exist; no more indexers
	cancel   context.CancelFunc
	removed  bool
	lastErr  error
	err      errorKind
	// gen counts the views newView made; a view's sync counts only while
	// it is the latest.
	gen uint64
	// deleted is when the type's CRD was found deleted; zero while it is
	// installed (or before it first was).
	deleted time.Time
	// afterStart: registered after the cache started (see
	// TypeStatus.AfterStart).
	afterStart bool
	// logged holds, per namespace informer, the last list or watch error
	// logged at V(0), so that retries failing the same way are logged at
	// V(1) only.
	logged map[string]string
	// unwatched holds, per informer whose watch ended ("<namespace>#<n>",
	// n counting informers), when it ended; an informer is absent while it
	// watches, before its first watch, and once stopped.
	unwatched map[string]time.Time
	informers atomic.Int64 // informers instrumented, for their keys

	// onIndex, set by newStatic, adds an index to a store that already has
	// contents, so that a static store takes indexes at any time; nil for a
	// cache's registration. Called with mu held.
	onIndex func(r *registration, name string, fn toolscache.IndexFunc) error

	// readError, set by newStatic from StoreOptions.ReadError, is asked
	// before each read of a Lister; nil for a cache's registration. Set
	// before the registration is shared, then only read.
	readError func(verb, namespace, name string) error

	// handlers are added to the informers when they are made, or at once
	// if they exist.
	handlers []*HandlerRegistration

	view   atomic.Pointer[view] // nil until the informers exist
	synced atomic.Bool

	// For a sharded type: the slots its view is made for (or will be),
	// the mapping its informers were made with, and spawn, which starts a
	// view's informers under run's context and returns what stops them;
	// nil until run has made the first view. Guarded by mu.
	slots   []int
	mapping *meta.RESTMapping
	spawn   func(*view) context.CancelFunc
	// next is the view SetSlots is making, while it syncs: handlers added
	// meanwhile are attached to it too. slotting counts the SetSlots
	// calls between their first look at the view and their end.
	next     *view
	slotting int

	// holds counts, per TypeOptions.Owner, the Listers not yet released;
	// pinned is whether a registration without an owner shares r, which
	// then runs for the cache's life. r stops when its last hold is
	// released unless pinned. Guarded by c.mu.
	holds  map[string]int
	pinned bool
}

// errorKind says what lastErr is about, for Status.
type errorKind uint8

const (
	noError errorKind = iota
	lookupError
	notInstalled
	unreachable // the API server cannot be reached to look the type up
	listWatchError
	crdDeleted // the CRD was deleted after the type was cached
)

func newRegistration(c *Cache, key regKey, opts TypeOptions, newObject func() runtime.Object) *registration {
	r := &registration{
		c:          c,
		key:        key,
		opts:       opts,
		namespaces: opts.Namespaces,
		newObject:  newObject,
		syncedCh:   make(chan struct{}),
		removedCh:  make(chan struct{}),
		notFound:   make(chan struct{}, 1),
		indexers:   toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc},
	}
	r.ownTransform = opts.Transform != nil
	return r
}

// run looks the type up until the API server serves it, then starts its
// informers and keeps them in step with the type's CRD: while the CRD is
// installed they list, watch and serve reads; once it is deleted they stop
// (see markDeleted), and fresh ones start when it is installed again. It
// returns when ctx ends or the type is removed.
func (r *registration) run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	if !r.setCancel(cancel) {
		cancel()
		return
	}
	start := time.Now()
	mapping, err := r.waitForMapping(ctx)
	stopRetired := func() {}
	for err == nil {
		// One generation per installation of the CRD: its informers,
		// and those SetSlots makes for it, stop with genCtx.
		genCtx, cancelGen := context.WithCancel(ctx)
		stopRetired()
		if err = r.serve(genCtx, mapping, start); err != nil {
			cancelGen()
			return
		}
		if err = r.untilDeleted(ctx); err != nil {
			cancelGen()
			return
		}
		retired := r.markDeleted()
		stopRetired = func() {
			if retired != nil {
				r.detachHandlers(retired)
			}
			cancelGen()
		}
		mapping, err = r.waitForReinstall(ctx)
	}
	stopRetired()
}

// serve makes and starts the type's informers for mapping, and marks the
// type synced once they have synced, unless their generation ends first.
func (r *registration) serve(ctx context.Context, mapping *meta.RESTMapping, start time.Time) error {
	if r.key.sharded {
		// Probe shard selector support (once per cache) before newView
		// takes r.mu.
		r.c.serverFilters(ctx, r, mapping)
	}
	select {
	case <-r.notFound: // a 404 of the informers a deleted CRD stopped
	default:
	}
	v, gen, err := r.newView(ctx, mapping)
	if err != nil {
		if !r.isRemoved() {
			r.setErr(lookupError, err)
			r.c.log.Error(err, "Cannot cache type", "gvk", r.key.gvk.String())
		}
		return err
	}
	go r.awaitSync(ctx, v, gen, start)
	return nil
}

// awaitSync marks the type synced once v's informers have synced, if v is
// still the view of generation gen. The first sync closes syncedCh.
func (r *registration) awaitSync(ctx context.Context, v *view, gen uint64, start time.Time) {
	// WaitFor wakes as the informers sync; WaitForCacheSync would poll,
	// adding up to 100ms to every type's time to sync.
	if !toolscache.WaitFor(ctx, "", v.syncedCheckers()...) {
		return
	}
	r.mu.Lock()
	current := r.gen == gen && !r.removed
	if current {
		r.synced.Store(true)
	}
	r.mu.Unlock()
	if !current {
		return
	}
	r.firstSync.Do(func() {
		close(r.syncedCh)
		r.c.metrics.synced(r, time.Since(start))
	})
	r.c.log.V(1).Info("Cache synced", "gvk", r.key.gvk.String(), "form", r.key.form.String(), "seconds", time.Since(start).Seconds())
}

// waitForMapping returns the type's REST mapping, looking again every
// CRDPollInterval while the API server does not serve the type or cannot
// be reached. Each change of why the lookup fails is logged once.
func (r *registration) waitForMapping(ctx context.Context) (*meta.RESTMapping, error) {
	last := noError
	for {
		m, err := r.c.opts.Mapper.RESTMapping(r.key.gvk.GroupKind(), r.key.gvk.Version)
		if err == nil {
			if last != noError {
				r.c.log.Info("Type found; caching it", "gvk", r.key.gvk.String())
			}
			r.setErr(noError, nil)
			return m, nil
		}
		kind, described := r.lookupFailure(err)
		r.setErr(kind, described)
		if kind != last {
			r.logLookupFailure(kind, err)
			last = kind
		}
		t := time.NewTimer(r.c.opts.CRDPollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// lookupFailure says why looking the type up failed: the API server does
// not serve it (its CRD is not installed), the API server cannot be reached
// (a transport error: refused, reset, timed out, TLS), or something else.
func (r *registration) lookupFailure(err error) (errorKind, error) {
	var transport *url.Error
	switch {
	case meta.IsNoMatchError(err):
		return notInstalled, fmt.Errorf("%s is not served by the API server (is its CRD installed?); the cache looks again every %v: %w: %w",
			r.key.gvk, r.c.opts.CRDPollInterval, ErrNotInstalled, err)
	case errors.As(err, &transport):
		return unreachable, fmt.Errorf("look up %s: cannot reach the API server at %s (is it running, and is this the cluster you meant?); the cache tries again every %v: %w",
			r.key.gvk, r.c.cfg.Host, r.c.opts.CRDPollInterval, err)
	default:
		return lookupError, fmt.Errorf("look up %s: %w", r.key.gvk, err)
	}
}

func (r *registration) logLookupFailure(kind errorKind, err error) {
	gvk := r.key.gvk.String()
	switch kind {
	case notInstalled:
		r.c.log.Info("Type not installed yet; waiting for it", "gvk", gvk, "error", err.Error())
	case unreachable:
		r.c.log.Error(err, "Cannot reach the API server; trying again", "gvk", gvk, "host", r.c.cfg.Host)
	default:
		r.c.log.Error(err, "Cannot look the type up; trying again", "gvk", gvk)
	}
}

// newView makes the informers, one per namespace the type is cached in, or
// one for every namespace or a cluster-scoped type, starts them and stores
// them in r.view unless the type has been removed.
func (r *registration) newView(ctx context.Context, mapping *meta.RESTMapping) (*view, uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mapping = mapping
	v, err := r.buildView(ctx, mapping, r.slots)
	if err != nil {
		return nil, 0, err
	}
	if r.removed {
		return nil, 0, ErrRemoved
	}
	for _, h := range r.handlers {
		if err := h.attachTo(v, nil); err != nil {
			return nil, 0, err
		}
	}
	r.spawn = func(v *view) context.CancelFunc {
		ctx, cancel := context.WithCancel(ctx)
		for _, i := range v.informers {
			if !i.idle {
				go i.informer.RunWithContext(ctx)
			}
		}
		return cancel
	}
	v.stop = r.spawn(v)
	r.started = true
	r.gen++
	r.view.Store(v)
	return v, r.gen, nil
}

// buildView makes the informers of a view, not started. slots matter only
// for a sharded type. The caller holds r.mu, or is setSlots.
func (r *registration) buildView(ctx context.Context, mapping *meta.RESTMapping, slots []int) (*view, error) {
	v := &view{
		resource:   mapping.Resource,
		namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace,
		indexes:    map[string]bool{},
		stop:       func() {},
		retired:    new(atomic.Bool),
		replacing:  new(atomic.Pointer[view]),
	}
	for name := range r.indexers {
		if name != toolscache.NamespaceIndex {
			v.indexes[name] = true
		}
	}
	namespaces := []string{""}
	if v.namespaced && len(r.namespaces) > 0 {
		namespaces = r.namespaces
		v.byNamespace = map[string]*nsInformer{}
	}
	lwf, err := r.c.listWatchFactory(r.key, mapping)
	if err != nil {
		return nil, err
	}
	var shard *shardFilter
	if r.key.sharded {
		if shard, err = r.newShardFilter(ctx, mapping, slots); err != nil {
			return nil, fmt.Errorf("shard %s: %w", r.key.gvk, err)
		}
		v.held = slices.Clone(slots)
	}
	for _, ns := range namespaces {
		i, err := r.newInformer(lwf, ns, v.namespaced, shard, v.retired)
		if err != nil {
			return nil, err
		}
		i.idle = r.key.sharded && shard == nil
		v.informers = append(v.informers, i)
		if v.byNamespace != nil {
			v.byNamespace[ns] = i
		}
	}
	return v, nil
}

// newInformer makes the informer of namespace ns, not started.
func (r *registration) newInformer(lwf func(string) *toolscache.ListWatch, ns string, namespaced bool, shard *shardFilter, retired *atomic.Bool) (*nsInformer, error) {
	transform := ingestTransform(r.opts, r.opts.Transform, newCompactor(), r.kindStamp())
	var sz *sizes
	if r.c.metrics != nil {
		sz = newSizes()
		transform = sz.wrap(transform)
	}
	var d *detector
	if r.c.opts.Mutations.Detect {
		d = newDetector(r.key.gvk, r.c.mutationFound)
		transform = d.wrap(transform)
	}
	lw := lwf(ns)
	if shard != nil {
		lw = shard.wrap(lw)
	}
	lw = r.retirable(r.instrument(lw, ns), retired)
	snaps := newSnapshots()
	// A packed store's List makes new objects: remembered, they would
	// hold again what packing saves, until the store's next change.
	snaps.off = r.key.form == metadataOnly
	indexers := maps.Clone(r.indexers)
	indexers[versionIndex] = snaps.indexFunc
	if ns != "" || !namespaced {
		// Every object of this informer is in one namespace, or in
		// none: an index by namespace would only cost memory.
		delete(indexers, toolscache.NamespaceIndex)
	} else {
		addNamespacedIndexes(indexers, r.indexers)
	}
	inf := informer.New(lw, r.newObject(), informer.Options{
		SharedIndexInformerOptions: toolscache.SharedIndexInformerOptions{
			ResyncPeriod:      r.c.opts.ResyncPeriod,
			Indexers:          indexers,
			ObjectDescription: r.key.gvk.String(),
		},
		Lag:             r.c.metrics.informerLag(r),
		CompactMetadata: r.key.form == metadataOnly,
	})
	if err := inf.SetTransform(transform); err != nil {
		return nil, fmt.Errorf("set transform for %s: %w", r.key.gvk, err)
	}
	snaps.store = inf.GetIndexer()
	return &nsInformer{namespace: ns, informer: inf, indexer: inf.GetIndexer(), snapshots: snaps, detector: d, sizes: sz}, nil
}

func (r *registration) setCancel(cancel context.CancelFunc) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.removed {
		return false
	}
	r.cancel = cancel
	return true
}

func (r *registration) setErr(kind errorKind, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err, r.lastErr = kind, err
}

func (r *registration) isRemoved() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removed
}

// remove stops the informers and forgets the type, whoever holds it.
func (r *registration) remove() {
	r.c.mu.Lock()
	stop := r.c.dropLocked(r)
	r.c.mu.Unlock()
	stop()
}

func (r *registration) addIndex(name string, fn toolscache.IndexFunc) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.indexers[name]; ok {
		return fmt.Errorf("cache: add index %q to %s: an index of that name exists", name, r.key.gvk)
	}
	return r.addIndexLocked(name, fn)
}

func (r *registration) status() TypeStatus {
	r.c.mu.Lock() // guards r.holds, and is taken before r.mu
	owners := maps.Clone(r.holds)
	r.c.mu.Unlock()
	var held []int
	if v := r.view.Load(); v != nil {
		held = slices.Clone(v.held)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return TypeStatus{
		Slots:      held,
		GVK:        r.key.gvk,
		Form:       r.key.form.String(),
		Namespaces: slices.Clone(r.namespaces),
		Selector:   r.key.selector,
		Owners:     owners,
		Installed:  r.view.Load() != nil,
		Synced:     r.synced.Load(),
		Err:        r.lastErr,
		Unwatched:  r.earliestUnwatched(),
		Deleted:    r.deleted,
		AfterStart: r.afterStart,
	}
}

// earliestUnwatched returns when the informer unwatched longest lost its
// watch, or zero. The caller holds r.mu.
func (r *registration) earliestUnwatched() time.Time {
	var t time.Time
	for _, since := range r.unwatched {
		if t.IsZero() || since.Before(t) {
			t = since
		}
	}
	return t
}

// watching records that informer opened a watch or stopped (ok), or that
// its watch ended otherwise.
func (r *registration) watching(informer string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok {
		delete(r.unwatched, informer)
		return
	}
	if r.unwatched == nil {
		r.unwatched = map[string]time.Time{}
	}
	r.unwatched[informer] = time.Now()
}

// readable returns the view, or why the type cannot be read.
func (r *registration) readable() (*view, error) {
	if v := r.view.Load(); v != nil {
		return v, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.removed:
		return nil, fmt.Errorf("cache: read %s: %w", r.key.gvk, ErrRemoved)
	case r.err == notInstalled, r.err == unreachable, r.err == crdDeleted:
		return nil, fmt.Errorf("cache: read %s: %w", r.key.gvk, r.lastErr)
	default:
		return nil, fmt.Errorf("cache: read %s: not started: call Start and WaitForSync before reading: %w", r.key.gvk, ErrNotSynced)
	}
}

// view is a registration's informers, fixed once made.
type view struct {
	resource    schema.GroupVersionResource
	namespaced  bool
	informers   []*nsInformer
	byNamespace map[string]*nsInformer // nil when one informer covers every namespace
	indexes     map[string]bool        // the names added with AddIndex
	// stop stops the informers; a no-op until they start.
	stop context.CancelFunc
	// held is the slots a sharded type's view holds, sorted.
	held []int
	// retired is set once the type's CRD is deleted: the informers then
	// ask the API server nothing more (see retirable).
	retired *atomic.Bool
	// replacing holds the view this one replaces while SetSlots swaps
	// them, which the handlers read to skip the adds it handed on; nil
	// once the swap is over, so that this view does not keep the old one.
	// Copies of a view (with an index added) share it. buildView makes
	// it, so that SetSlots reads it without reg.mu; attachTo makes it for
	// a view made otherwise.
	replacing *atomic.Pointer[view]
}

type nsInformer struct {
	namespace string // "" for every namespace
	informer  toolscache.SharedIndexInformer
	indexer   toolscache.Indexer
	snapshots *snapshots // of namespace Lists
	detector  *detector  // nil unless MutationOptions.Detect
	sizes     *sizes     // nil without metrics
	// idle: a sharded type holding no slot; the informer never runs, and
	// its store stays empty.
	idle bool
}

// indexerFor returns the indexer that holds objects of namespace.
func (v *view) indexerFor(gvk schema.GroupVersionKind, namespace string) (toolscache.Indexer, error) {
	if v.namespaced && namespace == "" {
		return nil, fmt.Errorf("cache: %s is namespaced: read it with a namespace", gvk)
	}
	if !v.namespaced && namespace != "" {
		return nil, fmt.Errorf("cache: %s is cluster-scoped, so none is in namespace %q: list it with an empty namespace, which lists them all", gvk, namespace)
	}
	if v.byNamespace == nil {
		return v.informers[0].indexer, nil
	}
	if i := v.byNamespace[namespace]; i != nil {
		return i.indexer, nil
	}
	cached := make([]string, 0, len(v.byNamespace))
	for ns := range v.byNamespace {
		cached = append(cached, ns)
	}
	slices.Sort(cached)
	return nil, fmt.Errorf("cache: namespace %q of %s is not cached (cached: %s): add it to the type's TypeOptions.Namespaces",
		namespace, gvk, strings.Join(cached, ", "))
}
