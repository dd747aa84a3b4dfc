package cache

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// LazyLister reads a kind whose every object is cached as metadata only,
// and whose full objects are fetched from the API server when first read:
// for kinds a controller must watch (any object could become relevant)
// but reads in full rarely.
//
// Get returns the full object, fetched once and then held, shared with
// every reader (zero-copy, as with Lister: callers must not modify it),
// until the metadata informer sees the object change or go; then it is
// dropped, not refreshed, so that an object read once is not fetched again
// on every change for nobody. The metadata store decides existence: an
// object it does not hold is NotFound without a request.
//
// Events, List, indexes and read-your-writes come from the metadata
// Lister (Metadata). Its methods are safe for concurrent use.
type LazyLister[T Object] struct {
	meta      *Lister[*metav1.PartialObjectMetadata]
	opts      TypeOptions
	newObject func() T
	client    rest.Interface
	detector  *detector // nil unless MutationOptions.Detect
	// handler keeps held up to date; Release removes it.
	handler *HandlerRegistration

	mu sync.Mutex
	// held are the fetched objects. An entry is valid while the metadata
	// store holds its object at rv (the fetch's) or metaRV (what the
	// metadata store held when the fetch began: the fetch is at least as
	// new).
	held map[lazyKey]heldObject[T]
	// inflight are the fetches under way, one per key; a change or delete
	// seen meanwhile removes the entry, so that its result is returned to
	// its callers but not held.
	inflight map[lazyKey]*lazyFetch[T]
}

type lazyKey struct{ namespace, name string }

type heldObject[T Object] struct {
	obj        T
	rv, metaRV string
}

// lazyFetch is one GET, shared by the Gets that wait for it.
type lazyFetch[T Object] struct {
	done   chan struct{} // closed when obj and err are set
	metaRV string
	joined int // the Gets that wait for it besides its own; guarded by mu
	obj    T
	err    error
}

// Lazy registers the Go type T (such as *corev1.Secret) in metadata-only
// form, with opts (stripping, selectors, namespaces and Transform apply to
// the metadata objects), and returns a LazyLister that fetches full
// objects on demand. Fetched objects are stripped as opts say. Call it
// once per type and scope and share the LazyLister: each holds its own
// fetched objects.
//
// It costs one GET per object read after each change of the object, and
// needs the RBAC verb get on the kind's resource besides list and watch.
func Lazy[T Object](c *Cache, opts TypeOptions) (*LazyLister[T], error) {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer {
		return nil, fmt.Errorf("cache: Lazy[%v]: the type must be a pointer, such as *corev1.Secret", t)
	}
	newObject := func() T { return reflect.New(t.Elem()).Interface().(T) }
	switch any(newObject()).(type) {
	case *metav1.PartialObjectMetadata, *unstructured.Unstructured:
		return nil, fmt.Errorf("cache: Lazy[%v]: use a Go type of the scheme, such as *corev1.Secret", t)
	}
	gvk, err := apiutil.GVKForObject(newObject(), c.opts.Scheme)
	if err != nil {
		return nil, fmt.Errorf("cache: Lazy[%v]: %w: add the type to Options.Scheme", t, err)
	}
	client, err := apiutil.RESTClientForGVK(gvk, false, false, c.cfg, c.codecs, c.opts.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("cache: Lazy[%v]: make REST client for %s: %w", t, gvk, err)
	}
	m, err := Metadata(c, gvk, opts)
	if err != nil {
		return nil, err
	}
	l := &LazyLister[T]{
		meta: m, opts: opts, newObject: newObject, client: client,
		held: map[lazyKey]heldObject[T]{}, inflight: map[lazyKey]*lazyFetch[T]{},
	}
	h, err := m.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { l.changed(obj, false) },
		DeleteFunc: func(obj any) { l.changed(obj, true) },
	})
	if err != nil {
		m.Release()
		return nil, err
	}
	l.handler = h
	c.metrics.lazyRegistered(m.reg)
	c.mu.Lock()
	c.lazies = append(c.lazies, l)
	c.mu.Unlock()
	if c.opts.Mutations.Detect {
		l.detector = newDetector(gvk, c.mutationFound)
		c.mu.Lock()
		c.lazyDetectors = append(c.lazyDetectors, l.detector)
		c.mu.Unlock()
	}
	return l, nil
}

