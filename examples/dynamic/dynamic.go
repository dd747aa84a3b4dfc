package dynamic

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// The states a KindStatus reports.
const (
	StateWatching        = "Watching"
	StateSyncing         = "Syncing"
	StateCRDNotInstalled = "CRDNotInstalled"
	StateCRDDeleted      = "CRDDeleted"
	StateForbidden       = "Forbidden"
	StateError           = "Error"
)

// Operator runs the watchset controller, and one controller per kind that
// any WatchSet lists. Setup makes it.
type Operator struct {
	mgr       *manager.Manager
	client    client.Client
	watchSets *cache.Lister[*WatchSet] // shared with the cache: read, never modify

	mu sync.Mutex
	// kinds holds the metadata Lister of each kind whose controller runs:
	// a kind is here if and only if its controller was added and not yet
	// removed. Each Lister holds its kind in the controller's name.
	kinds map[schema.GroupVersionKind]*cache.Lister[*metav1.PartialObjectMetadata]

	// statusMu makes status writes one at a time, so that a write never
	// carries older counts than the write before it.
	statusMu sync.Mutex
}

// Setup adds the watchset controller to mgr, whose scheme must hold this
// package's types.
func Setup(mgr *manager.Manager) (*Operator, error) {
	o := &Operator{mgr: mgr, client: mgr.Writer("watchset"), kinds: map[schema.GroupVersionKind]*cache.Lister[*metav1.PartialObjectMetadata]{}}
	_, err := manager.NewController(mgr, "watchset", reconcile.Func[reconcile.Request](o.reconcileWatchSet), manager.For(&o.watchSets))
	return o, err
}

// reconcileWatchSet starts and stops the kinds' controllers to match every
// WatchSet's spec, then writes this WatchSet's status, again later while
// a kind is not watched yet (a CRD that is not installed sends no event
// when it is).
func (o *Operator) reconcileWatchSet(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if err := o.syncKinds(ctx); err != nil {
		return reconcile.Done(), err
	}
	ws, err := o.watchSets.Get(req.Namespace, req.Name)
	if err != nil {
		return reconcile.Done(), client.IgnoreNotFound(err)
	}
	watching, err := o.writeStatus(ctx, ws)
	if err != nil || watching {
		return reconcile.Done(), err
	}
	return reconcile.RequeueAfter(2 * time.Second), nil
}

// reconcileKind is gvk's controller: an object of the kind changed (or
// went), so the WatchSets of its namespace that list the kind count again.
func (o *Operator) reconcileKind(gvk schema.GroupVersionKind) reconcile.Func[reconcile.Request] {
	return func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		all, err := o.watchSets.List(req.Namespace, labels.Everything())
		if err != nil {
			return reconcile.Done(), fmt.Errorf("list WatchSets: %w", err)
		}
		var errs []error
		for _, ws := range all {
			if lists(ws, gvk) {
				_, err := o.writeStatus(ctx, ws)
				errs = append(errs, err)
			}
		}
		return reconcile.Done(), errors.Join(errs...)
	}
}

func lists(ws *WatchSet, gvk schema.GroupVersionKind) bool {
	for _, k := range ws.Spec.Kinds {
		if k.GVK() == gvk {
			return true
		}
	}
	return false
}

// syncKinds adds a controller for each kind some WatchSet lists that has
// none, and removes those of kinds no WatchSet lists any more.
func (o *Operator) syncKinds(ctx context.Context) error {
	all, err := o.watchSets.List("", labels.Everything())
	if err != nil {
		return fmt.Errorf("list WatchSets: %w", err)
	}
	want := map[schema.GroupVersionKind]bool{}
	for _, ws := range all {
		for _, k := range ws.Spec.Kinds {
			want[k.GVK()] = true
		}
	}
	var errs []error
	for gvk := range want {
		errs = append(errs, o.startKind(gvk))
	}
	o.mu.Lock()
	var gone []schema.GroupVersionKind
	for gvk := range o.kinds {
		if !want[gvk] {
			gone = append(gone, gvk)
		}
	}
	o.mu.Unlock()
	for _, gvk := range gone {
		errs = append(errs, o.stopKind(ctx, gvk))
	}
	return errors.Join(errs...)
}

