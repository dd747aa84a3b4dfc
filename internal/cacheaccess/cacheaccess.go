// Package cacheaccess is how opkit's own packages (the manager, the cached
// client, testenv) reach what package cache keeps from its users, so that
// pkg/cache exports what a user calls and no more:
//
//   - cache.Internal(c, Key{}) returns a Cache, the cache's side for
//     opkit's packages.
//   - The environment variables the cache reads, for testenv to set.
//   - Store, the in-memory store behind a real Lister that package
//     cachetest wraps (cache.NewStore).
//
// It imports nothing from pkg/, so that internal/ stays the floor, and
// holds no state: the two entry points are package cache's, and their
// argument Key, which only opkit can name, keeps them opkit's.
package cacheaccess

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Key is the second argument of cache.Internal and cache.NewStore. No
// package outside opkit can name it, so only opkit's packages call them.
type Key struct{}

// The environment variables the cache reads (see package cache, "Finding
// who modified a cached object", and its UnregisteredReadOptions).
const (
	// MutationDetectorEnv set to "true" turns on
	// cache.MutationOptions.Detect.
	MutationDetectorEnv = "OPKIT_CACHE_MUTATION_DETECTOR"
	// MutationTraceEnv set to "1" or "true" turns on
	// cache.MutationOptions.TraceReads.
	MutationTraceEnv = "OPKIT_CACHE_MUTATION_TRACE"
	// UnregisteredReadsEnv set to "true" turns on
	// cache.UnregisteredReadOptions.Fail.
	UnregisteredReadsEnv = "OPKIT_CACHE_FAIL_UNREGISTERED_READS"
)

// Form is how a registered kind's objects are cached: Typed
// (cache.Register), Metadata (cache.Metadata) or Unstructured
// (cache.Unstructured). Its String is what cache.TypeStatus.Form says.
type Form uint8

// The forms a kind can be cached in.
const (
	Typed        Form = iota // the scheme's Go type, protobuf for built-in types
	Metadata                 // *metav1.PartialObjectMetadata
	Unstructured             // *unstructured.Unstructured
)

func (f Form) String() string {
	return [...]string{"typed", "metadata", "unstructured"}[f]
}

// Cache is what opkit's own packages ask of a cache beyond its exported
// API. Its methods are safe for concurrent use.
type Cache interface {
	// ShedMemory, on, drops what the cache can fetch again (the objects
	// LazyListers fetched) and keeps none it fetches until it is called
	// off: the manager calls it as memory pressure begins and ends.
	ShedMemory(on bool)

	// LookupKind returns a Lister of the kind gvk cached in form f if
	// exactly one registration caches it so, for readers that learn the
	// kind at run time from the object they are given, such as the
	// cached client. It never registers anything: a kind nobody
	// registered in that form is an error that wraps
	// cache.ErrNotRegistered and says how to register it, and the read is
	// logged, counted and, in tests, reported as
	// cache.Options.UnregisteredReads says.
	LookupKind(gvk schema.GroupVersionKind, f Form) (ObjectLister, error)

	// HoldsKind reports whether LookupKind would find gvk in form f,
	// without logging, counting or reporting a kind nobody registered: for
	// callers that consult the cache on their own account, such as a
	// write that is skipped when the cache holds the object.
	HoldsKind(gvk schema.GroupVersionKind, f Form) bool

	// Scheme returns the scheme the cache decodes typed objects with.
	Scheme() *runtime.Scheme

	// Written returns the write of obj, of kind gvk, for the cache's
	// informers to catch up with: obj as the API server returned it from
	// a create, update or patch (its resourceVersion is the write's), or,
	// when deleted, the object deleted. Every registration of gvk, in
	// every form, that would cache obj takes part; a kind not registered,
	// or not yet started, gives a Write that has caught up: there is no
	// cached copy to be stale.
	Written(gvk schema.GroupVersionKind, obj metav1.Object, deleted bool) Write

	// Informers returns the informers of lister's type (one per cached
	// namespace, or one for all), or none while the API server does not
	// serve the type: before its CRD is installed, and from its deletion
	// until it is installed again, when fresh informers are made. lister
	// is a *cache.Lister[T]. A sharded type's informers are replaced by
	// each cache.Cache.SetSlots: add handlers with
	// cache.Lister.AddEventHandler, which follows them, not to these.
	Informers(lister any) ([]toolscache.SharedIndexInformer, error)

	// IndexControlledBy adds the controlled-by index, which
	// cache.Lister.ControlledBy reads, to lister's type ahead of the first
	// ControlledBy (manager.Owns calls it before Start, so that the
	// initial list is indexed as it is stored). lister is a
	// *cache.Lister[T]. It is idempotent.
	IndexControlledBy(lister any) error
}

