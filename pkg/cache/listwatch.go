package cache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// listWatchFactory returns a function that makes the ListWatch of one
// namespace ("" for every namespace, or a cluster-scoped type).
func (c *Cache) listWatchFactory(key regKey, mapping *meta.RESTMapping) (func(ns string) *toolscache.ListWatch, error) {
	gvk := key.gvk
	switch key.form {
	case metadataOnly:
		return c.metadataListWatch(gvk, mapping, stripping{managedFields: !key.keepMF, lastApplied: !key.keepLA})
	case unstructuredForm:
		return c.dynamicListWatch(mapping)
	default:
		return c.typedListWatch(gvk, mapping)
	}
}

// typedListWatch lists and watches through a REST client for the type,
// which speaks protobuf to the API server for the built-in types and JSON
// for custom resources.
func (c *Cache) typedListWatch(gvk schema.GroupVersionKind, mapping *meta.RESTMapping) (func(string) *toolscache.ListWatch, error) {
	client, err := apiutil.RESTClientForGVK(gvk, false, false, c.cfg, c.codecs, c.listWatchClient)
	if err != nil {
		return nil, fmt.Errorf("make REST client for %s: %w", gvk, err)
	}
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	listObj, err := c.opts.Scheme.New(listGVK)
	if err != nil {
		return nil, fmt.Errorf("make %s: %w", listGVK, err)
	}
	resource := mapping.Resource.Resource
	return func(ns string) *toolscache.ListWatch {
		return &toolscache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				res := listObj.DeepCopyObject()
				result := client.Get().Namespace(ns).Resource(resource).VersionedParams(&opts, c.paramCodec).Do(ctx)
				if err := result.Error(); err != nil {
					return res, err
				}
				if err := result.Into(res); err != nil {
					// The request succeeded: the body did not decode.
					return res, &decodeError{err}
				}
				return res, nil
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				return client.Get().Namespace(ns).Resource(resource).VersionedParams(&opts, c.paramCodec).Watch(ctx)
			},
		}
	}, nil
}

// metadataListWatch lists through client-go's metadata client, and
// watches (streaming lists included) through a REST client of its own
// that decodes as metaSerializer says, leaving out what strip says.
func (c *Cache) metadataListWatch(gvk schema.GroupVersionKind, mapping *meta.RESTMapping, strip stripping) (func(string) *toolscache.ListWatch, error) {
	cfg := rest.CopyConfig(c.cfg)
	cfg.NegotiatedSerializer = nil
	client, err := metadata.NewForConfigAndClient(cfg, c.listWatchClient)
	if err != nil {
		return nil, fmt.Errorf("make metadata client: %w", err)
	}
	cfg = metadata.ConfigFor(cfg)
	cfg.NegotiatedSerializer = metaSerializer{NegotiatedSerializer: cfg.NegotiatedSerializer, strip: strip}
	cfg.GroupVersion = &schema.GroupVersion{}
	cfg.APIPath = "/this-value-should-never-be-sent" // as the metadata client's: every request sets its path
	watcher, err := rest.RESTClientForConfigAndClient(cfg, c.listWatchClient)
	if err != nil {
		return nil, fmt.Errorf("make metadata watch client: %w", err)
	}
	resources := client.Resource(mapping.Resource)
	return func(ns string) *toolscache.ListWatch {
		ri := resources.Namespace(ns)
		path := resourcePath(mapping.Resource, ns)
		return &toolscache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				list, err := ri.List(ctx, opts)
				if err != nil {
					return list, metadataListError(ctx, err)
				}
				if list != nil {
					// The metadata client leaves the kind of each item empty.
					for i := range list.Items {
						list.Items[i].SetGroupVersionKind(gvk)
					}
				}
				return list, err
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				w, err := c.metadataWatch(ctx, watcher, path, opts)
				if err != nil {
					return nil, err
				}
				return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
					if e.Object != nil {
						e.Object.GetObjectKind().SetGroupVersionKind(gvk)
					}
					return e, true
				}), nil
			},
		}
	}, nil
}

