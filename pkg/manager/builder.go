package manager

import (
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/opkit-dev/opkit/internal/sharding/dispatch"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/sharding"
	"github.com/opkit-dev/opkit/pkg/source"
)

// Watch is one thing a controller built by NewController watches: its
// primary type (For), a type it owns (Owns), or any other type with a
// handler of your own (Watches).
type Watch interface {
	add(b *builder) error
}

// builder collects what NewController needs before any of it is built.
type builder struct {
	m       *Manager
	name    string
	primary *schema.GroupVersionKind
	// scope is the primary type's Lister, which knows whether its objects
	// are namespaced once the API server serves the type.
	scope source.Scope
	// build make the sources once the primary is known, in the order the
	// watches were given.
	build []func(b *builder) (source.Source[reconcile.Request], error)
	opts  *controller.Options[reconcile.Request]
	// shardBy says how the sharded mode maps a key to its slot.
	shardBy sharding.Key
	// gate makes the controller's dispatch gate over the primary type, in
	// sharded mode; For sets it.
	gate func(b *builder) (controller.Gate[reconcile.Request], func(*queue.Queue[reconcile.Request]), error)
	// register registers the primary type with the cache once every
	// watch is known (ShardBy may come after For); For sets it.
	register func(b *builder) error
}

type watchFunc func(b *builder) error

func (f watchFunc) add(b *builder) error { return f(b) }

// For watches the controller's primary type T: each of its events queues
// the object itself. A controller has exactly one For.
func For[T cache.Object](preds ...source.Predicate[T]) Watch {
	return watchFunc(func(b *builder) error {
		if b.primary != nil {
			return fmt.Errorf("two For watches (%v and %v): a controller has one primary type", *b.primary, reflect.TypeFor[T]())
		}
		gvk, err := gvkFor[T](b.m)
		if err != nil {
			return err
		}
		b.primary = &gvk
		var l *cache.Lister[T]
		b.register = func(b *builder) error {
			var err error
			if l, err = watchLister[T](b, b.shardBy, true); err != nil {
				return err
			}
			b.scope = l
			return nil
		}
		var g *dispatch.Gate[T]
		b.gate = func(b *builder) (controller.Gate[reconcile.Request], func(*queue.Queue[reconcile.Request]), error) {
			var err error
			g, err = dispatch.NewGate(b.m.shard.dispatcher, l, dispatch.GateOptions{
				Controller: b.name, Slots: b.m.shard.slots, Key: b.shardBy,
				Registerer: b.m.registry, Logger: b.m.log.WithName("sharding"),
			})
			if err != nil {
				return nil, nil, err
			}
			return g, g.Attach, nil
		}
		b.build = append(b.build, func(b *builder) (source.Source[reconcile.Request], error) {
			h := source.EnqueueObject[T]()
			if g != nil && len(preds) == 0 {
				// The primary source tells the gate each key's slot.
				h = g.Record(h)
			}
			return source.NewKind(l, h, preds...), nil
		})
		if len(preds) > 0 {
			// Predicates may drop a create or a delete, whose slot the gate
			// must see all the same: a source of its own, unfiltered,
			// records them and queues nothing.
			b.build = append(b.build, func(b *builder) (source.Source[reconcile.Request], error) {
				if g == nil {
					return nil, nil
				}
				return source.NewKind(l, g.Record(source.HandlerFunc[T, reconcile.Request](func(source.Event[T], *queue.Queue[reconcile.Request]) {}))), nil
			})
		}
		return nil
	})
}

// ShardBy says, in the manager's sharded mode (Options.Sharding), which
// value of the primary object decides a key's slot. Defaults to
// sharding.ByUID: keys spread evenly. sharding.ByNamespace keeps a
// namespace's keys on one replica, and needs no lookup;
// sharding.ByControllerOwner puts a primary object with its controller
// owner. It is also the ShardKey the For type is cached by. Without
// sharding it has no effect.
func ShardBy(key sharding.Key) Watch {
	return watchFunc(func(b *builder) error {
		b.shardBy = key
		return nil
	})
}

