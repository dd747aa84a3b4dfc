package cache

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unsafe"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/opkit-dev/opkit/pkg/sharding"
)

// Object is what the cache holds: a Kubernetes object with metadata, such
// as *corev1.Pod.
type Object interface {
	runtime.Object
	metav1.Object
}

// Lister reads one registered type from the cache.
//
// Every object it returns is the cached object itself, not a copy, shared
// with every other reader: callers must not modify it. To change an object,
// DeepCopy it first. Tests run with a mutation detector that fails a test
// which modifies a cached object (see the package documentation).
//
// A metadata-only Lister (Metadata, LazyLister.Metadata) is the exception
// in form, not in rule: its cache holds each object packed, in less
// memory, and every read returns a new *metav1.PartialObjectMetadata
// made from it, equal to the object cached, whose labels, annotations,
// owner references, finalizers and deletion fields are the cache's own
// and must not be modified either. Two reads of one object return two
// pointers; compare objects by namespace, name and resourceVersion.
//
// Its methods are safe for concurrent use. Reads before the type has synced
// see whatever has been listed so far; wait with Cache.WaitForSync.
type Lister[T Object] struct {
	reg *registration
	// hold is this Lister's claim on reg, released by Release; nil for a
	// Lister registered without TypeOptions.Owner, or from lookup.
	hold *hold
}

// Register registers the Go type T (a pointer type in the cache's scheme, such as
// *corev1.Pod) and returns its Lister. Registering the same type with the
// same namespaces, selectors and stripping again returns a Lister over the
// same informers.
func Register[T Object](c *Cache, opts TypeOptions) (*Lister[T], error) {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer {
		return nil, fmt.Errorf("cache: Register[%v]: the type must be a pointer, such as *corev1.Pod", t)
	}
	example := reflect.New(t.Elem()).Interface().(T)
	if _, ok := any(example).(*metav1.PartialObjectMetadata); ok {
		return nil, fmt.Errorf("cache: Register[%v]: use Metadata, which takes the GroupVersionKind", t)
	}
	if _, ok := any(example).(*unstructured.Unstructured); ok {
		return nil, fmt.Errorf("cache: Register[%v]: use Unstructured, which takes the GroupVersionKind", t)
	}
	gvk, err := apiutil.GVKForObject(example, c.opts.Scheme)
	if err != nil {
		return nil, fmt.Errorf("cache: Register[%v]: %w: add the type to Options.Scheme", t, err)
	}
	newObject := func() runtime.Object { return reflect.New(t.Elem()).Interface().(T) }
	return register[T](c, gvk, typed, opts, newObject)
}

// RegisterObject registers the Go type of example, as Register does, for
// code that has the type only at run time, such as controller-runtime's
// client.FieldIndexer (crport.FieldIndexer). It registers the same
// informers as Register of that type with the same options; its Lister's
// reads return objects of that type as client.Object. An unstructured or
// metadata-only example registers its kind in that form, as Unstructured
// and Metadata do.
func RegisterObject(c *Cache, example client.Object, opts TypeOptions) (*Lister[client.Object], error) {
	if example == nil {
		return nil, fmt.Errorf("cache: RegisterObject: the example is nil: pass a pointer to the type, such as &corev1.Pod{}")
	}
	switch o := example.(type) {
	case *unstructured.Unstructured:
		gvk := o.GroupVersionKind()
		return register[client.Object](c, gvk, unstructuredForm, opts, func() runtime.Object {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			return u
		})
	case *metav1.PartialObjectMetadata:
		gvk := o.GroupVersionKind()
		return register[client.Object](c, gvk, metadataOnly, opts, func() runtime.Object {
			m := &metav1.PartialObjectMetadata{}
			m.SetGroupVersionKind(gvk)
			return m
		})
	}
	t := reflect.TypeOf(example)
	if t.Kind() != reflect.Pointer {
		return nil, fmt.Errorf("cache: RegisterObject(%v): the type must be a pointer, such as *corev1.Pod", t)
	}
	gvk, err := apiutil.GVKForObject(example, c.opts.Scheme)
	if err != nil {
		return nil, fmt.Errorf("cache: RegisterObject(%v): %w: add the type to Options.Scheme", t, err)
	}
	newObject := func() runtime.Object { return reflect.New(t.Elem()).Interface().(runtime.Object) }
	return register[client.Object](c, gvk, typed, opts, newObject)
}

