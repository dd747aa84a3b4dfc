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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
)

// static is the cacheaccess.Store that newStatic returns (see its
// contract there).
type static struct {
	reg    *registration
	inf    *nsInformer
	ingest toolscache.TransformFunc

	mu sync.Mutex // serialises writes
	rv uint64     // the last resourceVersion the store assigned
}

var _ cacheaccess.Store = (*static)(nil)

// newStatic is NewStore: an empty in-memory store of the Go
// type t for package cachetest.
func newStatic(t reflect.Type, opts cacheaccess.StoreOptions) (cacheaccess.Store, error) {
	if t.Kind() != reflect.Pointer {
		return nil, fmt.Errorf("cache: NewStore(%v): the type must be a pointer, such as *corev1.Pod", t)
	}
	example, ok := reflect.New(t.Elem()).Interface().(Object)
	if !ok {
		return nil, fmt.Errorf("cache: NewStore(%v): the type is not a Kubernetes object", t)
	}
	switch example.(type) {
	case *metav1.PartialObjectMetadata, *unstructured.Unstructured:
		return nil, fmt.Errorf("cache: NewStore(%v): only typed objects are supported", t)
	}
	if opts.Scheme == nil {
		opts.Scheme = scheme.Scheme
	}
	if opts.Mapper == nil {
		return nil, fmt.Errorf("cache: NewStore(%v): StoreOptions.Mapper is required: it says the resource and scope", t)
	}
	gvk, err := apiutil.GVKForObject(example, opts.Scheme)
	if err != nil {
		return nil, fmt.Errorf("cache: NewStore(%v): %w: add the type to the scheme", t, err)
	}
	mapping, err := opts.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("cache: NewStore(%v): map %s to its resource: %w", t, gvk, err)
	}
	c := &Cache{opts: Options{Scheme: opts.Scheme}}
	c.opts.Mutations.defaults()
	c.log = c.opts.Logger
	newObject := func() runtime.Object { return reflect.New(t.Elem()).Interface().(Object) }
	r := newRegistration(c, regKey{gvk: gvk, form: typed}, TypeOptions{}, newObject)
	c.regs = []*registration{r}
	s := &static{reg: r}
	s.start(r, mapping)
	r.onIndex = s.addIndex
	r.readError = opts.ReadError
	return s, nil
}

// start makes the registration's one store, synced and empty.
func (s *static) start(r *registration, mapping *meta.RESTMapping) {
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	snaps := newSnapshots()
	indexers := toolscache.Indexers{versionIndex: snaps.indexFunc}
	if namespaced {
		indexers[toolscache.NamespaceIndex] = toolscache.MetaNamespaceIndexFunc
	}
	// An informer that never runs: AddEventHandler
	// works on it, and its indexer is the store.
	inf := toolscache.NewSharedIndexInformerWithOptions(&toolscache.ListWatch{}, r.newObject(),
		toolscache.SharedIndexInformerOptions{Indexers: indexers, ObjectDescription: r.key.gvk.String()})
	snaps.store = inf.GetIndexer()
	d := newDetector(r.key.gvk, nil)
	s.ingest = d.wrap(ingestTransform(TypeOptions{}, nil, newCompactor(), r.kindStamp()))
	s.inf = &nsInformer{informer: inf, indexer: inf.GetIndexer(), snapshots: snaps, detector: d}
	r.started = true
	r.view.Store(&view{resource: mapping.Resource, namespaced: namespaced, informers: []*nsInformer{s.inf}, indexes: map[string]bool{}})
	r.synced.Store(true)
	close(r.syncedCh)
}

// addIndex adds an index to the store, contents included, and publishes a
// view that has it. The registration's lock is held.
func (s *static) addIndex(r *registration, name string, fn toolscache.IndexFunc) error {
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

// Cache returns the cache that holds the store's one registration.
func (s *static) Cache() any { return s.reg.c }

// Add adds obj, or returns an AlreadyExists error if the store holds an
// object of its namespace and name. The store keeps a copy: obj remains
// the caller's. A copy without a resourceVersion is given the store's next
// one ("1", "2", …), as the API server would.
func (s *static) Add(obj client.Object) error { return s.write(obj, false) }

// Update replaces the stored object of obj's namespace and name with a copy
// of obj, or returns a NotFound error if there is none. A copy without a
// resourceVersion is given the store's next one.
func (s *static) Update(obj client.Object) error { return s.write(obj, true) }

// Delete removes the object namespace/name, or returns a NotFound error if
// there is none.
func (s *static) Delete(namespace, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.reg.readable()
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
func (s *static) CheckMutations() error { return s.reg.c.CheckMutations() }

func (s *static) write(obj client.Object, update bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.reg.readable()
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
	o := obj.DeepCopyObject().(client.Object)
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
func (s *static) stamp(o client.Object) {
	if rv := o.GetResourceVersion(); rv != "" {
		if n, err := strconv.ParseUint(rv, 10, 64); err == nil && n > s.rv {
			s.rv = n
		}
		return
	}
	s.rv++
	o.SetResourceVersion(strconv.FormatUint(s.rv, 10))
}

func (s *static) validKey(v *view, namespace, name string) error {
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

func (s *static) kind() string { return s.reg.key.gvk.Kind }

// addIndexLocked adds the index name, which the type does not have yet:
// to the indexers its informers will start with or, for a static store, to its
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