// Owns watches type T, whose objects the primary type controls through an
// owner reference: each event queues the controlling owner if it is of the
// primary type. Whether that key has a namespace is decided per event from
// the primary type's scope as the cache learned it from the API server, so
// a primary type whose CRD is installed after NewController works either
// way; until it is installed, events of T queue no owner.
//
// Owns also adds cache.ControlledByIndex to T's Lister, so that the
// reconciler lists an owner's children with Lister.ControlledBy. Adding it
// is idempotent: any number of controllers may own the same type.
func Owns[T cache.Object](preds ...source.Predicate[T]) Watch {
	return watchFunc(func(b *builder) error {
		b.build = append(b.build, func(b *builder) (source.Source[reconcile.Request], error) {
			key, sharded := ownedKey(b.shardBy)
			l, err := watchLister[T](b, key, sharded)
			if err != nil {
				return nil, err
			}
			if err := l.IndexControlledBy(); err != nil {
				return nil, fmt.Errorf("own %v: %w", reflect.TypeFor[T](), err)
			}
			h := source.EnqueueOwner[T](b.primary.GroupKind(), source.OwnerOptions{Scope: b.scope})
			return source.NewKind(l, h, preds...), nil
		})
		return nil
	})
}

// Watches watches type T with a handler of your own, such as
// source.EnqueueMapped for objects related by a label or a field. In
// sharded mode its objects are all cached on every replica, unless
// ShardWatch says otherwise.
func Watches[T cache.Object](h source.Handler[T, reconcile.Request], preds ...source.Predicate[T]) Watch {
	return &watches[T]{h: h, preds: preds}
}

// watches is a Watches watch; ShardWatch sets its key.
type watches[T cache.Object] struct {
	h       source.Handler[T, reconcile.Request]
	preds   []source.Predicate[T]
	key     sharding.Key
	sharded bool
}

func (w *watches[T]) add(b *builder) error {
	if w.h == nil {
		return fmt.Errorf("watch %v: the handler of Watches is nil", reflect.TypeFor[T]())
	}
	b.build = append(b.build, func(b *builder) (source.Source[reconcile.Request], error) {
		l, err := watchLister[T](b, w.key, w.sharded)
		if err != nil {
			return nil, err
		}
		return source.NewKind(l, w.h, w.preds...), nil
	})
	return nil
}

func (w *watches[T]) shardBy(key sharding.Key) { w.key, w.sharded = key, true }

// ShardWatch makes a Watches watch cache, in sharded mode, only the
// objects of the slots this replica holds, by key; without sharding it
// has no effect. It is correct only if each object hashes to the slot of
// every key its handler maps it to, so that the replica holding a key's
// slot caches every object mapped to it: sharding.ByNamespace on both the
// controller (ShardBy) and the watch, with a handler that maps within a
// namespace, say. Otherwise a key's replica would miss the events of
// objects cached elsewhere. Only Watches watches can be sharded so: Owns
// watches are sharded for you, WatchSource ones are not the cache's.
func ShardWatch(key sharding.Key, w Watch) Watch {
	return watchFunc(func(b *builder) error {
		sw, ok := w.(interface{ shardBy(sharding.Key) })
		if !ok {
			return fmt.Errorf("ShardWatch of %T: only a watch made by Watches can be sharded", w)
		}
		sw.shardBy(key)
		return w.add(b)
	})
}

// WatchSource adds a source of any kind, such as source.NewChannel for
// events from outside the cluster.
func WatchSource(src source.Source[reconcile.Request]) Watch {
	return watchFunc(func(b *builder) error {
		if src == nil {
			return errors.New("WatchSource: the source is nil")
		}
		b.build = append(b.build, func(*builder) (source.Source[reconcile.Request], error) { return src, nil })
		return nil
	})
}

// WithOptions sets the controller's options. Defaults to the zero Options,
// with the manager's logger, registry and shutdown timeout filled in.
func WithOptions(opts controller.Options[reconcile.Request]) Watch {
	return watchFunc(func(b *builder) error {
		b.opts = &opts
		return nil
	})
}

