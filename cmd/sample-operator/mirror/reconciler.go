package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/pkg/conditions"
	"github.com/opkit-dev/opkit/pkg/finalizer"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/status"
)

// Reconciler brings one Mirror's copies in line with its source.
type Reconciler struct {
	Store    Store
	Client   client.Client        // writes
	Recorder events.EventRecorder // Events about Mirrors
}

var _ reconcile.Reconciler[reconcile.Request] = (*Reconciler)(nil)

// What the Reconciler, its caches and its Events use, and no more:
// test/deployed removes each verb in turn and shows what breaks
// (docs/rbac.md). Reads come from caches (watch; list is the fallback of
// the streaming list; get fetches a source, which the cache holds as
// metadata only until read), writes are creates, patches and deletes, never
// updates; patch on events is for client-go's Event series.
//
// +kubebuilder:rbac:groups=samples.opkit.dev,resources=mirrors,verbs=list;watch;patch
// +kubebuilder:rbac:groups=samples.opkit.dev,resources=mirrors/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	m, err := r.Store.Mirror(req.Namespace, req.Name)
	switch {
	case apierrors.IsNotFound(err):
		// Its finalizer normally removed the copies; this catches a
		// finalizer removed by hand.
		return reconcile.Done(), r.deleteCopies(ctx, req.Namespace, req.Name, nil)
	case err != nil:
		return reconcile.Done(), err
	}
	deleting, err := finalizer.Finalize(ctx, r.Client, m, Finalizer, func(ctx context.Context) error {
		return r.deleteCopies(ctx, m.Namespace, m.Name, nil)
	})
	if deleting || err != nil {
		return reconcile.Done(), err
	}
	selector, err := metav1.LabelSelectorAsSelector(&m.Spec.NamespaceSelector)
	if err != nil {
		err = fmt.Errorf("spec.namespaceSelector: %w", err)
		if rerr := r.report(ctx, m, outcome{reason: v1alpha1.ReasonInvalidSpec, message: err.Error()}); rerr != nil {
			return reconcile.Done(), rerr // retried: the status must say why
		}
		return reconcile.Done(), reconcile.Terminal(err)
	}
	src, err := r.Store.Object(ctx, m.Spec.Source.Kind, m.Namespace, m.Spec.Source.Name)
	if apierrors.IsNotFound(err) {
		msg := fmt.Sprintf("%s %s/%s not found; its copies are removed until it exists", m.Spec.Source.Kind, m.Namespace, m.Spec.Source.Name)
		return reconcile.Done(), errors.Join(r.deleteCopies(ctx, m.Namespace, m.Name, nil), r.report(ctx, m, outcome{reason: v1alpha1.ReasonSourceNotFound, message: msg}))
	}
	if err != nil {
		// The source is fetched on demand (a 403 without get on it, say):
		// retried, and the status says why meanwhile.
		err = fmt.Errorf("read source: %w", err)
		return reconcile.Done(), errors.Join(err, r.report(ctx, m, outcome{reason: v1alpha1.ReasonSyncFailed, message: truncate(err.Error(), maxMessage)}))
	}
	out, syncErr := r.sync(ctx, m, src, selector)
	return reconcile.Done(), errors.Join(syncErr, r.report(ctx, m, out))
}

// outcome is what a reconcile found, for the status.
type outcome struct {
	reason    string
	message   string
	synced    int32
	conflicts []string
}

// sync writes a copy of src into every selected namespace and deletes the
// copies in namespaces no longer selected.
func (r *Reconciler) sync(ctx context.Context, m *v1alpha1.Mirror, src client.Object, selector labels.Selector) (outcome, error) {
	nss, err := r.Store.Namespaces(selector)
	if err != nil {
		return outcome{}, err
	}
	out := outcome{reason: v1alpha1.ReasonSynced}
	keep := map[string]bool{}
	var errs []error
	for _, ns := range nss {
		if ns.Name == m.Namespace || ns.Status.Phase == corev1.NamespaceTerminating {
			continue
		}
		keep[ns.Name] = true
		ok, err := r.syncCopy(ctx, m, src, ns.Name)
		switch {
		case err != nil:
			errs = append(errs, err)
		case ok:
			out.synced++
		default:
			out.conflicts = append(out.conflicts, ns.Name)
		}
	}
	errs = append(errs, r.deleteCopies(ctx, m.Namespace, m.Name, keep))
	err = errors.Join(errs...)
	switch {
	case err != nil && !transient(err):
		// Retried with backoff; the status says why meanwhile.
		out.reason = v1alpha1.ReasonSyncFailed
		out.message = truncate(fmt.Sprintf("copied into %d namespaces; failed: %v", out.synced, err), maxMessage)
	case len(out.conflicts) > 0:
		slices.Sort(out.conflicts)
		out.reason = v1alpha1.ReasonConflict
		out.message = fmt.Sprintf("%s %q exists in %s and is not a copy of this Mirror; left untouched",
			m.Spec.Source.Kind, src.GetName(), strings.Join(out.conflicts, ", "))
	default:
		out.message = fmt.Sprintf("copied into %d namespaces", out.synced)
	}
	return out, err
}

