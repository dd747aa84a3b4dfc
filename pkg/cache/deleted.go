package cache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	toolscache "k8s.io/client-go/tools/cache"
)

// ErrDeleted: the type's CRD was deleted after the cache had cached the
// type. Errors that wrap it wrap ErrNotInstalled too. The cache looks for
// the CRD every Options.CRDPollInterval and resumes watching once it is
// installed again.
var ErrDeleted = errors.New("type's CRD deleted")

// A kind whose CRD is deleted goes through these steps:
//
//  1. The API server deletes every object of the kind (watch DELETE
//     events, handed on by the informers as usual), then stops serving it:
//     the informers' watches end and their lists are answered 404, which
//     recordListWatch signals on notFound.
//  2. untilDeleted asks discovery whether the kind is still served (at
//     most once per CRDPollInterval): a 404 alone may be a CRD replaced in
//     place.
//  3. markDeleted drops the view (reads fail with ErrDeleted) and retires
//     its informers: they ask the API server nothing more, and their next
//     list is empty, so each hands its handlers, in order after every
//     earlier event, a delete (a DeletedFinalStateUnknown) for each object
//     it still held. Nothing is handed twice: the store is the record of
//     what the handlers were handed.
//  4. waitForReinstall asks discovery every CRDPollInterval; once the kind
//     is served again, run stops the retired informers and makes fresh
//     ones, whose initial list hands the handlers an add per object.
//
// Discovery is asked directly, not through Options.Mapper: the default
// mapper (controller-runtime's) keeps a kind's mapping after its CRD is
// deleted, and has no way to forget one.

// untilDeleted returns once a list or watch of the type was answered 404
// and discovery confirms that the API server no longer serves the type, or
// when ctx ends (with its error).
func (r *registration) untilDeleted(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.notFound:
		}
		m, err := r.c.servedMapping(r.key.gvk)
		if err == nil && m == nil {
			return nil
		}
		if err != nil {
			r.c.log.V(1).Info("Cannot tell whether the type's CRD was deleted; asking again", "gvk", r.key.gvk.String(), "error", err.Error())
		}
		if !sleep(ctx, r.c.opts.CRDPollInterval) {
			return ctx.Err()
		}
	}
}

// markDeleted records that the type's CRD is deleted, drops the view, so
// that reads fail with ErrDeleted, and retires its informers. It returns
// the view, which the caller stops once fresh informers replace it.
func (r *registration) markDeleted() *view {
	crd := r.resourceName()
	now := time.Now()
	err := r.deletedError(crd, now)
	r.mu.Lock()
	v := r.view.Load()
	r.view.Store(nil)
	r.synced.Store(false)
	r.gen++
	r.deleted = now
	r.err, r.lastErr = crdDeleted, err
	r.unwatched, r.logged = nil, nil
	r.mu.Unlock()
	if v != nil {
		v.retired.Store(true)
	}
	if rm, ok := r.c.opts.Mapper.(meta.ResettableRESTMapper); ok {
		rm.Reset() // so that the mapper's other users learn of it too
	}
	r.c.log.Info("CRD deleted; the type's informers are stopped until it is installed again",
		"gvk", r.key.gvk.String(), "crd", crd, "interval", r.c.opts.CRDPollInterval)
	return v
}

func (r *registration) deletedError(crd string, at time.Time) error {
	return fmt.Errorf("CRD %s deleted at %s (the API server no longer serves %s); waiting for it to be installed again, looking every %v: install the CRD, or Remove the Lister if the kind is gone for good: %w: %w",
		crd, at.UTC().Format(time.RFC3339), r.key.gvk, r.c.opts.CRDPollInterval, ErrDeleted, ErrNotInstalled)
}

