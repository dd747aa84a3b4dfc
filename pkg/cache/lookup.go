package cache

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
)

// Form is how a registered kind's objects are cached: FormTyped (Register),
// FormMetadata (Metadata) or FormUnstructured (Unstructured). Its String is
// what TypeStatus.Form says.
type Form uint8

// The forms a kind can be cached in.
const (
	FormTyped        = Form(typed)
	FormMetadata     = Form(metadataOnly)
	FormUnstructured = Form(unstructuredForm)
)

func (f Form) String() string { return form(f).String() }

// ObjectLister reads one registered kind without naming its Go type: for
// readers that learn the kind at run time from the object they are given,
// such as opkit's cached client (pkg/cachedclient). It hands out the cached
// objects, like Lister, and the same rules hold: callers must not modify
// them. Its methods are safe for concurrent use.
type ObjectLister struct {
	l *Lister[Object]
}

// LookupKind returns an ObjectLister for the kind gvk cached in form f if
// exactly one registration caches it so. Like Lookup, it never registers
// anything: a kind nobody registered in that form is an error that wraps
// ErrNotRegistered and says how to register it, and the read is logged,
// counted and, in tests, reported as Options.UnregisteredReads says.
func LookupKind(c *Cache, gvk schema.GroupVersionKind, f Form) (*ObjectLister, error) {
	regs := c.registered(func(k regKey) bool { return k.gvk == gvk && k.form == form(f) })
	switch len(regs) {
	case 0:
		return nil, c.unregisteredRead(gvk, f, c.notRegistered(gvk, f))
	case 1:
		return &ObjectLister{l: &Lister[Object]{reg: regs[0]}}, nil
	default:
		return nil, fmt.Errorf("cache: read %s (%s): %d registrations cache it with different namespaces or selectors: read it through the Lister you registered", gvk, f, len(regs))
	}
}

// HoldsKind reports whether LookupKind would find gvk in form f, without
// logging, counting or reporting a kind nobody registered: for callers
// that consult the cache on their own account, such as a write that is
// skipped when the cache holds the object, not on a reader's.
func HoldsKind(c *Cache, gvk schema.GroupVersionKind, f Form) bool {
	return len(c.registered(func(k regKey) bool { return k.gvk == gvk && k.form == form(f) })) == 1
}

// notRegistered says how to register gvk in form f, and in which other
// forms it is registered, if any.
func (c *Cache) notRegistered(gvk schema.GroupVersionKind, f Form) error {
	var how string
	switch f {
	case FormTyped:
		goType := "T"
		if obj, err := c.opts.Scheme.New(gvk); err == nil {
			goType = reflect.TypeOf(obj).String()
		}
		how = fmt.Sprintf("cache.Register[%s]", goType)
	case FormMetadata:
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

// Scheme returns the scheme the cache decodes typed objects with
// (Options.Scheme).
func (c *Cache) Scheme() *runtime.Scheme { return c.opts.Scheme }

// GroupVersionKind returns the kind the ObjectLister reads.
func (o *ObjectLister) GroupVersionKind() schema.GroupVersionKind { return o.l.GroupVersionKind() }

// Get is Lister.Get.
func (o *ObjectLister) Get(namespace, name string) (Object, error) { return o.l.Get(namespace, name) }

// ByIndex is Lister.ByIndex.
func (o *ObjectLister) ByIndex(index, value string) ([]Object, error) {
	return o.l.ByIndex(index, value)
}

// ByIndexInNamespace is Lister.ByIndexInNamespace.
func (o *ObjectLister) ByIndexInNamespace(namespace, index, value string) ([]Object, error) {
	return o.l.ByIndexInNamespace(namespace, index, value)
}

// List is Lister.List, sorted the same way, except that it does not
// remember its answer: Lister.List's remembered Lists are kept per Go type,
// and a reader that copies every object it returns would gain little
// from them.
func (o *ObjectLister) List(namespace string, selector labels.Selector) ([]Object, error) {
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
	found := filter[Object](items, selector)
	sortObjects(found)
	o.l.traced(v, found)
	return found, nil
}