// transient reports whether every error in err is a write race that the
// retry resolves by itself: another writer changed or created the object
// before the cache saw it (409, already exists). Those do not make the
// Mirror unready.
func transient(err error) bool {
	if multi, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range multi.Unwrap() {
			if !transient(e) {
				return false
			}
		}
		return true
	}
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
}

// maxMessage bounds a condition's message, which the API allows up to 32Ki
// characters: a failure in every namespace would say the same thing often.
const maxMessage = 1024

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// syncCopy makes namespace ns hold an up-to-date copy of src. It reports
// false, writing nothing, when ns holds an object of that name that is not
// m's copy.
func (r *Reconciler) syncCopy(ctx context.Context, m *v1alpha1.Mirror, src client.Object, ns string) (bool, error) {
	want, err := desired(src, ns, m)
	if err != nil {
		return false, reconcile.Terminal(err)
	}
	cur, err := r.Store.Object(ctx, m.Spec.Source.Kind, ns, src.GetName())
	switch {
	case apierrors.IsNotFound(err):
		// Read-your-writes makes this reconcile see our own earlier
		// creates; AlreadyExists here is someone else's create that the
		// cache has not seen yet, and retries.
		if err := r.Client.Create(ctx, want); err != nil {
			return false, fmt.Errorf("create %s %s/%s: %w", m.Spec.Source.Kind, ns, want.GetName(), err)
		}
		return true, nil
	case err != nil:
		return false, err
	case !owned(cur, m):
		return false, nil
	case inSync(cur, want):
		return true, nil
	case !sameType(cur, want):
		// A Secret's type is immutable: replace the copy.
		if err := r.deleteCopy(ctx, cur); err != nil {
			return false, err
		}
		if err := r.Client.Create(ctx, want); err != nil {
			return false, fmt.Errorf("recreate %s %s/%s: %w", m.Spec.Source.Kind, ns, want.GetName(), err)
		}
		return true, nil
	}
	patch := client.MergeFromWithOptions(cur, client.MergeFromWithOptimisticLock{})
	if err := r.Client.Patch(ctx, withContent(cur, want), patch); err != nil {
		return false, fmt.Errorf("update %s %s/%s: %w", m.Spec.Source.Kind, ns, want.GetName(), err)
	}
	return true, nil
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
				errs = append(errs, r.deleteCopy(ctx, c))
			}
		}
	}
	return errors.Join(errs...)
}

// deleteCopy deletes c if it is still the object the cache saw.
func (r *Reconciler) deleteCopy(ctx context.Context, c client.Object) error {
	uid := c.GetUID()
	err := r.Client.Delete(ctx, c, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s/%s: %w", c.GetNamespace(), c.GetName(), err)
	}
	return nil
}

// report writes the status, if it changed, and records a Warning Event for a
// failure the Ready condition does not report yet.
func (r *Reconciler) report(ctx context.Context, m *v1alpha1.Mirror, out outcome) error {
	ready := metav1.ConditionTrue
	if out.reason != v1alpha1.ReasonSynced {
		ready = metav1.ConditionFalse
	}
	old := apimeta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionReady)
	if ready == metav1.ConditionFalse && (old == nil || old.Reason != out.reason || old.Message != out.message) && r.Recorder != nil {
		r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, out.reason, "Sync", "%s", out.message)
	}
	_, err := status.Patch(ctx, r.Client, m, func(m *v1alpha1.Mirror) {
		m.Status.ObservedGeneration = m.Generation
		m.Status.SyncedNamespaces = out.synced
		m.Status.ConflictingNamespaces = out.conflicts
		conditions.Set(&m.Status.Conditions, m, metav1.Condition{
			Type: v1alpha1.ConditionReady, Status: ready, Reason: out.reason, Message: out.message,
		})
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
