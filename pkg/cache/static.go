package cache

import (
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// StaticOptions configure NewStatic.
type StaticOptions struct {
	// Scheme maps T to its kind, which errors name. Defaults to client-go's
	// kubernetes scheme.
	Scheme *runtime.Scheme

	// Mapper says T's resource (NotFound errors name it) and whether it is
	// namespaced. Required: package cachetest passes one that knows the
	// built-in kinds.
	Mapper meta.RESTMapper

	// ReadError, when set, makes reads fail, as controller-runtime's
	// interceptor.Funcs do for a fake client: it is called before each
	// read of the Lister, with verb "get" (Get: namespace and name) or
	// "list" (List, ByIndex, ByIndexInNamespace, and so ControlledBy:
	// namespace, empty for every namespace, and no name), and a non-nil
	// error it returns is what the read returns, unwrapped. Returning nil
	// reads the store. It is called from the reader's goroutine and must
	// be safe for concurrent use if the Lister is read concurrently.
	// Defaults to nil: reads never fail but as a cache's would.
	ReadError func(verb, namespace, name string) error
}

// Static is an in-memory store of one kind behind a real *Lister[T], with
// no informer and no API server: for unit tests of code that reads through
// a Lister. The Lister behaves as one of a synced cache of every namespace:
// the same sorting, errors, indexes and zero-copy reads, with two
// differences. Indexes may be added at any time, since there is no Start
// to add them before; and event handlers added to it are never called,
// since nothing is watched. Package cachetest wraps it for tests.
//
// Objects enter it as they enter a cache: copied (the store owns what it
// holds), stripped of managedFields and the last-applied annotation, and
// watched for modification (CheckMutations). Its methods are safe for
// concurrent use.
type Static[T Object] struct {
	lister *Lister[T]
	inf    *nsInformer
	ingest toolscache.TransformFunc

	mu sync.Mutex // serialises writes
	rv uint64     // the last resourceVersion the store assigned
}

// NewStatic returns an empty Static of the Go type T, a typed pointer such
// as *corev1.ConfigMap (metadata-only and unstructured forms are not
// supported).
func NewStatic[T Object](opts StaticOptions) (*Static[T], error) {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer {
		return nil, fmt.Errorf("cache: NewStatic[%v]: the type must be a pointer, such as *corev1.Pod", t)
	}
	example := reflect.New(t.Elem()).Interface().(T)
	switch any(example).(type) {
	case *metav1.PartialObjectMetadata, *unstructured.Unstructured:
		return nil, fmt.Errorf("cache: NewStatic[%v]: only typed objects are supported", t)
	}
	if opts.Scheme == nil {
		opts.Scheme = scheme.Scheme
	}
	if opts.Mapper == nil {
		return nil, fmt.Errorf("cache: NewStatic[%v]: StaticOptions.Mapper is required: it says the resource and scope", t)
	}
	gvk, err := apiutil.GVKForObject(example, opts.Scheme)
	if err != nil {
		return nil, fmt.Errorf("cache: NewStatic[%v]: %w: add the type to StaticOptions.Scheme", t, err)
	}
	mapping, err := opts.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("cache: NewStatic[%v]: map %s to its resource: %w", t, gvk, err)
	}
	c := &Cache{opts: Options{Scheme: opts.Scheme}}
	c.opts.Mutations.defaults()
	c.log = c.opts.Logger
	newObject := func() runtime.Object { return reflect.New(t.Elem()).Interface().(T) }
	r := newRegistration(c, regKey{gvk: gvk, form: typed}, TypeOptions{}, newObject)
	c.regs = []*registration{r}
	s := &Static[T]{lister: &Lister[T]{reg: r}}
	s.start(r, mapping)
	r.onIndex = s.addIndex
	r.readError = opts.ReadError
	return s, nil
}

// start makes the registration's one store, synced and empty.
func (s *Static[T]) start(r *registration, mapping *meta.RESTMapping) {
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	snaps := newSnapshots()
	indexers := toolscache.Indexers{versionIndex: snaps.indexFunc}
	if namespaced {
		indexers[toolscache.NamespaceIndex] = toolscache.MetaNamespaceIndexFunc
	}
	// An informer that never runs: Lister.Informers and AddEventHandler
	// work on it, and its indexer is the store.
	inf := toolscache.NewSharedIndexInformerWithOptions(&toolscache.ListWatch{}, r.newObject(),
		toolscache.SharedIndexInformerOptions{Indexers: indexers, ObjectDescription: r.key.gvk.String()})
	snaps.store = inf.GetIndexer()
	d := newDetector(r.key.gvk, nil)
	s.ingest = d.wrap(ingestTransform(TypeOptions{}, nil, newCompactor()))
	s.inf = &nsInformer{informer: inf, indexer: inf.GetIndexer(), snapshots: snaps, detector: d}
	r.started = true
	r.view.Store(&view{resource: mapping.Resource, namespaced: namespaced, informers: []*nsInformer{s.inf}, indexes: map[string]bool{}})
	r.synced.Store(true)
	close(r.syncedCh)
}