// startKind holds gvk's metadata in a Lister owned by the kind's
// controller, and adds the controller to the running manager.
func (o *Operator) startKind(gvk schema.GroupVersionKind) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.kinds[gvk] != nil {
		return nil
	}
	name := ControllerName(gvk)
	l, err := cache.Metadata(o.mgr.Cache(), gvk, cache.TypeOptions{Owner: name})
	if err != nil {
		return fmt.Errorf("watch %s: %w", gvk, err)
	}
	if _, err := manager.NewController(o.mgr, name, o.reconcileKind(gvk), manager.For(&l)); err != nil {
		l.Release()
		return fmt.Errorf("add controller %s: %w", name, err)
	}
	o.kinds[gvk] = l
	return nil
}

// stopKind removes gvk's controller, then releases the Lister: the last
// hold on the kind gone, the cache stops its informers and drops its
// objects.
func (o *Operator) stopKind(ctx context.Context, gvk schema.GroupVersionKind) error {
	o.mu.Lock()
	l := o.kinds[gvk]
	delete(o.kinds, gvk)
	o.mu.Unlock()
	if l == nil {
		return nil
	}
	// Not under o.mu: the controller's reconciles in flight finish first,
	// and they read o.kinds.
	err := o.mgr.RemoveController(ctx, ControllerName(gvk), manager.Drop)
	l.Release()
	if err != nil {
		return fmt.Errorf("remove controller for %s: %w", gvk, err)
	}
	return nil
}

// writeStatus counts each kind of ws in its namespace and writes the
// status, if it changed; watching reports whether every kind is watched.
func (o *Operator) writeStatus(ctx context.Context, ws *WatchSet) (watching bool, err error) {
	o.statusMu.Lock()
	defer o.statusMu.Unlock()
	next := ws.DeepCopy() // the status to write, on a copy of the cached WatchSet
	next.Status.Kinds = nil
	watching = true
	for _, k := range ws.Spec.Kinds {
		ks := o.kindStatus(ws.Namespace, k)
		watching = watching && ks.State == StateWatching
		next.Status.Kinds = append(next.Status.Kinds, ks)
	}
	if err := o.client.Status().Patch(ctx, next, client.MergeFrom(ws)); err != nil {
		return false, fmt.Errorf("patch status of WatchSet %s/%s: %w", ws.Namespace, ws.Name, err)
	}
	return watching, nil
}

// kindStatus counts the objects of k in namespace and says how its watch
// fares, from Lister.Status.
func (o *Operator) kindStatus(namespace string, k Kind) KindStatus {
	ks := KindStatus{Group: k.Group, Version: k.Version, Kind: k.Kind, State: StateSyncing}
	o.mu.Lock()
	l := o.kinds[k.GVK()]
	o.mu.Unlock()
	if l == nil {
		return ks
	}
	st := l.Status()
	ks.State = state(st)
	if st.Err != nil {
		ks.Message = st.Err.Error()
	}
	sel, err := labels.Everything(), error(nil)
	if k.Selector != nil { // LabelSelectorAsSelector(nil) selects nothing
		sel, err = metav1.LabelSelectorAsSelector(k.Selector)
	}
	if err != nil {
		ks.State, ks.Message = StateError, fmt.Sprintf("selector: %v", err)
		return ks
	}
	if objs, err := l.List(namespace, sel); err == nil {
		ks.Count = len(objs)
	}
	return ks
}

func state(st cache.TypeStatus) string {
	switch {
	case errors.Is(st.Err, cache.ErrDeleted):
		return StateCRDDeleted
	case errors.Is(st.Err, cache.ErrNotInstalled):
		return StateCRDNotInstalled
	case apierrors.IsForbidden(st.Err):
		return StateForbidden
	case st.Err != nil:
		return StateError
	case !st.Synced:
		return StateSyncing
	}
	return StateWatching
}

// ControllerName is the name of gvk's controller, which also owns its
// Lister's hold (a key of cache.TypeStatus.Owners): "kind-configmap.v1",
// "kind-website.v1.example.opkit.dev".
func ControllerName(gvk schema.GroupVersionKind) string {
	name := "kind-" + strings.ToLower(gvk.Kind) + "." + gvk.Version
	if gvk.Group != "" {
		name += "." + gvk.Group
	}
	return name
}
