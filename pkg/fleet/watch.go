package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// Request is the key of a fleet controller: an object in a member.
type Request struct {
	// Cluster is the member's name (Member.Name).
	Cluster string
	reconcile.Request
}

// String returns "cluster/namespace/name", or "cluster/name" for a
// cluster-scoped object.
func (r Request) String() string { return r.Cluster + "/" + r.Request.String() }

// Tenant is the member: as controller.Options.Tenant, it makes the
// controller's queue serve members round-robin, so a member with a flood
// of events cannot delay another member's keys by more than one key each.
func (r Request) Tenant() string { return r.Cluster }

// NamespaceTenant is the namespace in the member, "member/namespace" (and
// "member/" for a cluster-scoped object): as controller.Options.Tenant,
// with TenantMember as its TenantGroup, it makes the controller's queue
// fair on two levels, across members first and then across each member's
// namespaces, so that neither a flooding member nor a flooding namespace
// in a member delays the others by more than a key each.
func (r Request) NamespaceTenant() string { return r.Cluster + "/" + r.Namespace }

// TenantMember is the member of a tenant NamespaceTenant names, for
// controller.Options.TenantGroup. A namespace holds no "/", so the member
// is what comes before the last one.
func TenantMember(tenant string) string {
	if i := strings.LastIndexByte(tenant, '/'); i >= 0 {
		return tenant[:i]
	}
	return tenant
}

// Handler turns an event of a member into keys on a queue, as
// source.Handler does for one cluster; cluster is the member's name. It is
// called on the member's informer goroutine and must not block.
type Handler[T cache.Object] interface {
	Handle(cluster string, e source.Event[T], q *queue.Queue[Request])
}

// HandlerFunc is a Handler that is a function.
type HandlerFunc[T cache.Object] func(cluster string, e source.Event[T], q *queue.Queue[Request])

// Handle calls h.
func (h HandlerFunc[T]) Handle(cluster string, e source.Event[T], q *queue.Queue[Request]) {
	h(cluster, e, q)
}

// EnqueueObject queues the object of each event, in its member.
func EnqueueObject[T cache.Object]() Handler[T] {
	return HandlerFunc[T](func(cluster string, e source.Event[T], q *queue.Queue[Request]) {
		source.Enqueue(e, q, Request{Cluster: cluster, Request: reconcile.Request{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}})
	})
}

// EnqueueMapped queues the keys fn maps each event's object to. fn is
// handed the member the object is in, and may map it to keys in any
// member (a hub object to its copies in every member, say).
func EnqueueMapped[T cache.Object](fn func(cluster string, obj T) []Request) Handler[T] {
	return HandlerFunc[T](func(cluster string, e source.Event[T], q *queue.Queue[Request]) {
		source.Enqueue(e, q, fn(cluster, e.Object)...)
	})
}

// memberHandler is a Handler bound to one member: a source.Handler.
type memberHandler[T cache.Object] struct {
	cluster string
	h       Handler[T]
}

func (m memberHandler[T]) Handle(e source.Event[T], q *queue.Queue[Request]) {
	m.h.Handle(m.cluster, e, q)
}

// Watch returns the Source of a type registered with the fleet: the
// events of the type in every member, engaged now or later, through the
// predicates, to h. Its Start returns at once and it has no sync to wait
// for: each member syncs on its own, and one that cannot does not hold
// back the controller or the other members.
func Watch[T cache.Object](l *Lister[T], h Handler[T], preds ...source.Predicate[T]) source.Source[Request] {
	return &watchSource[T]{lister: l, handler: h, preds: preds}
}

type watchSource[T cache.Object] struct {
	lister  *Lister[T]
	handler Handler[T]
	preds   []source.Predicate[T]

	once sync.Once
}

var errWatchStarted = errors.New("the source was started already")

func (w *watchSource[T]) Start(ctx context.Context, q *queue.Queue[Request]) error {
	if q == nil {
		return fmt.Errorf("start %s: the queue is nil", w)
	}
	started := false
	w.once.Do(func() { started = true })
	if !started {
		return fmt.Errorf("start %s: %w", w, errWatchStarted)
	}
	f := w.lister.fleet
	wt := &watching{life: ctx}
	wt.startOn = func(c *Cluster) { w.startOn(wt, c, q) }
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watches = append(f.watches, wt)
	for _, c := range f.members {
		wt.startOn(c)
	}
	context.AfterFunc(ctx, func() { f.unwatch(wt) })
	return nil
}

