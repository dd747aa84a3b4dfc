package cachetest

import (
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	"github.com/opkit-dev/opkit/pkg/cache"
)

// Options configure New. The zero value is valid.
type Options struct {
	// Scheme maps the Go type to its kind, which errors name. Defaults to
	// client-go's kubernetes scheme, which holds every built-in type; add
	// your custom resources' types to a scheme of your own.
	Scheme *runtime.Scheme

	// Mapper says the kind's resource and whether it is namespaced.
	// Defaults to apimachinery's testrestmapper over Scheme, which knows
	// the built-in cluster-scoped kinds (Namespace, Node, ClusterRole, …)
	// and takes every other kind, custom resources included, to be
	// namespaced. For a cluster-scoped custom resource, pass a
	// meta.NewDefaultRESTMapper with the kind added at meta.RESTScopeRoot.
	Mapper meta.RESTMapper

	// ReadError, when set, makes the Lister's reads fail, for tests of a
	// reconciler's error paths (controller-runtime's interceptor.Funcs for
	// reads). It is asked before each read with verb "get" (Get, with
	// namespace and name) or "list" (List, ByIndex, ByIndexInNamespace
	// and ControlledBy, with the namespace read, empty for all, and no
	// name); a non-nil error is what the read returns, as is, and nil
	// reads the store. Defaults to nil: no read fails but as a cache's
	// would. It is called from the reader's goroutine and must be safe
	// for concurrent use if the Lister is read concurrently.
	ReadError func(verb, namespace, name string) error
}

// Store is an in-memory store of one kind behind a real *cache.Lister[T],
// with no informer and no API server. Objects enter it as they enter a
// cache: copied (the store owns what it holds), stripped of managedFields
// and the last-applied annotation, and watched for modification
// (CheckMutations). Its methods are safe for concurrent use.
type Store[T cache.Object] struct {
	s cacheaccess.Store
	l *cache.Lister[T]
}

// Lister returns the store's Lister. Every call returns the same one.
func (s *Store[T]) Lister() *cache.Lister[T] { return s.l }

// Add adds obj, or returns an AlreadyExists error if the store holds an
// object of its namespace and name. The store keeps a copy: obj remains
// the caller's. A copy without a resourceVersion is given the store's next
// one ("1", "2", …), as the API server would.
func (s *Store[T]) Add(obj T) error { return s.s.Add(obj) }

// Update replaces the stored object of obj's namespace and name with a copy
// of obj, or returns a NotFound error if there is none. A copy without a
// resourceVersion is given the store's next one.
func (s *Store[T]) Update(obj T) error { return s.s.Update(obj) }

// Delete removes the object namespace/name, or returns a NotFound error if
// there is none.
func (s *Store[T]) Delete(namespace, name string) error { return s.s.Delete(namespace, name) }

// CheckMutations reports every stored object modified in place since it
// was added (or last reported), as cache.Cache.CheckMutations does.
func (s *Store[T]) CheckMutations() error { return s.s.CheckMutations() }

// New returns an in-memory store of the Go type T (a typed pointer such as
// *corev1.ConfigMap) holding copies of objs, and whose Lister reads it.
func New[T cache.Object](opts Options, objs ...T) (*Store[T], error) {
	if opts.Scheme == nil {
		opts.Scheme = scheme.Scheme
	}
	if opts.Mapper == nil {
		opts.Mapper = testrestmapper.TestOnlyStaticRESTMapper(opts.Scheme)
	}
	st, err := cache.NewStore(cacheaccess.Key{}, reflect.TypeFor[T](), cacheaccess.StoreOptions{Scheme: opts.Scheme, Mapper: opts.Mapper, ReadError: opts.ReadError})
	if err != nil {
		return nil, fmt.Errorf("cachetest: %w", err)
	}
	// The store's cache holds T registered with zero TypeOptions, so
	// Register returns a Lister of that registration.
	l, err := cache.Register[T](st.Cache().(*cache.Cache), cache.TypeOptions{})
	if err != nil {
		return nil, fmt.Errorf("cachetest: %w", err)
	}
	s := &Store[T]{s: st, l: l}
	for _, o := range objs {
		if err := s.Add(o); err != nil {
			return nil, fmt.Errorf("cachetest: add %s/%s: %w", o.GetNamespace(), o.GetName(), err)
		}
	}
	return s, nil
}

// NewLister returns a Lister of the Go type T over copies of objs, with
// Options' defaults. It fails t at once if objs cannot be stored (two with
// one namespace and name, a namespace on a cluster-scoped kind), and at
// the end of the test if a stored object was modified in place.
func NewLister[T cache.Object](t testing.TB, objs ...T) *cache.Lister[T] {
	t.Helper()
	s, err := New(Options{}, objs...)
	if err != nil {
		t.Fatal(err)
	}
	CheckMutationsAtCleanup(t, s)
	return s.Lister()
}

// CheckMutationsAtCleanup fails t at the end of the test if an object in s
// was modified in place: a reader broke the Lister's zero-copy contract.
func CheckMutationsAtCleanup[T cache.Object](t testing.TB, s *Store[T]) {
	t.Cleanup(func() {
		if err := s.CheckMutations(); err != nil {
			t.Errorf("cachetest: a cached object was modified in place (DeepCopy before changing what a Lister returns): %v", err)
		}
	})
}