// Metadata registers the kind gvk in metadata-only form, which caches only
// each object's metadata (a fraction of the memory), packed, and returns
// its Lister, whose reads make the objects they return (see Lister).
func Metadata(c *Cache, gvk schema.GroupVersionKind, opts TypeOptions) (*Lister[*metav1.PartialObjectMetadata], error) {
	newObject := func() runtime.Object {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		return m
	}
	return register[*metav1.PartialObjectMetadata](c, gvk, metadataOnly, opts, newObject)
}

// Unstructured registers the kind gvk in unstructured form, for types with
// no Go type, and returns its Lister.
func Unstructured(c *Cache, gvk schema.GroupVersionKind, opts TypeOptions) (*Lister[*unstructured.Unstructured], error) {
	newObject := func() runtime.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u
	}
	return register[*unstructured.Unstructured](c, gvk, unstructuredForm, opts, newObject)
}

func register[T Object](c *Cache, gvk schema.GroupVersionKind, f form, opts TypeOptions, newObject func() runtime.Object) (*Lister[T], error) {
	if gvk.Kind == "" || gvk.Version == "" {
		return nil, fmt.Errorf("cache: register %q: the GroupVersionKind needs a version and a kind", gvk)
	}
	if err := validateNamespaces("TypeOptions.Namespaces", opts.Namespaces); err != nil {
		return nil, fmt.Errorf("cache: register %s: %w", gvk, err)
	}
	own := opts.Transform != nil
	if !own {
		opts.Transform = c.opts.Transform
	}
	if len(opts.Namespaces) == 0 {
		opts.Namespaces = c.opts.Namespaces
	}
	opts.Namespaces = slices.Sorted(slices.Values(opts.Namespaces))
	key := regKey{
		gvk:        gvk,
		form:       f,
		namespaces: strings.Join(opts.Namespaces, ","),
		selector:   selectorString(opts),
		keepMF:     opts.KeepManagedFields,
		keepLA:     opts.KeepLastApplied,
		sharded:    opts.Sharded,
		shardKey:   opts.ShardKey,
	}
	if !opts.Sharded && opts.ShardKey != sharding.ByUID {
		return nil, fmt.Errorf("cache: register %s: TypeOptions.ShardKey is %v but Sharded is false: set Sharded too", gvk, opts.ShardKey)
	}
	r, h, err := c.register(key, opts, func() *registration {
		r := newRegistration(c, key, opts, newObject)
		r.ownTransform = own
		return r
	})
	if err != nil {
		return nil, err
	}
	return &Lister[T]{reg: r, hold: h}, nil
}

func selectorString(opts TypeOptions) string {
	var parts []string
	if s := opts.LabelSelector; s != nil && !s.Empty() {
		parts = append(parts, "labels "+s.String())
	}
	if s := opts.FieldSelector; s != nil && !s.Empty() {
		parts = append(parts, "fields "+s.String())
	}
	return strings.Join(parts, "; ")
}

// lookup returns a Lister for the Go type T if exactly one registration
// caches it in typed form. It never registers anything: a type nobody
// registered is an error that wraps ErrNotRegistered. The tests read
// through it; users read through the Lister that Register returned.
func lookup[T Object](c *Cache) (*Lister[T], error) {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer {
		return nil, fmt.Errorf("cache: lookup[%v]: the type must be a pointer, such as *corev1.Pod", t)
	}
	gvk, err := apiutil.GVKForObject(reflect.New(t.Elem()).Interface().(T), c.opts.Scheme)
	if err != nil {
		return nil, fmt.Errorf("cache: lookup[%v]: %w", t, err)
	}
	regs := c.registered(func(k regKey) bool { return k.gvk == gvk && k.form == typed })
	switch len(regs) {
	case 0:
		return nil, fmt.Errorf("cache: read %v (%s): %w: register it with cache.Register[%v] before Start", t, gvk, ErrNotRegistered, t)
	case 1:
		return &Lister[T]{reg: regs[0]}, nil
	default:
		return nil, fmt.Errorf("cache: lookup[%v]: %d registrations cache %s with different namespaces or selectors: use the Lister that Register returned", t, len(regs), gvk)
	}
}

