package mirror

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// syncCopy makes namespace ns hold an up-to-date copy of src, whose content
// digest is sum. It reports false, writing nothing, when ns holds an
// object of that name that is not m's copy, and tells ns so.
//
// A copy is up to date when it carries sum (AnnotationContentHash) and is
// the version this process last wrote or read: an edit changes the
// resourceVersion. A copy this process has not seen in full since it
// started is fetched once to compare.
func (r *Reconciler) syncCopy(ctx context.Context, a actor, m *v1alpha1.Mirror, src client.Object, sum, ns string) (bool, error) {
	kind := m.Spec.Source.Kind
	key := copyKey{kind: kind, namespace: ns, name: src.GetName()}
	cur, err := r.Store.Meta(kind, ns, src.GetName())
	switch {
	case apierrors.IsNotFound(err):
		// Read-your-writes makes this reconcile see our own earlier
		// creates; AlreadyExists here is someone else's create that the
		// cache has not seen yet, and retries.
		r.written.forget(key)
		return true, r.create(ctx, a, m, src, sum, ns, "create")
	case err != nil:
		return false, err
	case !owned(cur, m):
		r.tell(m, cur)
		return false, nil
	case cur.GetAnnotations()[AnnotationContentHash] == sum && r.written.is(key, cur):
		return true, nil
	}
	var base metav1.Object = cur
	if cur.GetAnnotations()[AnnotationContentHash] == sum {
		full, same, err := r.compare(ctx, a, kind, cur, sum)
		if err != nil || same {
			return err == nil, err
		}
		base = full
	}
	return true, r.patch(ctx, a, m, src, sum, base)
}

// compare reads the copy cur in full, unless the Store holds it so, and
// reports whether it holds the content whose digest is sum, remembering it
// if so. It returns the copy read, whose data the caller must drop soon.
func (r *Reconciler) compare(ctx context.Context, a actor, kind string, cur client.Object, sum string) (client.Object, bool, error) {
	full := cur
	if _, ok := cur.(*metav1.PartialObjectMetadata); ok {
		r.fetching.Lock()
		defer r.fetching.Unlock()
		var err error
		if full, err = a.fetch(ctx, kind, cur.GetNamespace(), cur.GetName()); err != nil {
			return nil, false, fmt.Errorf("read %s %s/%s: %w", kind, cur.GetNamespace(), cur.GetName(), err)
		}
	}
	got, err := contentHash(full)
	if err != nil {
		return nil, false, reconcile.Terminal(err)
	}
	if got != sum || full.GetUID() != cur.GetUID() {
		return full, false, nil
	}
	r.written.remember(copyKey{kind: kind, namespace: full.GetNamespace(), name: full.GetName()}, full)
	return full, true, nil
}

// create writes a new copy of src into ns. The copy, and the API server's
// answer decoded into it, are dropped on return.
func (r *Reconciler) create(ctx context.Context, a actor, m *v1alpha1.Mirror, src client.Object, sum, ns, verb string) error {
	want, err := desired(src, ns, m, sum)
	if err != nil {
		return reconcile.Terminal(err)
	}
	if err := a.writer.Create(ctx, want); err != nil {
		return fmt.Errorf("%s %s %s/%s: %w", verb, m.Spec.Source.Kind, ns, want.GetName(), err)
	}
	r.written.remember(copyKey{kind: m.Spec.Source.Kind, namespace: ns, name: want.GetName()}, want)
	return nil
}

// patch puts src's content into the copy base (of which only the metadata
// is read) with a JSON patch, if base is still the version read, and asks
// for the answer as metadata only. A patch the API server finds invalid
// (a Secret's type changed, or someone made the copy immutable) replaces
// the copy.
func (r *Reconciler) patch(ctx context.Context, a actor, m *v1alpha1.Mirror, src client.Object, sum string, base metav1.Object) error {
	kind := m.Spec.Source.Kind
	body, err := contentPatch(base, src, sum)
	if err != nil {
		return reconcile.Terminal(err)
	}
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: base.GetNamespace(), Name: base.GetName()}}
	obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	err = a.writer.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, body))
	key := copyKey{kind: kind, namespace: base.GetNamespace(), name: base.GetName()}
	switch {
	case apierrors.IsInvalid(err):
		if err := r.deleteCopy(ctx, kind, base); err != nil {
			return err
		}
		return r.create(ctx, a, m, src, sum, base.GetNamespace(), "recreate")
	case err != nil:
		return fmt.Errorf("update %s %s/%s: %w", kind, base.GetNamespace(), base.GetName(), err)
	}
	r.written.remember(key, obj)
	return nil
}