// Release drops the hold of the LazyLister's metadata Lister (see
// Lister.Release) and stops keeping its fetched objects up to date: drop
// the LazyLister after releasing it. It does nothing for a LazyLister
// registered without TypeOptions.Owner.
func (l *LazyLister[T]) Release() {
	if l.meta.hold == nil {
		return
	}
	// An error means the type is removed already, handlers and all.
	_ = l.handler.Remove()
	c := l.meta.reg.c
	c.mu.Lock()
	c.lazies = slices.DeleteFunc(c.lazies, func(d interface{ dropHeld() }) bool { return d == l })
	c.mu.Unlock()
	if l.detector != nil {
		c.mu.Lock()
		c.lazyDetectors = slices.DeleteFunc(c.lazyDetectors, func(d *detector) bool { return d == l.detector })
		c.mu.Unlock()
	}
	l.meta.Release()
}

// Metadata returns the Lister of the metadata objects: for event sources,
// List, indexes and read-your-writes (controller.RecordWrite).
func (l *LazyLister[T]) Metadata() *Lister[*metav1.PartialObjectMetadata] { return l.meta }

// GroupVersionKind returns the kind the LazyLister reads.
func (l *LazyLister[T]) GroupVersionKind() schema.GroupVersionKind { return l.meta.GroupVersionKind() }

// HasSynced reports whether the metadata informers have synced.
func (l *LazyLister[T]) HasSynced() bool { return l.meta.HasSynced() }