// GroupVersionKind returns the kind the Lister reads.
func (l *Lister[T]) GroupVersionKind() schema.GroupVersionKind { return l.reg.key.gvk }

// HasSynced reports whether every informer of the type has synced.
func (l *Lister[T]) HasSynced() bool { return l.reg.synced.Load() }

// informers returns the type's informers (cacheaccess.Cache.Informers).
func (l *Lister[T]) informers() []toolscache.SharedIndexInformer {
	v := l.reg.view.Load()
	if v == nil {
		return nil
	}
	out := make([]toolscache.SharedIndexInformer, len(v.informers))
	for i, inf := range v.informers {
		out[i] = inf.informer
	}
	return out
}

// Get returns the cached object namespace/name, or an error for which
// apierrors.IsNotFound is true if the cache does not hold it. It does not
// copy and does not allocate, except in a metadata-only Lister, where it
// makes the object it returns (see Lister).
//
// For a cluster-scoped type the namespace is ignored: Get(pod.Namespace,
// pod.Spec.NodeName) returns the Node, as controller-runtime's cached
// and uncached clients return it. Why forgive it rather than fail: a
// cluster-scoped object is named by its name alone, so the read is
// unambiguous and cannot return a wrong object, while an error would
// surface only at run time, on a path that code ported from
// controller-runtime reaches and its tests rarely do. (List does fail, see
// there.)
func (l *Lister[T]) Get(namespace, name string) (T, error) {
	var zero T
	if err := l.reg.injected("get", namespace, name); err != nil {
		return zero, err
	}
	v := l.reg.view.Load()
	var ix toolscache.Indexer
	if v != nil && len(v.informers) == 1 && v.namespaced == (namespace != "") &&
		(v.byNamespace == nil || v.informers[0].namespace == namespace) {
		ix = v.informers[0].indexer // the common cases, kept short
	} else {
		var err error
		if v, err = l.reg.readable(); err != nil {
			return zero, err
		}
		if !v.namespaced {
			namespace = ""
		}
		if ix, err = v.indexerFor(l.reg.key.gvk, namespace); err != nil {
			return zero, err
		}
	}
	obj, ok, err := getByKey(ix, namespace, name)
	if err != nil {
		return zero, fmt.Errorf("cache: get %s %s/%s: %w", l.reg.key.gvk.Kind, namespace, name, err)
	}
	if !ok {
		return zero, apierrors.NewNotFound(v.resource.GroupResource(), name)
	}
	if l.reg.c.opts.Mutations.TraceReads {
		l.reg.traceRead(v, obj.(T))
	}
	return obj.(T), nil
}

// injected returns the error StoreOptions.ReadError makes a read fail
// with, or nil.
func (r *registration) injected(verb, namespace, name string) error {
	if r.readError == nil {
		return nil
	}
	return r.readError(verb, namespace, name)
}

// keyBuffers hold the store keys Get builds, so that building one does not
// allocate.
var keyBuffers = sync.Pool{New: func() any { return new([]byte) }}

// getByKey looks up namespace/name, the key client-go's informers store
// objects under. The key is built in a pooled buffer and viewed as a string
// without a copy: the indexer only uses it for a map lookup, and the buffer
// is not reused until the lookup has returned.
func getByKey(ix toolscache.Indexer, namespace, name string) (any, bool, error) {
	if namespace == "" {
		return ix.GetByKey(name)
	}
	bp := keyBuffers.Get().(*[]byte)
	b := append(append(append((*bp)[:0], namespace...), '/'), name...)
	obj, ok, err := ix.GetByKey(unsafe.String(unsafe.SliceData(b), len(b)))
	*bp = b
	keyBuffers.Put(bp)
	return obj, ok, err
}