// deleteCopies deletes the copies of the Mirror namespace/name except those
// in the namespaces keep holds.
func (r *Reconciler) deleteCopies(ctx context.Context, namespace, name string, keep map[string]bool) error {
	var errs []error
	for _, kind := range []string{v1alpha1.KindConfigMap, v1alpha1.KindSecret} {
		copies, err := r.Store.Copies(kind, namespace, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, c := range copies {
			if !keep[c.GetNamespace()] {
				errs = append(errs, r.deleteCopy(ctx, kind, c))
			}
		}
	}
	return errors.Join(errs...)
}

// deleteCopy deletes the copy c (of which only the metadata is read) if
// it is still the version read: same uid and resourceVersion. A copy
// changed since, perhaps adopted by its namespace's owner (its Mirror's
// labels removed) while a stale cache still lists it, is refused with a
// Conflict, retried: the reconcile after reads what it has become.
func (r *Reconciler) deleteCopy(ctx context.Context, kind string, c metav1.Object) error {
	obj, err := newObject(kind)
	if err != nil {
		return reconcile.Terminal(err)
	}
	obj.SetNamespace(c.GetNamespace())
	obj.SetName(c.GetName())
	uid, rv := c.GetUID(), c.GetResourceVersion()
	r.written.forget(copyKey{kind: kind, namespace: c.GetNamespace(), name: c.GetName()})
	err = r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s/%s: %w", kind, c.GetNamespace(), c.GetName(), err)
	}
	return nil
}

// tell records a Warning Event, in obj's namespace and about obj, that the
// Mirror m leaves obj alone: its namespace accepts m's copies, and an
// object there that someone else made is not overwritten. Each object is
// told once per Mirror while this process remembers it (told).
func (r *Reconciler) tell(m *v1alpha1.Mirror, obj client.Object) {
	if r.Recorder == nil || !r.told.first(obj.GetUID(), MirrorKey(m.Namespace, m.Name)) {
		return
	}
	ref := &corev1.ObjectReference{
		APIVersion: "v1", Kind: m.Spec.Source.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName(),
		UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion(),
	}
	r.Recorder.Eventf(ref, m, corev1.EventTypeWarning, EventMirrorConflict, "Sync",
		"Mirror %s/%s would copy its %s here, but this %s is not its copy: left untouched. Rename it, or remove the label %s from this namespace to refuse the Mirror's copies.",
		m.Namespace, m.Name, m.Spec.Source.Kind, m.Spec.Source.Kind, AcceptLabel(m.Namespace))
}

// copyKey names a copy.
type copyKey struct{ kind, namespace, name string }

// version is an object's uid and resourceVersion.
type version struct {
	uid             types.UID
	resourceVersion string
}

// written remembers, for each copy, the version this process last wrote
// or read in full, whose content it knows: one small entry per copy of
// the cluster's Mirrors, forgotten when the copy is deleted or found gone.
// Its zero value is empty and ready.
type written struct {
	mu sync.Mutex
	m  map[copyKey]version
}

func (w *written) remember(k copyKey, obj metav1.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[copyKey]version{}
	}
	w.m[k] = version{uid: obj.GetUID(), resourceVersion: obj.GetResourceVersion()}
}

// is reports whether obj is the version remembered of k.
func (w *written) is(k copyKey, obj metav1.Object) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.m[k]
	return ok && v.uid == obj.GetUID() && v.resourceVersion == obj.GetResourceVersion()
}

func (w *written) forget(k copyKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, k)
}

// toldSize bounds the conflicts told remembers: past it, the oldest is
// forgotten, and told again if it lasts.
const toldSize = 4096

// told remembers which objects were told of which Mirror's conflict
// (by uid: an object made again under the name is told again). Its zero
// value is empty and ready.
type told struct {
	mu    sync.Mutex
	cache *lru.Cache
}

type toldKey struct {
	uid    types.UID
	mirror string
}

// first reports whether uid has not been told of mirror yet, and
// remembers that it now has.
func (t *told) first(uid types.UID, mirror string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cache == nil {
		t.cache = lru.New(toldSize)
	}
	k := toldKey{uid: uid, mirror: mirror}
	if _, ok := t.cache.Get(k); ok {
		return false
	}
	t.cache.Add(k, struct{}{})
	return true
}
