package dispatch

import (
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/sharding"
	"github.com/opkit-dev/opkit/pkg/source"
)

// MaxUnknownRetries is how many times a Gate without a split cache
// (Options.Cache) retries, with the controller's backoff, a key whose slot
// it cannot tell, before it drops the key; with one it skips the key at
// once. With the default rate limiter that is about 5 s: ample for the
// primary type's informer to deliver an object whose key another watch
// queued first. A key still unknown then has no object in this replica's
// cache, nor in any other replica's that watches the same objects, so no
// replica can tell its slot: its drop is logged and counted.
const MaxUnknownRetries = 10

// DefaultTombstoneTTL is the default of GateOptions.TombstoneTTL.
const DefaultTombstoneTTL = 10 * time.Minute

// slotOf is a key's slot as a gate last saw it.
type slotOf struct {
	slot int
	// deleted is when the object's delete was seen; zero while it exists.
	// The slot is kept until the key is reconciled here, or for
	// GateOptions.TombstoneTTL while this replica does not hold the slot.
	deleted time.Time
}

// Gate is one controller's controller.Gate: it maps a key to its slot and
// asks the Dispatcher. Its methods are safe for concurrent use.
type Gate[T cache.Object] struct {
	d       *Dispatcher
	slots   sharding.Slots
	key     sharding.Key
	primary *cache.Lister[T]
	log     logr.Logger

	notHeld, unknown, dropped, notCached, fenced prometheus.Counter
	ttl                                          time.Duration
	clock                                        clock.Clock

	mu sync.Mutex
	// known maps the keys of primary objects the source has seen to their
	// slots, while the object exists and, once deleted, until its key has
	// been reconciled. Empty under sharding.ByNamespace.
	known  map[reconcile.Request]slotOf
	q      *queue.Queue[reconcile.Request] // set by Attach
	pruned time.Time                       // when tombstones were last pruned
}

var _ controller.Gate[reconcile.Request] = (*Gate[cache.Object])(nil)

// GateOptions configure NewGate.
type GateOptions struct {
	// Controller names the controller in metrics and logs. Required.
	Controller string
	// Slots is the slot count all replicas share. Defaults to one slot.
	Slots sharding.Slots
	// Key says what decides a key's slot. Defaults to sharding.ByUID.
	Key sharding.Key
	// Registerer receives imetrics.ShardingDispatchSkipped. Defaults to none.
	Registerer prometheus.Registerer
	// Logger logs keys dropped because their slot stays unknown. Defaults
	// to logr.Discard().
	Logger logr.Logger
	// TombstoneTTL is how long the gate keeps the slot of a deleted
	// object's key that it does not reconcile because another replica
	// holds the slot: long enough that the key is still queued if this
	// replica takes the slot over before the holder reconciled it, and
	// bounded, since the holder's reconcile is not seen here. Defaults to
	// DefaultTombstoneTTL.
	TombstoneTTL time.Duration
	// Clock measures TombstoneTTL. Defaults to the real clock.
	Clock clock.Clock
}