// List returns the cached objects in namespace (every cached namespace when
// empty) that selector matches (every one when nil), sorted by namespace,
// then name. The slice is the caller's; the objects in it are the cache's.
//
// A List of a cluster-scoped type with a namespace is an error that says
// to list with an empty namespace. Unlike Get's, its answer would be a
// guess: controller-runtime's cached client returns no object, its
// uncached client every object, and code that acts on what it lists
// (deletes it, say) would act on nothing or on everything.
//
// The objects of a namespace are remembered, sorted, until the store
// changes, so that repeated Lists of a namespace cost a copy of the slice;
// a metadata-only Lister makes and sorts its objects on every List
// instead, since remembering them would hold what packing saves.
func (l *Lister[T]) List(namespace string, selector labels.Selector) ([]T, error) {
	if err := l.reg.injected("list", namespace, ""); err != nil {
		return nil, err
	}
	v, err := l.reg.readable()
	if err != nil {
		return nil, err
	}
	found, err := l.listed(v, namespace)
	if err != nil {
		return nil, err
	}
	if selector == nil || selector.Empty() {
		found = slices.Clone(found)
	} else {
		found = match(found, selector)
	}
	l.traced(v, found)
	return found, nil
}

// traced records where objs were read, with MutationOptions.TraceReads on.
func (l *Lister[T]) traced(v *view, objs []T) {
	if !l.reg.c.opts.Mutations.TraceReads {
		return
	}
	for _, o := range objs {
		l.reg.traceRead(v, o)
	}
}

// listed returns the sorted snapshot of namespace, which the caller must
// not modify.
func (l *Lister[T]) listed(v *view, namespace string) ([]T, error) {
	if namespace == "" {
		if len(v.informers) == 1 {
			i := v.informers[0]
			return listNamespace[T](i.snapshots, i.indexer, "", true)
		}
		// One informer per namespace, in namespace order: their sorted
		// snapshots, one after the other, are sorted.
		var all []T
		for _, i := range v.informers {
			// A whole store's List cannot fail.
			got, _ := listNamespace[T](i.snapshots, i.indexer, i.namespace, true)
			all = append(all, got...)
		}
		return all, nil
	}
	ix, err := v.indexerFor(l.reg.key.gvk, namespace)
	if err != nil {
		return nil, err
	}
	i := v.informers[0]
	if v.byNamespace != nil {
		i = v.byNamespace[namespace]
	}
	found, err := listNamespace[T](i.snapshots, ix, namespace, v.byNamespace != nil)
	if err != nil {
		return nil, fmt.Errorf("cache: list %s in %s: %w", l.reg.key.gvk.Kind, namespace, err)
	}
	return found, nil
}

func match[T Object](objs []T, selector labels.Selector) []T {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if selector.Matches(labels.Set(o.GetLabels())) {
			out = append(out, o)
		}
	}
	return out
}

// ByIndex returns the cached objects whose index named index (see AddIndex)
// holds value, in every cached namespace, sorted by namespace, then name.
//
// Unlike controller-runtime's field indexes, which a List scopes to its
// namespace, ByIndex does not look at namespaces: an index whose values
// are names (an owner's, say) finds same-named objects' dependents in every
// namespace. Use ByIndexInNamespace for those, or put the namespace in the
// index's values.
func (l *Lister[T]) ByIndex(index, value string) ([]T, error) {
	if err := l.reg.injected("list", "", ""); err != nil {
		return nil, err
	}
	v, err := l.reg.readable()
	if err != nil {
		return nil, err
	}
	if !v.indexes[index] {
		return nil, l.noIndex(index)
	}
	var items []any
	for _, i := range v.informers {
		got, err := i.indexer.ByIndex(index, value)
		if err != nil {
			return nil, fmt.Errorf("cache: %s by index %q: %w", l.reg.key.gvk.Kind, index, err)
		}
		items = append(items, got...)
	}
	found := filter[T](items, nil)
	sortObjects(found)
	l.traced(v, found)
	return found, nil
}