// Get returns the full object namespace/name, its apiVersion and kind
// set (for a cluster-scoped kind the namespace is ignored, as Lister.Get
// ignores it). An object the metadata store does not hold is an
// error for which apierrors.IsNotFound is true, and no request is made.
// Otherwise the held object is returned if it is as new as the metadata,
// or fetched; concurrent Gets of one object at one resourceVersion share
// one fetch. A failed fetch is not held, and its error names the kind,
// namespace and name (and, for a 403, the RBAC rule to grant).
//
// Fetches and the objects held are counted in
// opkit_cache_lazy_fetches_total and opkit_cache_lazy_objects, and the
// mutation detector watches fetched objects as it does cached ones.
func (l *LazyLister[T]) Get(ctx context.Context, namespace, name string) (T, error) {
	var zero T
	for {
		m, err := l.meta.Get(namespace, name)
		if err != nil {
			return zero, err
		}
		// "" for a cluster-scoped type, whatever namespace was asked
		// for: one object, held once.
		namespace = m.GetNamespace()
		f, own, obj, ok := l.lookup(lazyKey{namespace, name}, m.ResourceVersion)
		if ok {
			return obj, nil
		}
		if own {
			l.run(ctx, lazyKey{namespace, name}, f)
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return zero, fmt.Errorf("cache: get %s %s/%s: %w", l.meta.reg.key.gvk.Kind, namespace, name, context.Cause(ctx))
		}
		// Another Get's context ended its fetch, not ours: fetch again.
		if !own && isContextError(f.err) && ctx.Err() == nil {
			continue
		}
		return f.obj, f.err
	}
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// lookup returns the held object if it is valid at metaRV, or else the
// fetch to wait for, and whether the caller must run it.
func (l *LazyLister[T]) lookup(k lazyKey, metaRV string) (f *lazyFetch[T], own bool, obj T, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, found := l.held[k]; found && (h.rv == metaRV || h.metaRV == metaRV) {
		return nil, false, h.obj, true
	}
	if f, found := l.inflight[k]; found && f.metaRV == metaRV {
		f.joined++
		return f, false, obj, false
	}
	f = &lazyFetch[T]{done: make(chan struct{}), metaRV: metaRV}
	l.inflight[k] = f
	return f, true, obj, false
}

// run fetches k for f and holds the result unless the object changed
// meanwhile.
func (l *LazyLister[T]) run(ctx context.Context, k lazyKey, f *lazyFetch[T]) {
	f.obj, f.err = l.fetch(ctx, k)
	l.finish(k, f)
}

// finish holds f's object unless the object changed since f began, and
// hands f's result to its waiters.
func (l *LazyLister[T]) finish(k lazyKey, f *lazyFetch[T]) {
	l.mu.Lock()
	if l.inflight[k] == f {
		delete(l.inflight, k)
		if f.err == nil && !l.meta.reg.c.shedding.Load() {
			l.hold(k, heldObject[T]{obj: f.obj, rv: f.obj.GetResourceVersion(), metaRV: f.metaRV})
		}
	}
	l.mu.Unlock()
	close(f.done)
}

// fetch GETs k from the API server and strips it as the cache strips
// what it ingests.
func (l *LazyLister[T]) fetch(ctx context.Context, k lazyKey) (T, error) {
	var zero T
	r := l.meta.reg
	v, err := r.readable() // the metadata store held k, unless its CRD was deleted since
	if err != nil {
		return zero, err
	}
	r.c.metrics.lazyFetch(r)
	obj := l.newObject()
	err = l.client.Get().NamespaceIfScoped(k.namespace, v.namespaced).Resource(v.resource.Resource).Name(k.name).
		VersionedParams(&metav1.GetOptions{}, r.c.paramCodec).Do(ctx).Into(obj)
	if err != nil {
		return zero, l.fetchError(v, k, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(r.key.gvk)
	if !l.opts.KeepManagedFields {
		obj.SetManagedFields(nil)
	}
	if !l.opts.KeepLastApplied {
		dropLastApplied(obj)
	}
	return obj, nil
}

func (l *LazyLister[T]) fetchError(v *view, k lazyKey, err error) error {
	kind := l.meta.reg.key.gvk.Kind
	if apierrors.IsForbidden(err) {
		where := ""
		if k.namespace != "" {
			where = " in namespace " + k.namespace
		}
		res := v.resource.GroupResource().String()
		return fmt.Errorf("cache: get %s %s/%s: forbidden: give the operator's service account an RBAC rule allowing %q on %q%s: %w",
			kind, k.namespace, k.name, "get", res, where, err)
	}
	return fmt.Errorf("cache: get %s %s/%s: %w", kind, k.namespace, k.name, err)
}

// hold keeps h under k. The caller holds l.mu.
func (l *LazyLister[T]) hold(k lazyKey, h heldObject[T]) {
	if _, replaced := l.held[k]; !replaced {
		l.meta.reg.c.metrics.lazyHeld(l.meta.reg, 1)
	}
	l.held[k] = h
	if l.detector != nil {
		l.detector.record(objectKey(k.namespace, k.name), h.obj)
	}
}

// dropHeld drops every object held, for shedMemory.
func (l *LazyLister[T]) dropHeld() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.held {
		l.drop(k)
	}
}

// drop drops the object held under k. The caller holds l.mu.
func (l *LazyLister[T]) drop(k lazyKey) {
	delete(l.held, k)
	l.meta.reg.c.metrics.lazyHeld(l.meta.reg, -1)
	if l.detector != nil {
		l.detector.forget(objectKey(k.namespace, k.name))
	}
}

// changed drops what is held or being fetched of obj, an object the
// metadata informer saw change to its resourceVersion or go, unless that
// version is the one held (the informer caught up with a fetch) or the
// one the fetch began at.
func (l *LazyLister[T]) changed(obj any, deleted bool) {
	k, rv, ok := keyOf(obj)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, found := l.held[k]; found && (deleted || (rv != h.rv && rv != h.metaRV)) {
		l.drop(k)
	}
	if f, found := l.inflight[k]; found && (deleted || rv != f.metaRV) {
		delete(l.inflight, k)
	}
}

// keyOf returns the key and resourceVersion of an informer's object or
// tombstone.
func keyOf(obj any) (lazyKey, string, bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		ns, name, err := toolscache.SplitMetaNamespaceKey(tomb.Key)
		return lazyKey{ns, name}, "", err == nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return lazyKey{}, "", false
	}
	return lazyKey{m.GetNamespace(), m.GetName()}, m.GetResourceVersion(), true
}

// shedMemory starts (on) or ends shedding: on, every LazyLister drops
// what it holds, and holds nothing it fetches until it ends.
func (c *Cache) shedMemory(on bool) {
	c.shedding.Store(on)
	if !on {
		return
	}
	c.mu.Lock()
	lazies := slices.Clone(c.lazies)
	c.mu.Unlock()
	for _, l := range lazies {
		l.dropHeld()
	}
}