func (w *watchSource[T]) String() string { return "fleet watch of " + w.lister.reg.name }

// startOn starts the source on c, until c is disengaged or the watch's
// context ends. A member whose cache could not register the type is
// logged and skipped.
func (w *watchSource[T]) startOn(wt *watching, c *Cluster, q *queue.Queue[Request]) {
	log := w.lister.fleet.opts.Logger.WithValues("cluster", c.name, "source", w.String())
	l, err := inCluster[T](c, w.lister.reg)
	if err != nil {
		log.Error(err, "Cannot watch the member cluster")
		return
	}
	ctx, cancel := context.WithCancel(c.life)
	stop := context.AfterFunc(wt.life, cancel)
	context.AfterFunc(ctx, func() { stop() })
	if err := source.NewKind(l, memberHandler[T]{cluster: c.name, h: w.handler}, w.preds...).Start(ctx, q); err != nil {
		cancel()
		log.Error(err, "Cannot watch the member cluster")
	}
}

// watching is a started Watch: what starts it on each member engaged.
type watching struct {
	// life is the context the Watch was started with: the source's
	// lifetime, which its start on each member also ends with.
	life    context.Context
	startOn func(*Cluster) // called under the fleet's mu
}

// unwatch forgets w, whose context has ended.
func (f *Fleet) unwatch(w *watching) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.watches {
		if x == w {
			f.watches = append(f.watches[:i], f.watches[i+1:]...)
			return
		}
	}
}

type clusterKey struct{}

// ClusterFrom returns the member a Reconciler's request is in, which the
// reconciler that Reconciler returns puts in the context, or the member
// whose path a webhook that RegisterWebhooks serves was called on; nil
// elsewhere.
func ClusterFrom(ctx context.Context) *Cluster {
	c, _ := ctx.Value(clusterKey{}).(*Cluster)
	return c
}

// Reconciler returns r behind the fleet: each request is reconciled with
// its member in the context (ClusterFrom), under a context that also ends
// when the member is disengaged, with a cause wrapping ErrNotEngaged. A
// request whose member is not engaged is dropped, logged at V(1), not
// retried: its member went, and with it what the key named. A request
// whose member's API server did not answer the last probe (Cluster.Health)
// is not reconciled but requeued after Options.ProbeInterval, and a
// reconcile in flight when a probe finds its member unreachable has its
// context ended with a cause wrapping ErrUnreachable, so that no worker
// waits on a member that cannot answer while other members' keys queue.
// The context ends before the reconcile's requests to the member fail: a
// reconcile that sees its client's error finds the cause already set.
//
// In a sharded fleet, a request of a member another replica owns is
// dropped the same way (the owner's Watches queue its keys), and one of a
// member this replica holds while its renewals are late is requeued after
// ShardingOptions.RetryPeriod, not reconciled. A release of the member's
// slot waits for its reconciles in flight.
func Reconciler(f *Fleet, r reconcile.Reconciler[Request]) reconcile.Reconciler[Request] {
	return reconcile.Func[Request](func(ctx context.Context, req Request) (reconcile.Result, error) {
		c, err := f.Cluster(req.Cluster)
		if errors.Is(err, ErrNotEngaged) {
			f.opts.Logger.V(1).Info("Dropping the key of a member cluster not engaged", "cluster", req.Cluster, "namespace", req.Namespace, "name", req.Name)
			return reconcile.Done(), nil
		}
		if err != nil {
			return reconcile.RequeueAfter(f.shard.retry), nil
		}
		h, _ := c.reachable()
		switch {
		case !h.Reachable:
			return reconcile.RequeueAfter(f.opts.ProbeInterval), nil
		case !c.enter():
			return reconcile.Done(), nil
		}
		defer c.exit()
		if err := f.owned(c); err != nil {
			// Fenced or released between the two checks: as above.
			if errors.Is(err, ErrNotEngaged) {
				return reconcile.Done(), nil
			}
			return reconcile.RequeueAfter(f.shard.retry), nil
		}
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(c.life, func() {
			cancel(fmt.Errorf("cluster %q: %w", c.name, ErrNotEngaged))
		})
		defer stop()
		unwatch, ok := c.onUnreachable(cancel)
		if !ok { // unreachable since the check above
			return reconcile.RequeueAfter(f.opts.ProbeInterval), nil
		}
		defer unwatch()
		return r.Reconcile(context.WithValue(ctx, clusterKey{}, c), req)
	})
}