// NewController builds the controller named name that reconciles the
// primary type of its For watch with r, and adds it to the manager. Every
// type it watches is registered with the cache, or reuses the registration
// made with cache.For before, if there is exactly one.
//
// In sharded mode (Options.Sharding) the controller reconciles only the
// keys of the slots this replica holds, mapped to slots as ShardBy says,
// and runs on every replica, leader or not; its controller.Options.Gate must be nil,
// since the manager sets it. Its For type, its Owns types and its
// ShardWatch watches are then registered sharded, so the cache holds only
// this replica's slots of them (see "Sharded mode" in the package doc);
// a type registered before, unsharded, stays registered, whole.
//
//	manager.NewController(mgr, "mirror", r,
//		manager.For[*v1alpha1.Mirror](source.GenerationChanged[*v1alpha1.Mirror]()),
//		manager.Owns[*corev1.ConfigMap](),
//		manager.Watches[*corev1.Namespace](source.EnqueueMapped(mirrorsOf)))
func NewController(m *Manager, name string, r reconcile.Reconciler[reconcile.Request], watches ...Watch) (*controller.Controller[reconcile.Request], error) {
	b := &builder{m: m, name: name}
	for _, w := range watches {
		if err := w.add(b); err != nil {
			return nil, fmt.Errorf("manager: controller %q: %w", name, err)
		}
	}
	if b.primary == nil {
		return nil, fmt.Errorf("manager: controller %q: no For watch: name the primary type with manager.For", name)
	}
	if err := b.register(b); err != nil {
		return nil, fmt.Errorf("manager: controller %q: %w", name, err)
	}
	opts := controller.Options[reconcile.Request]{}
	if b.opts != nil {
		opts = *b.opts
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = m.log
	}
	if opts.Registerer == nil {
		opts.Registerer = m.registry
	}
	if opts.DrainTimeout == 0 {
		opts.DrainTimeout = m.opts.ShutdownTimeout
	}
	m.traceReconciles(&opts)
	attach, err := b.shard(&opts)
	if err != nil {
		return nil, fmt.Errorf("manager: controller %q: %w", name, err)
	}
	c, err := controller.New(name, r, opts)
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	if attach != nil {
		attach(c.Queue())
	}
	for _, build := range b.build {
		src, err := build(b)
		if err != nil {
			return nil, fmt.Errorf("manager: controller %q: %w", name, err)
		}
		if src == nil {
			continue // a source only sharded mode needs
		}
		if err := c.Watch(src); err != nil {
			return nil, fmt.Errorf("manager: %w", err)
		}
	}
	var rn Runnable = c
	if m.shard != nil {
		rn = shardedController{c}
	}
	if err := m.Add(rn); err != nil {
		return nil, err
	}
	return c, nil
}

// shard sets the controller's dispatch gate in sharded mode, and returns
// the function that gives the gate the controller's queue; nil otherwise.
func (b *builder) shard(opts *controller.Options[reconcile.Request]) (func(*queue.Queue[reconcile.Request]), error) {
	if b.m.shard == nil {
		return nil, nil
	}
	if opts.Gate != nil {
		return nil, errors.New("controller.Options.Gate is set, and the manager is sharded (Options.Sharding), which sets the gate: leave controller.Options.Gate nil")
	}
	g, attach, err := b.gate(b)
	if err != nil {
		return nil, err
	}
	opts.Gate = g
	return attach, nil
}

// watchLister returns the Lister a watch of T reads: in sharded mode, for a
// sharded watch, T registered with TypeOptions{Sharded: true, ShardKey:
// key} (shared by every watch sharding T by key); otherwise unsharded,
// which registers T so only if nothing else registered it.
func watchLister[T cache.Object](b *builder, key sharding.Key, sharded bool) (*cache.Lister[T], error) {
	if b.m.shard != nil && sharded {
		return cache.For[T](b.m.cache, cache.TypeOptions{Sharded: true, ShardKey: key})
	}
	return lister[T](b.m.cache)
}

// ownedKey returns how Owns shards the owned type so that children land
// with their controller: by their controller owner's UID when the primary
// is sharded by its UID, by namespace when it is by namespace. A primary
// sharded by its own owner leaves its children unsharded: they do not
// hash to its slot.
func ownedKey(primary sharding.Key) (sharding.Key, bool) {
	switch primary {
	case sharding.ByUID:
		return sharding.ByControllerOwner, true
	case sharding.ByNamespace:
		return sharding.ByNamespace, true
	}
	return 0, false
}

// lister returns the Lister an unsharded watch of T reads: the one
// registration of T, or, when there is none, or more than one (a sharded
// one among them), T registered with default options.
func lister[T cache.Object](c *cache.Cache) (*cache.Lister[T], error) {
	if l, err := cache.Lookup[T](c); err == nil {
		return l, nil
	}
	return cache.For[T](c, cache.TypeOptions{})
}

func gvkFor[T cache.Object](m *Manager) (schema.GroupVersionKind, error) {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer {
		return schema.GroupVersionKind{}, fmt.Errorf("watch %v: the type must be a pointer, such as *corev1.ConfigMap", t)
	}
	gvk, err := apiutil.GVKForObject(reflect.New(t.Elem()).Interface().(T), m.scheme)
	if err != nil {
		return gvk, fmt.Errorf("watch %v: %w: add the type to the manager's Options.Scheme", t, err)
	}
	return gvk, nil
}
