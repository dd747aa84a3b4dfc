package cachedclient

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	"github.com/opkit-dev/opkit/pkg/cache"
)

// Reader is a controller-runtime client.Reader over an opkit cache. Get and
// List deep-copy the cached objects into the caller's, so the caller owns
// what it gets and may modify it. Only registered kinds are read; see the
// package documentation for the forms, options and errors. Its methods are
// safe for concurrent use.
//
// Why a read never registers a kind, as controller-runtime's cached client
// does: registering on first read would list and watch every object of the
// kind, cluster-wide, from then on: memory nobody budgeted (a read of one
// Secret caches them all), RBAC (list and watch) the operator's manifests
// may not grant, so the read blocks until the sync times out, and a cache
// sync in the middle of a webhook call or reconcile. A manager cannot
// refuse to start instead: which kinds a reconciler or webhook reads is
// known only when it reads. What made a missing registration reach
// production was a test that passed with the error swallowed (a webhook
// that admits on any error); the report in tests closes that gap without
// changing what production reads.
type Reader struct {
	cache cacheaccess.Cache
}

var _ crclient.Reader = (*Reader)(nil)

// NewReader returns a Reader over c.
func NewReader(c *cache.Cache) *Reader { return &Reader{cache: cache.Internal(c, cacheaccess.Key{})} }

// Get copies the cached object key into obj. An object the cache does not
// hold is an error for which apierrors.IsNotFound is true. GetOptions are
// ignored: the cache has one version of each object.
func (r *Reader) Get(ctx context.Context, key crclient.ObjectKey, obj crclient.Object, _ ...crclient.GetOption) error {
	gvk, f, err := r.kindOf(obj)
	if err != nil {
		return fmt.Errorf("get %s: %w", key, err)
	}
	l, err := r.cache.LookupKind(gvk, f)
	if err != nil {
		return fmt.Errorf("get %s %s: %w", gvk.Kind, key, err)
	}
	if err := synced(ctx, l); err != nil {
		return err
	}
	cached, err := l.Get(key.Namespace, key.Name)
	if err != nil {
		return err // a NotFound is returned as it is, for apierrors.IsNotFound
	}
	return copyInto(obj, cached, gvk)
}

// List copies the cached objects that opts select into list, sorted by
// namespace, then name. A field selector must be one field=value (or
// field==value) whose field is the name of an index added with
// cache.Lister.AddIndex, as client.MatchingFields{"index": "value"} makes;
// client.Limit and a continue token are refused with an error wrapping
// errors.ErrUnsupported.
func (r *Reader) List(ctx context.Context, list crclient.ObjectList, opts ...crclient.ListOption) error {
	o := crclient.ListOptions{}
	o.ApplyOptions(opts)
	gvk, f, err := r.kindOfList(list)
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	if err := supported(o); err != nil {
		return fmt.Errorf("list %s: %w", gvk.Kind, err)
	}
	l, err := r.cache.LookupKind(gvk, f)
	if err != nil {
		return fmt.Errorf("list %s: %w", gvk.Kind, err)
	}
	if err := synced(ctx, l); err != nil {
		return err
	}
	found, err := find(l, o)
	if err != nil {
		return fmt.Errorf("list %s: %w", gvk.Kind, err)
	}
	items := make([]runtime.Object, len(found))
	for i, obj := range found {
		cp := obj.DeepCopyObject()
		cp.GetObjectKind().SetGroupVersionKind(gvk)
		items[i] = cp
	}
	if err := apimeta.SetList(list, items); err != nil {
		return fmt.Errorf("list %s: set items of %T: %w", gvk.Kind, list, err)
	}
	return nil
}

// synced waits for l's kind to sync, as controller-runtime's cached client
// does: a read before would see only what the informers have listed so far,
// and an object the informers have yet to list would read as not found (an operator that
// creates what it does not find would create it twice). Before the cache
// starts, it is controller-runtime's *crcache.ErrCacheNotStarted, which code
// written for controller-runtime retries on.
func synced(ctx context.Context, l cacheaccess.ObjectLister) error {
	if !l.Started() {
		return &crcache.ErrCacheNotStarted{}
	}
	return l.WaitForSync(ctx)
}

// errNotHeld: consult found the kind not cached.
var errNotHeld = errors.New("kind not cached")

// consult reads key into obj from r on the client's own account (a write
// comparing with the cached object), so that a kind r does not cache is
// not reported as a read of an unregistered kind: the caller never read
// it. Nor does it wait for the kind to sync, as a caller's read does: a
// write is sent whether or not the cache can compare, and a kind that
// never syncs (its list forbidden) must not hold writes back. Readers
// other than a Reader are read as they are.
func consult(ctx context.Context, r crclient.Reader, key crclient.ObjectKey, obj crclient.Object) error {
	if cr, ok := r.(*Reader); ok {
		gvk, f, err := cr.kindOf(obj)
		if err != nil || !cr.cache.HoldsKind(gvk, f) {
			return errNotHeld
		}
		if l, err := cr.cache.LookupKind(gvk, f); err != nil || !l.Synced() {
			return errNotHeld
		}
	}
	return r.Get(ctx, key, obj)
}

