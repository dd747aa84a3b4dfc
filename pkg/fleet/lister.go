package fleet

import (
	"fmt"
	"reflect"

	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// registration is a type registered with the fleet: what registers it in
// each member's cache.
type registration struct {
	name     string // the Go type, for errors
	register func(*cache.Cache) (any, error)
}

// register registers r in c's cache.
func (c *Cluster) register(r *registration) {
	l, err := r.register(c.cache)
	if err != nil {
		l = fmt.Errorf("register %s in member cluster %q: %w", r.name, c.name, err)
	}
	c.mu.Lock()
	c.listers[r] = l
	c.mu.Unlock()
}

// Lister reads one type registered with the fleet, in any engaged member.
type Lister[T cache.Object] struct {
	fleet *Fleet
	reg   *registration
}

// Register registers the Go type T (a pointer type in the fleet's scheme,
// such as *corev1.ConfigMap) in the cache of every member, engaged now or
// later, with opts, and returns its Lister. It fails if the scheme does
// not know T.
func Register[T cache.Object](f *Fleet, opts cache.TypeOptions) (*Lister[T], error) {
	var zero T
	t := reflect.TypeOf(zero)
	if t == nil || t.Kind() != reflect.Pointer {
		return nil, fmt.Errorf("register %v with the fleet: the type must be a pointer to a struct, such as *corev1.ConfigMap", t)
	}
	if _, err := apiutil.GVKForObject(reflect.New(t.Elem()).Interface().(T), f.opts.Scheme); err != nil {
		return nil, fmt.Errorf("register %T with the fleet: %w", zero, err)
	}
	r := &registration{
		name:     fmt.Sprintf("%T", zero),
		register: func(c *cache.Cache) (any, error) { return cache.Register[T](c, opts) },
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.types = append(f.types, r)
	for _, c := range f.members {
		c.register(r)
	}
	return &Lister[T]{fleet: f, reg: r}, nil
}

// In returns the type's Lister in the member named cluster: an error
// wrapping ErrNotEngaged if the fleet has no such member.
func (l *Lister[T]) In(cluster string) (*cache.Lister[T], error) {
	c, err := l.fleet.Cluster(cluster)
	if err != nil {
		return nil, err
	}
	return inCluster[T](c, l.reg)
}

// inCluster returns the Lister of r in c.
func inCluster[T cache.Object](c *Cluster, r *registration) (*cache.Lister[T], error) {
	c.mu.Lock()
	v := c.listers[r]
	c.mu.Unlock()
	switch v := v.(type) {
	case *cache.Lister[T]:
		return v, nil
	case error:
		return nil, v
	}
	return nil, fmt.Errorf("member cluster %q has no %s", c.name, r.name)
}