// addIndex adds an index to the store, contents included, and publishes a
// view that has it. The registration's lock is held.
func (s *Static[T]) addIndex(r *registration, name string, fn toolscache.IndexFunc) error {
	v := r.view.Load()
	if v == nil {
		return fmt.Errorf("cache: add index %q to %s: %w", name, r.key.gvk, ErrRemoved)
	}
	add := toolscache.Indexers{name: fn}
	if v.namespaced {
		addNamespacedIndexes(add, toolscache.Indexers{name: fn})
	}
	if err := s.inf.indexer.AddIndexers(add); err != nil {
		return fmt.Errorf("cache: add index %q to %s: %w", name, r.key.gvk, err)
	}
	next := *v
	next.indexes = maps.Clone(v.indexes)
	next.indexes[name] = true
	r.view.Store(&next)
	return nil
}

// Lister returns the store's Lister. Every call returns the same one.
func (s *Static[T]) Lister() *Lister[T] { return s.lister }

// Add adds obj, or returns an AlreadyExists error if the store holds an
// object of its namespace and name. The store keeps a copy: obj remains
// the caller's. A copy without a resourceVersion is given the store's next
// one ("1", "2", …), as the API server would.
func (s *Static[T]) Add(obj T) error { return s.write(obj, false) }

// Update replaces the stored object of obj's namespace and name with a copy
// of obj, or returns a NotFound error if there is none. A copy without a
// resourceVersion is given the store's next one.
func (s *Static[T]) Update(obj T) error { return s.write(obj, true) }

// Delete removes the object namespace/name, or returns a NotFound error if
// there is none.
func (s *Static[T]) Delete(namespace, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.lister.reg.readable()
	if err != nil {
		return err
	}
	old, ok, err := getByKey(s.inf.indexer, namespace, name)
	if err != nil {
		return fmt.Errorf("cache: delete %s %s: %w", s.kind(), objectKey(namespace, name), err)
	}
	if !ok {
		return apierrors.NewNotFound(v.resource.GroupResource(), name)
	}
	if err := s.inf.indexer.Delete(old); err != nil {
		return fmt.Errorf("cache: delete %s %s: %w", s.kind(), objectKey(namespace, name), err)
	}
	return nil
}

// CheckMutations reports every stored object modified in place since it
// was added (or last reported), as Cache.CheckMutations does.
func (s *Static[T]) CheckMutations() error { return s.lister.reg.c.CheckMutations() }

func (s *Static[T]) write(obj T, update bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.lister.reg.readable()
	if err != nil {
		return err
	}
	ns, name := obj.GetNamespace(), obj.GetName()
	if err := s.validKey(v, ns, name); err != nil {
		return err
	}
	_, exists, err := getByKey(s.inf.indexer, ns, name)
	if err != nil {
		return fmt.Errorf("cache: write %s %s: %w", s.kind(), objectKey(ns, name), err)
	}
	switch {
	case update && !exists:
		return apierrors.NewNotFound(v.resource.GroupResource(), name)
	case !update && exists:
		return apierrors.NewAlreadyExists(v.resource.GroupResource(), name)
	}
	o := obj.DeepCopyObject().(T)
	s.stamp(o)
	ingested, err := s.ingest(o)
	if err != nil {
		return fmt.Errorf("cache: write %s %s: %w", s.kind(), objectKey(ns, name), err)
	}
	if err := s.inf.indexer.Update(ingested); err != nil {
		return fmt.Errorf("cache: write %s %s: %w", s.kind(), objectKey(ns, name), err)
	}
	return nil
}

// stamp gives o the next resourceVersion unless it has one; a numeric one
// it has moves the store's past it, so that later stamps are newer.
func (s *Static[T]) stamp(o T) {
	if rv := o.GetResourceVersion(); rv != "" {
		if n, err := strconv.ParseUint(rv, 10, 64); err == nil && n > s.rv {
			s.rv = n
		}
		return
	}
	s.rv++
	o.SetResourceVersion(strconv.FormatUint(s.rv, 10))
}

func (s *Static[T]) validKey(v *view, namespace, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("cache: write %s: the object has no name", s.kind())
	case v.namespaced && namespace == "":
		return fmt.Errorf("cache: write %s %s: the kind is namespaced: set the object's namespace", s.kind(), name)
	case !v.namespaced && namespace != "":
		return fmt.Errorf("cache: write %s %s/%s: the kind is cluster-scoped: clear the object's namespace", s.kind(), namespace, name)
	}
	return nil
}

func (s *Static[T]) kind() string { return s.lister.reg.key.gvk.Kind }

// addIndexLocked adds the index name, which the type does not have yet:
// to the indexers its informers will start with or, for a Static, to its
// store at once. The caller holds r.mu.
func (r *registration) addIndexLocked(name string, fn toolscache.IndexFunc) error {
	switch {
	case r.onIndex != nil:
		if err := r.onIndex(r, name, fn); err != nil {
			return err
		}
	case r.started:
		return r.addLiveIndex(name, fn)
	}
	r.indexers[name] = fn
	return nil
}