// Write is a write the cache is to catch up with (Cache.Written): the
// write of one object, as seen by every informer of the cache that would
// hold the object. Its methods are safe for concurrent use.
type Write interface {
	// CaughtUp reports, without blocking, whether every informer that
	// would hold the object has seen the write: its store has reached the
	// write's resourceVersion, or holds the object at that version or a
	// newer one; for a delete, no longer holds the object.
	CaughtUp() bool
	// Wait blocks until CaughtUp or ctx ends, and returns ctx's error in
	// that case.
	Wait(ctx context.Context) error
}

// ObjectLister reads one registered kind without naming its Go type. It
// hands out the cached objects, like cache.Lister, and the same rules
// hold: callers must not modify them. Its methods are safe for concurrent
// use.
type ObjectLister interface {
	// GroupVersionKind returns the kind the ObjectLister reads.
	GroupVersionKind() schema.GroupVersionKind
	// Get is cache.Lister.Get.
	Get(namespace, name string) (client.Object, error)
	// List is cache.Lister.List, sorted the same way.
	List(namespace string, selector labels.Selector) ([]client.Object, error)
	// ByIndex is cache.Lister.ByIndex.
	ByIndex(index, value string) ([]client.Object, error)
	// ByIndexInNamespace is cache.Lister.ByIndexInNamespace.
	ByIndexInNamespace(namespace, index, value string) ([]client.Object, error)
	// Started reports whether the cache has started.
	Started() bool
	// Synced reports whether the kind has first synced.
	Synced() bool
	// WaitForSync blocks until the kind has first synced, as
	// controller-runtime's cached reads do: before, a read sees only what
	// has been listed so far, and an object not yet listed reads as not
	// found. It returns at once an error that wraps cache.ErrNotInstalled
	// (or ErrRemoved) for a kind that cannot sync, and one that wraps
	// cache.ErrNotSynced and the cause when ctx ends first.
	WaitForSync(ctx context.Context) error
}

// Store is the cache's in-memory store of one kind behind a real Lister,
// with no informer and no API server, which package cachetest wraps for
// unit tests. The Lister behaves as one of a synced cache of every
// namespace: the same sorting, errors, indexes and zero-copy reads, with
// two differences. Indexes may be added at any time, since there is no
// Start to add them before; and event handlers added to it are never
// called, since nothing is watched.
//
// Objects enter it as they enter a cache: copied (the store owns what it
// holds), stripped of managedFields and the last-applied annotation, and
// watched for modification (CheckMutations). Its methods are safe for
// concurrent use.
type Store interface {
	// Cache returns the *cache.Cache that holds the store's one kind:
	// cache.Register of the store's Go type with zero TypeOptions on it
	// returns the store's Lister.
	Cache() any
	// Add adds obj, or returns an AlreadyExists error if the store holds
	// an object of its namespace and name. The store keeps a copy: obj
	// remains the caller's. A copy without a resourceVersion is given the
	// store's next one ("1", "2", …), as the API server would.
	Add(obj client.Object) error
	// Update replaces the stored object of obj's namespace and name with
	// a copy of obj, or returns a NotFound error if there is none. A copy
	// without a resourceVersion is given the store's next one.
	Update(obj client.Object) error
	// Delete removes the object namespace/name, or returns a NotFound
	// error if there is none.
	Delete(namespace, name string) error
	// CheckMutations reports every stored object modified in place since
	// it was added (or last reported), as cache.Cache.CheckMutations does.
	CheckMutations() error
}

// StoreOptions configure NewStore.
type StoreOptions struct {
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
