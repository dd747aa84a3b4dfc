package manager

import (
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager/internal/dispatch"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/sharding"
	"github.com/opkit-dev/opkit/pkg/source"
)

// ControllerOption is one thing NewController builds a controller with: a
// watch of its primary type (For), of a type it owns (Owns), of any other
// type with a map function of your own (Watches) or of a source
// (WatchSource); or one thing it does around them (ShardBy, ShardWatch,
// Finalizer, WithOptions).
type ControllerOption interface {
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
	gate func(b *builder) (shardGate, error)
	// register registers the primary type with the cache once every
	// watch is known (ShardBy may come after For); For sets it.
	register func(b *builder) error
	// primaryType is For's T; primaryLister its *cache.Lister[T], set by
	// register.
	primaryType   reflect.Type
	primaryLister any
	// finalize wraps the reconciler in the finalizer protocol, once
	// register has run; Finalizer sets it.
	finalize func(b *builder, r reconcile.Reconciler[reconcile.Request]) (reconcile.Reconciler[reconcile.Request], error)
	// release drops the cache holds bind took, owned by the controller.
	release []func()
	// series is the Registerer of the controller's metrics, which
	// remembers what to delete when it is removed.
	series *series
	// weight is the controller's in the API budget's reconcile lane
	// (APIWeight); 0 means 1.
	weight float64
}

// shardGate is a controller's dispatch gate in sharded mode.
type shardGate interface {
	controller.Gate[reconcile.Request]
	// Attach gives the gate the controller's queue; Detach takes the gate
	// off the dispatcher once the controller is removed.
	Attach(q *queue.Queue[reconcile.Request])
	Detach()
}

type optionFunc func(b *builder) error

func (f optionFunc) add(b *builder) error { return f(b) }