// supported refuses the list options the cache cannot honour: it holds
// whole lists, with no pages to continue from.
func supported(o crclient.ListOptions) error {
	if o.Limit > 0 {
		return fmt.Errorf("client.Limit(%d): the cache returns whole lists; drop the limit, or page through the API server with the manager's UncachedClient: %w", o.Limit, errors.ErrUnsupported)
	}
	if o.Continue != "" {
		return fmt.Errorf("client.Continue: the cache returns whole lists and issues no continue tokens: %w", errors.ErrUnsupported)
	}
	return nil
}

// find returns the cached objects o selects.
func find(l cacheaccess.ObjectLister, o crclient.ListOptions) ([]crclient.Object, error) {
	if o.FieldSelector == nil || o.FieldSelector.Empty() {
		return l.List(o.Namespace, o.LabelSelector)
	}
	reqs := o.FieldSelector.Requirements()
	if len(reqs) != 1 || (reqs[0].Operator != selection.Equals && reqs[0].Operator != selection.DoubleEquals) {
		return nil, fmt.Errorf("field selector %q: the cache answers one index=value, as client.MatchingFields{\"index\": \"value\"} makes, with an index added by cache.Lister.AddIndex: %w", o.FieldSelector, errors.ErrUnsupported)
	}
	var found []crclient.Object
	var err error
	if o.Namespace != "" {
		found, err = l.ByIndexInNamespace(o.Namespace, reqs[0].Field, reqs[0].Value)
	} else {
		found, err = l.ByIndex(reqs[0].Field, reqs[0].Value)
	}
	if err != nil || o.LabelSelector == nil || o.LabelSelector.Empty() {
		return found, err
	}
	matched := found[:0]
	for _, obj := range found {
		if o.LabelSelector.Matches(labels.Set(obj.GetLabels())) {
			matched = append(matched, obj)
		}
	}
	return matched, nil
}

// kindOf returns obj's kind and the form it is cached in.
func (r *Reader) kindOf(obj runtime.Object) (schema.GroupVersionKind, cacheaccess.Form, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return declared(o, cacheaccess.Unstructured)
	case *metav1.PartialObjectMetadata:
		return declared(o, cacheaccess.Metadata)
	}
	gvk, err := apiutil.GVKForObject(obj, r.cache.Scheme())
	if err != nil {
		return gvk, 0, fmt.Errorf("find the kind of %T: %w: add the type to the cache's scheme", obj, err)
	}
	return gvk, cacheaccess.Typed, nil
}

// kindOfList returns the kind of list's items and the form they are cached
// in.
func (r *Reader) kindOfList(list crclient.ObjectList) (schema.GroupVersionKind, cacheaccess.Form, error) {
	var gvk schema.GroupVersionKind
	var f cacheaccess.Form
	var err error
	switch l := list.(type) {
	case *unstructured.UnstructuredList:
		gvk, f, err = declared(l, cacheaccess.Unstructured)
	case *metav1.PartialObjectMetadataList:
		gvk, f, err = declared(l, cacheaccess.Metadata)
	default:
		f = cacheaccess.Typed
		if gvk, err = apiutil.GVKForObject(list, r.cache.Scheme()); err != nil {
			err = fmt.Errorf("find the kind of %T: %w: add the type to the cache's scheme", list, err)
		}
	}
	if err != nil {
		return gvk, f, err
	}
	if !strings.HasSuffix(gvk.Kind, "List") {
		return gvk, f, fmt.Errorf("%T declares kind %q: a list's kind ends in List, such as ConfigMapList", list, gvk.Kind)
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	return gvk, f, nil
}

// declared returns the kind an unstructured or metadata-only object
// declares: those forms carry no Go type to find it from.
func declared(obj runtime.Object, f cacheaccess.Form) (schema.GroupVersionKind, cacheaccess.Form, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return gvk, f, fmt.Errorf("%T has no apiVersion and kind: set them (SetGroupVersionKind) to say which kind to read", obj)
	}
	return gvk, f, nil
}

// copyInto sets *obj to a deep copy of cached, as controller-runtime's
// cached reader does, with its kind set: the informer decodes objects
// without one.
func copyInto(obj crclient.Object, cached runtime.Object, gvk schema.GroupVersionKind) error {
	cp := cached.DeepCopyObject()
	out, in := reflect.ValueOf(obj), reflect.ValueOf(cp)
	if !in.Type().AssignableTo(out.Type()) {
		return fmt.Errorf("get %s: the cache holds %s, not %s", gvk.Kind, in.Type(), out.Type())
	}
	reflect.Indirect(out).Set(reflect.Indirect(in))
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}