// ByIndexInNamespace returns the cached objects of namespace whose index
// named index holds value, sorted by name: controller-runtime's scoping of
// an index lookup to a List's namespace. It looks the pair up directly and
// never filters the objects of other namespaces. The type must be
// namespaced and namespace not empty; ByIndex searches every namespace.
func (l *Lister[T]) ByIndexInNamespace(namespace, index, value string) ([]T, error) {
	if err := l.reg.injected("list", namespace, ""); err != nil {
		return nil, err
	}
	v, err := l.reg.readable()
	if err != nil {
		return nil, err
	}
	if !v.indexes[index] {
		return nil, l.noIndex(index)
	}
	if namespace == "" || !v.namespaced {
		return nil, fmt.Errorf("cache: %s by index %q in namespace %q: a namespaced type and a namespace are needed: use ByIndex", l.reg.key.gvk.Kind, index, namespace)
	}
	var items []any
	if v.byNamespace != nil {
		if _, err := v.indexerFor(l.reg.key.gvk, namespace); err != nil {
			return nil, err
		}
		items, err = v.byNamespace[namespace].indexer.ByIndex(index, value)
	} else {
		items, err = v.informers[0].indexer.ByIndex(namespacedIndex(index), namespacedValue(namespace, value))
	}
	if err != nil {
		return nil, fmt.Errorf("cache: %s by index %q in %s: %w", l.reg.key.gvk.Kind, index, namespace, err)
	}
	found := filter[T](items, nil)
	sortObjects(found)
	l.traced(v, found)
	return found, nil
}

func (l *Lister[T]) noIndex(index string) error {
	return fmt.Errorf("cache: %s has no index %q: add it with AddIndex", l.reg.key.gvk, index)
}

func filter[T Object](items []any, selector labels.Selector) []T {
	everything := selector == nil || selector.Empty()
	out := make([]T, 0, len(items))
	for _, it := range items {
		obj := it.(T)
		if everything || selector.Matches(labels.Set(obj.GetLabels())) {
			out = append(out, obj)
		}
	}
	return out
}

// AddIndex registers an index named name: fn returns the values an object is
// found under with ByIndex. Added once the type's informers run (a type
// registered after Start, by a controller added at run time, say), the
// index covers what they hold already; AddIndex returns an error only
// while Cache.SetSlots replaces a sharded type's informers.
func (l *Lister[T]) AddIndex(name string, fn func(T) []string) error {
	if name == "" || name == toolscache.NamespaceIndex || strings.HasPrefix(name, "opkit.dev/") {
		return fmt.Errorf("cache: add index %q: choose another name: empty, %q and opkit.dev/ are the cache's", name, toolscache.NamespaceIndex)
	}
	return l.reg.addIndex(name, func(obj any) ([]string, error) {
		o, ok := obj.(T)
		if !ok {
			return nil, fmt.Errorf("index %q: got %T, want %T", name, obj, o)
		}
		return fn(o), nil
	})
}

// remove stops the type's informers and drops what they cached, whoever
// holds them. Reads through any Lister of the registration then fail with
// ErrRemoved. The tests remove a type this way; users let go of one with
// Release.
func (l *Lister[T]) remove() { l.reg.remove() }

// Release drops the hold of this Lister, registered with
// TypeOptions.Owner: when no Lister holds the type any longer and none
// registered it without an owner, its informers stop and what they cached
// is dropped. Reads through a released Lister fail with
// ErrRemoved once the type has stopped, and read the other holders' cache
// until then: drop the Lister after releasing it. Release is idempotent,
// and does nothing for a Lister registered without an owner. It does not
// wait for the informers to return.
func (l *Lister[T]) Release() { l.reg.release(l.hold) }