// For watches the controller's primary type T: each of its events queues
// the object itself. A controller has exactly one For.
//
// l is the address of the Lister the reconciler reads T with, usually a
// field of the reconciler, so that T is named once, in the field's type,
// and inferred here: manager.For(&r.websites, source.GenerationChanged).
// If *l is nil, NewController registers T with the manager's cache and
// sets *l to its Lister, so the reconciler and the watch read one
// registration; if *l is set already, the watch reads that Lister, as you
// registered it. In sharded mode the watch reads T registered sharded by
// ShardBy's key (see NewController), and a nil *l is set to that. l may be
// nil when the reconciler does not read T: For[*corev1.ConfigMap](nil).
func For[T cache.Object](l **cache.Lister[T], preds ...source.Predicate[T]) ControllerOption {
	return optionFunc(func(b *builder) error {
		if b.primary != nil {
			return fmt.Errorf("two For watches (%v and %v): a controller has one primary type", *b.primary, reflect.TypeFor[T]())
		}
		gvk, err := primaryGVK(b.m, l)
		if err != nil {
			return err
		}
		b.primary, b.primaryType = &gvk, reflect.TypeFor[T]()
		var lister *cache.Lister[T]
		b.register = func(b *builder) error {
			var err error
			if lister, err = bind(b, l, b.shardBy, true); err != nil {
				return err
			}
			b.scope, b.primaryLister = lister, lister
			return nil
		}
		var g *dispatch.Gate[T]
		b.gate = func(b *builder) (shardGate, error) {
			var err error
			g, err = dispatch.NewGate(b.m.shard.dispatcher, lister, dispatch.GateOptions{
				Controller: b.name, Slots: b.m.shard.slots, Key: b.shardBy,
				Registerer: b.series, Logger: b.m.log.WithName("sharding"),
			})
			if err != nil {
				return nil, err
			}
			return g, nil
		}
		b.build = append(b.build, func(b *builder) (source.Source[reconcile.Request], error) {
			h := source.EnqueueObject[T]()
			if g != nil && len(preds) == 0 {
				// The primary source tells the gate each key's slot.
				h = g.Record(h)
			}
			return source.NewKind(lister, h, preds...), nil
		})
		if len(preds) > 0 {
			// Predicates may drop a create or a delete, whose slot the gate
			// must see all the same: a source of its own, unfiltered,
			// records them and queues nothing.
			b.build = append(b.build, func(b *builder) (source.Source[reconcile.Request], error) {
				if g == nil {
					return nil, nil
				}
				return source.NewKind(lister, g.Record(source.HandlerFunc[T, reconcile.Request](func(source.Event[T], *queue.Queue[reconcile.Request]) {}))), nil
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
func ShardBy(key sharding.Key) ControllerOption {
	return optionFunc(func(b *builder) error {
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
// l is bound as For's is: manager.Owns(&r.deployments) registers T and
// sets a nil *r.deployments, or watches the Lister it holds. In sharded
// mode the watch reads T sharded so that children land with their owner
// (see NewController).
//
// Owns also indexes T by controller owner when the controller is built,
// before Start if it is built then, so that Lister.ControlledBy, which
// lists an owner's children, finds the index ready instead of adding it on
// its first call. Adding it is idempotent: any number of controllers may
// own the same type.
func Owns[T cache.Object](l **cache.Lister[T], preds ...source.Predicate[T]) ControllerOption {
	return optionFunc(func(b *builder) error {
		b.build = append(b.build, func(b *builder) (source.Source[reconcile.Request], error) {
			key, sharded := ownedKey(b.shardBy)
			watched, err := bind(b, l, key, sharded)
			if err != nil {
				return nil, err
			}
			// The reconciler's Lister, if another registration, needs the
			// index too.
			for _, lister := range []*cache.Lister[T]{watched, deref(l)} {
				if lister == nil {
					continue
				}
				if err := cache.Internal(b.m.cache, cacheaccess.Key{}).IndexControlledBy(lister); err != nil {
					return nil, fmt.Errorf("own %v: %w", reflect.TypeFor[T](), err)
				}
			}
			h := source.EnqueueOwner[T](b.primary.GroupKind(), source.OwnerOptions{Scope: b.scope})
			return source.NewKind(watched, h, preds...), nil
		})
		return nil
	})
}

// Watches watches type T with a map function of your own, for objects
// related to the primary ones by a label, a field or a name rather than
// an owner reference: each event queues the keys fn returns for the
// object, and for an update those of the old object too, so that a
// relation that ends is seen (source.EnqueueMapped). fn runs on the
// informer's goroutine: it must be quick and read only from caches.
//
// l is bound as For's is; it may be nil when the reconciler does not read
// T, which fn names: manager.Watches(nil, r.websitesUsing). In sharded
// mode its objects are all cached on every replica, unless ShardWatch
// says otherwise. For any other handler, use WatchSource with
// source.NewKind.
func Watches[T cache.Object](l **cache.Lister[T], fn func(T) []reconcile.Request, preds ...source.Predicate[T]) ControllerOption {
	return &watches[T]{l: l, fn: fn, preds: preds}
}

// watches is a Watches watch; ShardWatch sets its key.
type watches[T cache.Object] struct {
	l       **cache.Lister[T]
	fn      func(T) []reconcile.Request
	preds   []source.Predicate[T]
	key     sharding.Key
	sharded bool
}

func (w *watches[T]) add(b *builder) error {
	if w.fn == nil {
		return fmt.Errorf("watch %v: the map function of Watches is nil", reflect.TypeFor[T]())
	}
	b.build = append(b.build, func(b *builder) (source.Source[reconcile.Request], error) {
		l, err := bind(b, w.l, w.key, w.sharded)
		if err != nil {
			return nil, err
		}
		return source.NewKind(l, source.EnqueueMapped(w.fn), w.preds...), nil
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
func ShardWatch(key sharding.Key, w ControllerOption) ControllerOption {
	return optionFunc(func(b *builder) error {
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
func WatchSource(src source.Source[reconcile.Request]) ControllerOption {
	return optionFunc(func(b *builder) error {
		if src == nil {
			return errors.New("WatchSource: the source is nil")
		}
		b.build = append(b.build, func(*builder) (source.Source[reconcile.Request], error) { return src, nil })
		return nil
	})
}

// WithOptions sets the controller's options. Defaults to the zero Options,
// with the manager's logger, registry and shutdown timeout filled in.
func WithOptions(opts controller.Options[reconcile.Request]) ControllerOption {
	return optionFunc(func(b *builder) error {
		b.opts = &opts
		return nil
	})
}

// NewController builds the controller named name that reconciles the
// primary type of its For watch with r, and adds it to the manager. Each
// watch reads the Lister its l points at, registering the type with the
// cache and setting the Lister when it is nil (see For), so a reconciler
// whose Listers are the watches' fields names each type once, in its
// fields:
//
//	r := &WebsiteReconciler{client: mgr.Writer("website")}
//	_, err := manager.NewController(mgr, "website", r,
//		manager.For(&r.websites, source.GenerationChanged),
//		manager.Owns(&r.deployments),
//		manager.Watches(&r.secrets, r.websitesUsing))
//
// In sharded mode (Options.Sharding) the controller reconciles only the
// keys of the slots this replica holds, mapped to slots as ShardBy says,
// and runs on every replica, leader or not; its controller.Options.Gate must be nil,
// since the manager sets it. Its For type, its Owns types and its
// ShardWatch watches are then registered sharded, so the cache holds only
// this replica's slots of them (see ShardingOptions);
// a Lister set before NewController to another registration of the type
// stays as it is, caching the type whole.
//
// A controller's name is unique among the manager's controllers. Added to
// a manager that runs already, the controller starts at once: on the
// leader only (once elected, behind the same fence), or on every replica
// in sharded mode, as a controller added before Start. Each type a watch
// registers itself is held by the controller (cache.TypeOptions.Owner is
// its name) until RemoveController, which stops the controller and
// releases them; a Lister you set before NewController stays yours.
func NewController(m *Manager, name string, r reconcile.Reconciler[reconcile.Request], options ...ControllerOption) (*controller.Controller[reconcile.Request], error) {
	if err := m.reserve(name); err != nil {
		return nil, err
	}
	b := &builder{m: m, name: name}
	mc, err := b.controller(r, options)
	if err != nil {
		for _, release := range b.release {
			release()
		}
		if mc != nil {
			if mc.ctl != nil {
				mc.ctl.Queue().ShutDown()
			}
			if mc.detach != nil {
				mc.detach()
			}
			mc.series.forget(name)
		}
		m.unreserve(name)
		return nil, err
	}
	m.weigh(name, b.weight)
	m.addController(mc)
	return mc.ctl, nil
}

// controller builds the controller NewController adds, and returns it
// (with what the builder took so far, for the caller to undo, on an
// error).
func (b *builder) controller(r reconcile.Reconciler[reconcile.Request], options []ControllerOption) (*managedController, error) {
	name := b.name
	r, err := b.watches(r, options)
	if err != nil {
		return nil, fmt.Errorf("manager: controller %q: %w", name, err)
	}
	opts := b.options()
	// In sharded mode a controller runs on every replica, leader or not:
	// its gate decides which keys it reconciles.
	mc := &managedController{name: name, leader: b.m.shard == nil, series: b.series, done: make(chan struct{})}
	attach, err := b.shard(&opts, mc)
	if err != nil {
		return mc, fmt.Errorf("manager: controller %q: %w", name, err)
	}
	c, err := controller.New(name, r, opts)
	if err != nil {
		return mc, fmt.Errorf("manager: %w", err)
	}
	mc.ctl = c
	if attach != nil {
		attach(c.Queue())
	}
	for _, build := range b.build {
		src, err := build(b)
		if err != nil {
			return mc, fmt.Errorf("manager: controller %q: %w", name, err)
		}
		if src == nil {
			continue // a source only sharded mode needs
		}
		if err := c.Watch(src); err != nil {
			return mc, fmt.Errorf("manager: %w", err)
		}
	}
	mc.release = b.release
	return mc, nil
}

// watches takes the options, registers the primary type and wraps r in
// the finalizer protocol if asked.
func (b *builder) watches(r reconcile.Reconciler[reconcile.Request], options []ControllerOption) (reconcile.Reconciler[reconcile.Request], error) {
	for _, o := range options {
		if err := o.add(b); err != nil {
			return nil, err
		}
	}
	if b.primary == nil {
		return nil, errors.New("no For watch: name the primary type with manager.For")
	}
	if err := b.register(b); err != nil {
		return nil, err
	}
	if b.finalize == nil {
		return r, nil
	}
	return b.finalize(b, r)
}

// options returns the controller's options, the manager's defaults filled
// in, with a Registerer that remembers the controller's series (b.series).
func (b *builder) options() controller.Options[reconcile.Request] {
	m := b.m
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
	b.series = &series{Registerer: opts.Registerer}
	opts.Registerer = b.series
	if opts.DrainTimeout == 0 {
		opts.DrainTimeout = m.opts.ShutdownTimeout
	}
	m.traceReconciles(&opts)
	return opts
}

// shard sets the controller's dispatch gate in sharded mode, and mc's
// detach, and returns the function that gives the gate the controller's
// queue; nil otherwise.
func (b *builder) shard(opts *controller.Options[reconcile.Request], mc *managedController) (func(*queue.Queue[reconcile.Request]), error) {
	if b.m.shard == nil {
		return nil, nil
	}
	if opts.Gate != nil {
		return nil, errors.New("controller.Options.Gate is set, and the manager is sharded (Options.Sharding), which sets the gate: leave controller.Options.Gate nil")
	}
	g, err := b.gate(b)
	if err != nil {
		return nil, err
	}
	opts.Gate = g
	mc.detach = g.Detach
	return g.Attach, nil
}

// bind returns the Lister a watch of T reads, and sets *l to it if l is
// not nil and *l is: in sharded mode, for a sharded watch, T registered
// with TypeOptions{Sharded: true, ShardKey: key} (shared by every watch
// sharding T by key); otherwise *l if set, or else T registered with the
// default TypeOptions. What it registers is held by the controller.
func bind[T cache.Object](b *builder, l **cache.Lister[T], key sharding.Key, sharded bool) (*cache.Lister[T], error) {
	have := deref(l)
	var opts cache.TypeOptions
	switch {
	case b.m.shard != nil && sharded:
		opts = cache.TypeOptions{Sharded: true, ShardKey: key}
	case have != nil:
		return have, nil
	}
	// The controller holds what it registers itself, until removed.
	opts.Owner = b.name
	got, err := cache.Register[T](b.m.cache, opts)
	if err != nil {
		return nil, err
	}
	b.release = append(b.release, got.Release)
	if l != nil && *l == nil {
		*l = got
	}
	return got, nil
}

// deref returns *l, or nil if l is nil.
func deref[T any](l **T) *T {
	if l == nil {
		return nil
	}
	return *l
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

// primaryGVK is the kind of a For watch: the bound Lister's, when set, so
// that a metadata or unstructured Lister of a kind known only at run time
// (cache.Metadata, cache.Unstructured) can be a controller's primary type;
// else T's, from the scheme.
func primaryGVK[T cache.Object](m *Manager, l **cache.Lister[T]) (schema.GroupVersionKind, error) {
	if l != nil && *l != nil {
		return (*l).GroupVersionKind(), nil
	}
	return gvkFor[T](m)
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