// metadataWatch opens a watch of the metadata at path, as client-go's
// metadata client's Watch does.
func (c *Cache) metadataWatch(ctx context.Context, client rest.Interface, path []string, opts metav1.ListOptions) (watch.Interface, error) {
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	opts.Watch = true
	return client.Get().AbsPath(path...).
		SetHeader("Accept", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json").
		SpecificallyVersionedParams(&opts, c.metaParams, metav1.Unversioned).
		Timeout(timeout).
		Watch(ctx)
}

// resourcePath is the path of resource in namespace ns ("" for every
// namespace, or a cluster-scoped resource).
func resourcePath(resource schema.GroupVersionResource, ns string) []string {
	path := []string{"api"}
	if resource.Group != "" {
		path = []string{"apis", resource.Group}
	}
	path = append(path, resource.Version)
	if ns != "" {
		path = append(path, "namespaces", ns)
	}
	return append(path, resource.Resource)
}

// metadataListError marks err, from the metadata client's List, as a body
// that did not decode when it is neither the API server's answer nor a
// failed connection nor the end of ctx: unlike a REST client's result,
// the metadata client returns a body it could not decode as a plain error
// ("couldn't get version/kind; json parse error").
func metadataListError(ctx context.Context, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) || isConnectionError(err) || ctx.Err() != nil {
		return err
	}
	return &decodeError{err}
}

func (c *Cache) dynamicListWatch(mapping *meta.RESTMapping) (func(string) *toolscache.ListWatch, error) {
	cfg := rest.CopyConfig(c.cfg)
	cfg.NegotiatedSerializer = nil
	client, err := dynamic.NewForConfigAndClient(cfg, c.listWatchClient)
	if err != nil {
		return nil, fmt.Errorf("make dynamic client: %w", err)
	}
	resources := client.Resource(mapping.Resource)
	return func(ns string) *toolscache.ListWatch {
		ri := resources.Namespace(ns)
		return &toolscache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				return ri.List(ctx, opts)
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				return ri.Watch(ctx, opts)
			},
		}
	}, nil
}

// instrument applies the registration's selectors and watch bookmarks to a
// ListWatch, counts lists and watches, and records their errors in a form
// that names the resource, the namespace and the verb.
func (r *registration) instrument(lw *toolscache.ListWatch, ns string) *toolscache.ListWatch {
	list, watchFn := lw.ListWithContextFunc, lw.WatchFuncWithContext
	var lists, watches atomic.Int64
	// Each informer's watch is tracked apart: while a slot set is
	// swapped, two informers of ns live, and the old one's watch stops
	// after the new one's opened.
	informer := ns + "#" + strconv.FormatInt(r.informers.Add(1), 10)
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			r.applySelectors(&opts)
			if err := r.c.reach.wait(ctx); err != nil {
				return nil, err
			}
			if lists.Add(1) > 1 || r.synced.Load() {
				r.c.metrics.relist(r)
			}
			obj, err := list(ctx, opts)
			r.c.reach.failed(ctx, err)
			r.recordListWatch(ctx, "list", ns, err)
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			r.applySelectors(&opts)
			if err := r.c.reach.wait(ctx); err != nil {
				return nil, err
			}
			// A REST client's Watch does not set watch=true itself; without
			// it the API server answers with a list.
			opts.Watch = true
			opts.AllowWatchBookmarks = true
			if watches.Add(1) > 1 {
				r.c.metrics.watchRestart(r)
				if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
					r.c.metrics.relist(r) // a streaming list replaces the list
				}
			}
			if r.c.metrics != nil {
				ctx = context.WithValue(ctx, streamFailedKey{}, func(err error) {
					r.c.metrics.syncError(r, syncErrorClass("watch", err))
				})
			}
			w, err := watchFn(ctx, opts)
			r.c.reach.failed(ctx, err)
			r.recordListWatch(ctx, "watch", ns, err)
			if err != nil {
				return w, err
			}
			r.watching(informer, true)
			return &trackedWatch{Interface: w, stopped: func() {
				// The informer stopping (its view swapped out, the
				// cache stopped) ends the watch on purpose.
				r.watching(informer, ctx.Err() != nil)
			}}, nil
		},
	}
}