// NewGate returns the gate of a controller whose primary type's objects
// primary caches. Wrap the primary type's handler with Record, and Attach
// the controller's queue before the member runs.
func NewGate[T cache.Object](d *Dispatcher, primary *cache.Lister[T], opts GateOptions) (*Gate[T], error) {
	if d == nil || primary == nil {
		return nil, fmt.Errorf("dispatch: gate of controller %q: the Dispatcher and the primary Lister are required", opts.Controller)
	}
	skipped, err := newSkipped(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("dispatch: gate of controller %q: %w", opts.Controller, err)
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	if opts.TombstoneTTL <= 0 {
		opts.TombstoneTTL = DefaultTombstoneTTL
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Gate[T]{
		ttl:       opts.TombstoneTTL,
		clock:     opts.Clock,
		pruned:    opts.Clock.Now(),
		d:         d,
		slots:     opts.Slots,
		key:       opts.Key,
		primary:   primary,
		log:       opts.Logger.WithValues("controller", opts.Controller),
		notHeld:   skipped.WithLabelValues(opts.Controller, imetrics.SkippedNotHeld),
		unknown:   skipped.WithLabelValues(opts.Controller, imetrics.SkippedSlotUnknown),
		dropped:   skipped.WithLabelValues(opts.Controller, imetrics.SkippedSlotUnknownDropped),
		notCached: skipped.WithLabelValues(opts.Controller, imetrics.SkippedSlotNotCached),
		fenced:    skipped.WithLabelValues(opts.Controller, imetrics.SkippedFenced),
		known:     map[reconcile.Request]slotOf{},
	}, nil
}

// Attach gives the gate its controller's queue, on which Held queues the
// keys of slots gained, and registers it with the Dispatcher. Call it once,
// before the member runs.
func (g *Gate[T]) Attach(q *queue.Queue[reconcile.Request]) {
	g.mu.Lock()
	g.q = q
	g.mu.Unlock()
	g.d.addOwner(g)
}

// Detach takes the gate off the Dispatcher, once its controller has
// stopped for good: slots gained no longer queue its keys.
func (g *Gate[T]) Detach() { g.d.removeOwner(g) }

// Admit implements controller.Gate.
func (g *Gate[T]) Admit(key reconcile.Request, retries int) (controller.Verdict, func(requeued bool)) {
	slot, ok := g.slotOfKey(key)
	switch {
	case !ok && g.d.opts.Cache != nil:
		// A split cache holds every object of this replica's slots, and
		// hands the primary source an add for each, which queues its key;
		// a key whose object it lacks is another replica's, or its
		// object's add is on its way, or its slot is being cached (and
		// every key of it is queued once it is).
		g.notHeld.Inc()
		return controller.Skip, nil
	case !ok && retries < MaxUnknownRetries:
		g.unknown.Inc()
		return controller.Retry, nil
	case !ok:
		g.dropped.Inc()
		g.log.Info("Dropping a key whose slot stays unknown: its object is not in the cache, so no replica can tell who owns it",
			"namespace", key.Namespace, "name", key.Name, "retries", retries)
		return controller.Skip, nil
	}
	switch g.d.admit(slot) {
	case notHeld:
		g.notHeld.Inc()
		return controller.Skip, nil
	case fenced:
		g.fenced.Inc()
		return controller.Retry, nil
	case notCached:
		// Held, but the cache may not hold the slot's objects yet: a
		// reconcile now could read NotFound for an object that exists.
		g.notCached.Inc()
		return controller.Retry, nil
	}
	began := g.d.start()
	return controller.Admit, func(requeued bool) {
		g.d.finish(slot, began)
		if !requeued {
			g.reconciled(key)
		}
	}
}

// slotOfKey returns key's slot, or false if it cannot be told now.
func (g *Gate[T]) slotOfKey(key reconcile.Request) (int, bool) {
	if g.key == sharding.ByNamespace {
		return g.slots.OfValue(key.Namespace), true
	}
	g.mu.Lock()
	k, ok := g.known[key]
	g.mu.Unlock()
	if ok {
		return k.slot, true
	}
	obj, err := g.primary.Get(key.Namespace, key.Name)
	if err != nil {
		return 0, false
	}
	return g.slots.SlotOf(g.key, obj), true
}

// reconciled forgets the slot of a deleted object once its key has been
// reconciled without a requeue.
func (g *Gate[T]) reconciled(key reconcile.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if k, ok := g.known[key]; !ok || k.deleted.IsZero() {
		return
	}
	if _, err := g.primary.Get(key.Namespace, key.Name); apierrors.IsNotFound(err) {
		delete(g.known, key)
	}
}

// Record returns h, recording first the slot of each object it sees: the
// primary type's handler must be wrapped so, since a key's slot under
// sharding.ByUID or sharding.ByControllerOwner comes from its object.
func (g *Gate[T]) Record(h source.Handler[T, reconcile.Request]) source.Handler[T, reconcile.Request] {
	if g.key == sharding.ByNamespace {
		return h
	}
	return source.HandlerFunc[T, reconcile.Request](func(e source.Event[T], q *queue.Queue[reconcile.Request]) {
		key := reconcile.Request{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}
		k := slotOf{slot: g.slots.SlotOf(g.key, e.Object)}
		g.mu.Lock()
		if e.Type == source.Delete {
			k.deleted = g.clock.Now()
			g.prune(k.deleted)
		}
		g.known[key] = k
		g.mu.Unlock()
		h.Handle(e, q)
	})
}

// prune drops, at most every TombstoneTTL, the tombstones older than it
// whose slot this replica does not hold; g.mu held.
func (g *Gate[T]) prune(now time.Time) {
	if now.Sub(g.pruned) < g.ttl {
		return
	}
	g.pruned = now
	maps.DeleteFunc(g.known, func(_ reconcile.Request, k slotOf) bool {
		return !k.deleted.IsZero() && now.Sub(k.deleted) >= g.ttl && !g.d.holds(k.slot)
	})
}

// queueSlots queues the keys of held slots: every cached primary object's,
// and every deleted one's not yet reconciled.
func (g *Gate[T]) queueSlots(held map[int]bool) {
	objs, err := g.primary.List("", labels.Everything())
	if err != nil {
		g.log.Error(err, "Cannot list the primary type to take over slots; their keys are reconciled at their next event")
	}
	var keys []reconcile.Request
	for _, obj := range objs {
		if held[g.slots.SlotOf(g.key, obj)] {
			keys = append(keys, reconcile.Request{Namespace: obj.GetNamespace(), Name: obj.GetName()})
		}
	}
	g.mu.Lock()
	q := g.q
	for key, k := range g.known {
		if !k.deleted.IsZero() && held[k.slot] {
			keys = append(keys, key)
		}
	}
	g.mu.Unlock()
	if q == nil {
		return
	}
	for _, key := range keys {
		q.Add(key)
	}
}
