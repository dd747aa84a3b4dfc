package cache

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
)

// Internal returns c's side for opkit's own packages (the manager, the
// cached client, package controller's RecordWrite): what they ask of the
// cache beyond this package's API. Its second argument's type is internal
// to opkit, so no other module can call it.
func Internal(c *Cache, _ cacheaccess.Key) cacheaccess.Cache { return internals{c} }

// NewStore returns an empty in-memory store of the Go type t behind a real
// Lister, for package cachetest; like Internal, only opkit can call it.
func NewStore(_ cacheaccess.Key, t reflect.Type, opts cacheaccess.StoreOptions) (cacheaccess.Store, error) {
	return newStatic(t, opts)
}

// internals is Internal's Cache.
type internals struct{ c *Cache }

var _ cacheaccess.Cache = internals{}

// Written implements cacheaccess.Cache.
func (i internals) Written(gvk schema.GroupVersionKind, obj metav1.Object, deleted bool) cacheaccess.Write {
	return i.c.written(gvk, obj, deleted)
}

// ShedMemory implements cacheaccess.Cache.
func (i internals) ShedMemory(on bool) { i.c.shedMemory(on) }

// LookupKind implements cacheaccess.Cache.
func (i internals) LookupKind(gvk schema.GroupVersionKind, f form) (cacheaccess.ObjectLister, error) {
	c := i.c
	regs := c.registered(func(k regKey) bool { return k.gvk == gvk && k.form == f })
	switch len(regs) {
	case 0:
		return nil, c.unregisteredRead(gvk, f, c.notRegistered(gvk, f))
	case 1:
		return objectLister{l: &Lister[client.Object]{reg: regs[0]}}, nil
	default:
		return nil, fmt.Errorf("cache: read %s (%s): %d registrations cache it with different namespaces or selectors: read it through the Lister you registered", gvk, f, len(regs))
	}
}

// HoldsKind implements cacheaccess.Cache.
func (i internals) HoldsKind(gvk schema.GroupVersionKind, f form) bool {
	return len(i.c.registered(func(k regKey) bool { return k.gvk == gvk && k.form == f })) == 1
}

// Scheme implements cacheaccess.Cache: Options.Scheme.
func (i internals) Scheme() *runtime.Scheme { return i.c.opts.Scheme }

// IndexControlledBy implements cacheaccess.Cache.
func (internals) IndexControlledBy(lister any) error {
	l, ok := lister.(interface{ indexControlledBy() error })
	if !ok {
		return fmt.Errorf("cache: index controlled-by: %T is not a *cache.Lister", lister)
	}
	return l.indexControlledBy()
}

// Informers implements cacheaccess.Cache.
func (internals) Informers(lister any) ([]toolscache.SharedIndexInformer, error) {
	l, ok := lister.(interface {
		informers() []toolscache.SharedIndexInformer
	})
	if !ok {
		return nil, fmt.Errorf("cache: informers: %T is not a *cache.Lister", lister)
	}
	return l.informers(), nil
}

// notRegistered says how to register gvk in form f, and in which other
// forms it is registered, if any.
func (c *Cache) notRegistered(gvk schema.GroupVersionKind, f form) error {
	var how string
	switch f {
	case typed:
		goType := "T"
		if obj, err := c.opts.Scheme.New(gvk); err == nil {
			goType = reflect.TypeOf(obj).String()
		}
		how = fmt.Sprintf("cache.Register[%s]", goType)
	case metadataOnly:
		how = "cache.Metadata with its GroupVersionKind"
	default:
		how = "cache.Unstructured with its GroupVersionKind"
	}
	var others []string
	for _, r := range c.registered(func(k regKey) bool { return k.gvk == gvk }) {
		others = append(others, r.key.form.String())
	}
	also := ""
	if len(others) > 0 {
		also = fmt.Sprintf(" (it is registered in %s form: read it in that form)", strings.Join(others, ", "))
	}
	return fmt.Errorf("cache: read %s (%s form): %w: register it with %s before Start%s", gvk, f, ErrNotRegistered, how, also)
}

// objectLister is LookupKind's cacheaccess.ObjectLister.
type objectLister struct {
	l *Lister[client.Object]
}

func (o objectLister) GroupVersionKind() schema.GroupVersionKind { return o.l.GroupVersionKind() }

func (o objectLister) Started() bool {
	c := o.l.reg.c
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.run != nil
}

func (o objectLister) Synced() bool {
	select {
	case <-o.l.reg.syncedCh:
		return true
	default:
		return false
	}
}

// syncPoll is how often WaitForSync looks whether a kind it waits for
// was found not served.
const syncPoll = 100 * time.Millisecond

func (o objectLister) WaitForSync(ctx context.Context) error {
	r := o.l.reg
	select {
	case <-r.syncedCh:
		return nil
	default:
	}
	tick := time.NewTicker(syncPoll)
	defer tick.Stop()
	for {
		r.mu.Lock()
		removed, kind, lastErr := r.removed, r.err, r.lastErr
		r.mu.Unlock()
		switch {
		case removed:
			return fmt.Errorf("cache: read %s: %w", r.key.gvk, ErrRemoved)
		case kind == notInstalled || kind == crdDeleted:
			return fmt.Errorf("cache: read %s: %w", r.key.gvk, lastErr)
		}
		select {
		case <-r.syncedCh:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("cache: read %s before it synced: %w: %w", r.key.gvk, ErrNotSynced, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

func (o objectLister) Get(namespace, name string) (client.Object, error) {
	return o.l.Get(namespace, name)
}

func (o objectLister) ByIndex(index, value string) ([]client.Object, error) {
	return o.l.ByIndex(index, value)
}

func (o objectLister) ByIndexInNamespace(namespace, index, value string) ([]client.Object, error) {
	return o.l.ByIndexInNamespace(namespace, index, value)
}

// List is Lister.List, sorted the same way, except that it does not
// remember its answer: Lister.List's remembered Lists are kept per Go type,
// and a reader that copies every object it returns would gain little
// from them.
func (o objectLister) List(namespace string, selector labels.Selector) ([]client.Object, error) {
	reg := o.l.reg
	v, err := reg.readable()
	if err != nil {
		return nil, err
	}
	var items []any
	if namespace == "" {
		for _, i := range v.informers {
			items = append(items, i.indexer.List()...)
		}
	} else {
		ix, err := v.indexerFor(reg.key.gvk, namespace)
		if err != nil {
			return nil, err
		}
		if v.byNamespace != nil {
			items = ix.List()
		} else if items, err = ix.ByIndex(toolscache.NamespaceIndex, namespace); err != nil {
			return nil, fmt.Errorf("cache: list %s in %s: %w", reg.key.gvk.Kind, namespace, err)
		}
	}
	found := filter[client.Object](items, selector)
	sortObjects(found)
	o.l.traced(v, found)
	return found, nil
}