// trackedWatch tells its registration when the informer stops it: client-go's
// reflector stops every watch it opened once the watch ends, for whatever
// reason. Events pass through untouched.
type trackedWatch struct {
	watch.Interface
	once    sync.Once
	stopped func()
}

func (w *trackedWatch) Stop() {
	w.once.Do(w.stopped)
	w.Interface.Stop()
}

func (r *registration) applySelectors(opts *metav1.ListOptions) {
	if s := r.opts.LabelSelector; s != nil && !s.Empty() {
		opts.LabelSelector = s.String()
	}
	if s := r.opts.FieldSelector; s != nil && !s.Empty() {
		opts.FieldSelector = s.String()
	}
}

// recordListWatch keeps the latest list or watch error for Status, with a
// message that says what to do about the common ones. A call that fails
// once ctx, its informer's, is canceled is no failure: the informer is
// stopping (its slots swapped out, its type removed, the cache stopped)
// and ends its calls in flight on purpose.
func (r *registration) recordListWatch(ctx context.Context, verb, ns string, err error) {
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		return
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		r.c.metrics.syncError(r, syncErrorClass(verb, err))
	}
	if err == nil {
		r.mu.Lock()
		if r.err == listWatchError {
			r.err, r.lastErr = noError, nil
		}
		if verb == "watch" {
			delete(r.logged, ns) // healthy again: log the next failure at V(0)
		}
		r.mu.Unlock()
		return
	}
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return // the reflector relists; nothing for a person to do
	}
	if r.isRemoved() {
		return // released or removed: its lists and watches end canceled
	}
	what := r.resourceName()
	where := ""
	if ns != "" {
		where = " in namespace " + ns
	}
	switch {
	case apierrors.IsForbidden(err):
		err = fmt.Errorf("%s %s%s: forbidden: give the operator's service account an RBAC rule allowing %q on %q%s: %w",
			verb, what, where, verb, what, where, err)
	case apierrors.IsNotFound(err):
		err = fmt.Errorf("%s %s%s: not found: is the type's CRD still installed? %w", verb, what, where, err)
		select {
		case r.notFound <- struct{}{}:
		default:
		}
	default:
		err = fmt.Errorf("%s %s%s: %w", verb, what, where, err)
	}
	r.mu.Lock()
	if r.err == crdDeleted {
		r.mu.Unlock()
		return // the informers that failed are being stopped
	}
	r.err, r.lastErr = listWatchError, err
	repeated := r.logged[ns] == err.Error()
	if r.logged == nil {
		r.logged = map[string]string{}
	}
	r.logged[ns] = err.Error()
	r.mu.Unlock()
	// The informer retries with a backoff of up to 30s: log each new
	// failure where it is seen by default (a list allowed but a watch
	// forbidden still syncs, so WaitForSync does not report it), and
	// repeats at V(1).
	if repeated {
		r.c.log.V(1).Info("List or watch failed again", "gvk", r.key.gvk.String(), "verb", verb, "namespace", ns, "error", err.Error())
		return
	}
	r.c.log.Error(err, "List or watch failed", "gvk", r.key.gvk.String(), "verb", verb, "namespace", ns)
}

// resourceName names the type's resource as RBAC rules do ("configmaps",
// "mirrors.samples.opkit.dev"), or its kind before the REST mapping is
// known. The
// mapping is set before the informers start, so their first failure is
// named like every later one; the view is stored only after they start.
func (r *registration) resourceName() string {
	r.mu.Lock()
	m := r.mapping
	r.mu.Unlock()
	if m != nil {
		return m.Resource.GroupResource().String()
	}
	if v := r.view.Load(); v != nil {
		return v.resource.GroupResource().String()
	}
	return r.key.gvk.String()
}