// waitForReinstall asks discovery every CRDPollInterval whether the API
// server serves the type again, and returns its REST mapping once it does,
// or ctx's error.
func (r *registration) waitForReinstall(ctx context.Context) (*meta.RESTMapping, error) {
	for {
		if !sleep(ctx, r.c.opts.CRDPollInterval) {
			return nil, ctx.Err()
		}
		m, err := r.c.servedMapping(r.key.gvk)
		if err != nil || m == nil {
			continue // the error stays: the CRD is deleted, as far as is known
		}
		r.mu.Lock()
		r.deleted = time.Time{}
		r.err, r.lastErr = noError, nil
		r.mu.Unlock()
		r.c.metrics.relist(r) // the fresh informers' list replaces what was cached
		r.c.log.Info("CRD installed again; caching the type", "gvk", r.key.gvk.String(), "resource", m.Resource.String())
		return m, nil
	}
}

// servedMapping asks discovery (one request) for the REST mapping of gvk,
// and returns nil, with no error, when the API server does not serve it.
func (c *Cache) servedMapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(c.cfg, c.opts.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("make discovery client: %w", err)
	}
	list, err := dc.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discover %s: %w", gvk.GroupVersion(), err)
	}
	for _, res := range list.APIResources {
		if res.Kind != gvk.Kind || strings.Contains(res.Name, "/") {
			continue // another kind, or a subresource
		}
		scope := meta.RESTScopeRoot
		if res.Namespaced {
			scope = meta.RESTScopeNamespace
		}
		return &meta.RESTMapping{Resource: gvk.GroupVersion().WithResource(res.Name), GroupVersionKind: gvk, Scope: scope}, nil
	}
	return nil, nil
}

// retirable returns lw until retired is set, and then a ListWatch that
// asks the API server nothing: its list is empty, and so are a streaming
// list's initial events, and its watch then sends nothing until the
// informer stops it. The informer's store thus empties, handing its
// handlers a delete for each object it held, in order. A watch reopened
// before that empty list (an informer whose watch outlived another's 404)
// is refused as expired, so that the informer lists.
func (r *registration) retirable(lw *toolscache.ListWatch, retired *atomic.Bool) *toolscache.ListWatch {
	list, watchFn := lw.ListWithContextFunc, lw.WatchFuncWithContext
	var emptied atomic.Bool
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			if !retired.Load() {
				return list(ctx, opts)
			}
			emptied.Store(true)
			return r.emptyList()
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			switch streaming := opts.SendInitialEvents != nil && *opts.SendInitialEvents; {
			case !retired.Load():
				return watchFn(ctx, opts)
			case streaming:
				emptied.Store(true)
				return r.idleWatch(true), nil
			case !emptied.Load():
				return nil, apierrors.NewResourceExpired(fmt.Sprintf("the CRD of %s was deleted: list again", r.key.gvk))
			default:
				return r.idleWatch(false), nil
			}
		},
	}
}

// retiredVersion is the resourceVersion of a retired informer's list.
const retiredVersion = "1"

// emptyList returns an empty list of the type's form.
func (r *registration) emptyList() (runtime.Object, error) {
	switch r.key.form {
	case unstructuredForm:
		l := &unstructured.UnstructuredList{}
		l.SetResourceVersion(retiredVersion)
		return l, nil
	case metadataOnly:
		return &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: retiredVersion}}, nil
	}
	listGVK := r.key.gvk.GroupVersion().WithKind(r.key.gvk.Kind + "List")
	l, err := r.c.opts.Scheme.New(listGVK)
	if err != nil {
		return nil, fmt.Errorf("make %s: %w", listGVK, err)
	}
	lm, err := meta.ListAccessor(l)
	if err != nil {
		return nil, fmt.Errorf("make %s: %w", listGVK, err)
	}
	lm.SetResourceVersion(retiredVersion)
	return l, nil
}

// idleWatch returns a watch that sends nothing until stopped, except, for a
// streaming list, the bookmark that ends its (empty) initial events.
func (r *registration) idleWatch(streaming bool) watch.Interface {
	w := watch.NewFakeWithChanSize(1, false)
	if streaming {
		obj := r.newObject()
		if a, err := meta.Accessor(obj); err == nil {
			a.SetResourceVersion(retiredVersion)
			a.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
		w.Action(watch.Bookmark, obj)
	}
	return w
}

// sleep waits d, and reports false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
