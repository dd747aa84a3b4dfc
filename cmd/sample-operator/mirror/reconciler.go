package mirror

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	mirrorac "github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1/applyconfiguration/api/v1alpha1"
	"github.com/opkit-dev/opkit/pkg/conditions"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// Reconciler brings one Mirror's copies in line with its source. It is
// safe for concurrent use by several workers: it reconciles different
// Mirrors at once.
type Reconciler struct {
	Store    Store
	Client   client.Client        // writes status, finalizers, and deletes of copies, with a field owner (mgr.Writer names one)
	Recorder events.EventRecorder // Events about Mirrors and the objects they leave alone
	Policy   Policy               // where copies may go, and of what
	// ActAs returns the client that reads a Mirror's source and writes
	// its copies as the Mirror's ServiceAccount (manager.Manager.WriterAs), so
	// that the API server authorizes each of those requests as it: the
	// operator never does for a Mirror what its ServiceAccount could not.
	// Nil: sources are read through Store and copies written with Client,
	// as the operator itself (the benchmarks' controller-runtime twin).
	ActAs func(m *v1alpha1.Mirror) client.Client

	// written remembers what this process last wrote or read of each copy.
	written written
	// told remembers the conflicts told to their namespace.
	told told
	// pin, when Policy.IdentityPolicy is set, tells whether the policy
	// that pins a Mirror's ServiceAccount is in force.
	pin *identityPin
	// fetching lets one copy be fetched at a time: after a restart every
	// copy is fetched once, and each may be as large as its source.
	fetching sync.Mutex
}

var _ reconcile.Reconciler[reconcile.Request] = (*Reconciler)(nil)

// What the Reconciler, its caches and its Events use as the operator
// itself, and no more: test/deployed removes each verb in turn and shows
// what breaks (docs/rbac.md). Reads of Mirrors, namespaces and the
// metadata of ConfigMaps and Secrets come from caches (watch; list is the
// fallback of the streaming list); sources and copies are read and written
// as each Mirror's ServiceAccount, with that ServiceAccount's
// permissions, so the operator itself never gets or writes their data. It
// deletes copies itself (a removal does nothing for anyone, and an
// admission policy lets the operator touch only copies), so that a Mirror
// whose ServiceAccount lost its permissions can still be deleted. The
// right to act as a ServiceAccount (impersonate) is not here: each
// namespace's owner grants it, for its ServiceAccount by name
// (docs/mirror-tenancy.md). Patch on events is for client-go's Event
// series; Events go into any namespace: a conflict is told to the
// namespace of the object left alone.
//
// +kubebuilder:rbac:groups=samples.opkit.dev,resources=mirrors,verbs=list;watch;patch
// +kubebuilder:rbac:groups=samples.opkit.dev,resources=mirrors/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=list;watch;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile implements reconcile.Reconciler. The controller (Setup) hands
// it Mirrors that hold Finalizer and are not being deleted, and those it
// no longer finds; Cleanup runs for those being deleted.
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
	if r.pin != nil {
		if err := r.pin.check(); err != nil {
			// A change of the binding or policy queues every Mirror.
			return reconcile.Done(), r.report(ctx, m, outcome{reason: v1alpha1.ReasonIdentityUnpinned, message: err.Error()})
		}
	}
	selector, err := metav1.LabelSelectorAsSelector(&m.Spec.NamespaceSelector)
	if err != nil {
		err = fmt.Errorf("spec.namespaceSelector: %w", err)
		if rerr := r.report(ctx, m, outcome{reason: v1alpha1.ReasonInvalidSpec, message: err.Error()}); rerr != nil {
			return reconcile.Done(), rerr // retried: the status must say why
		}
		return reconcile.Done(), reconcile.Terminal(err)
	}
	a := r.actor(m)
	src, err := a.read(ctx, m.Spec.Source.Kind, m.Namespace, m.Spec.Source.Name)
	if apierrors.IsNotFound(err) {
		msg := fmt.Sprintf("%s %s/%s not found; its copies are removed until it exists", m.Spec.Source.Kind, m.Namespace, m.Spec.Source.Name)
		return reconcile.Done(), errors.Join(r.deleteCopies(ctx, m.Namespace, m.Name, nil), r.report(ctx, m, outcome{reason: v1alpha1.ReasonSourceNotFound, message: msg}))
	}
	if err != nil {
		// The source is fetched on demand (a 403 without get on it, say):
		// retried, and the status says why meanwhile.
		err = fmt.Errorf("read source: %w", err)
		return reconcile.Done(), errors.Join(err, r.report(ctx, m, outcome{reason: v1alpha1.ReasonSyncFailed, message: truncate(refusal(m, err), maxMessage)}))
	}
	if err := r.Policy.CheckSource(src); err != nil {
		// Not retried: a change of the source or of the Mirror queues it
		// again.
		return reconcile.Done(), errors.Join(r.deleteCopies(ctx, m.Namespace, m.Name, nil), r.report(ctx, m, outcome{reason: v1alpha1.ReasonSourceRefused, message: err.Error()}))
	}
	out, syncErr := r.sync(ctx, a, m, src, selector)
	return reconcile.Done(), errors.Join(syncErr, r.report(ctx, m, out))
}

// Cleanup deletes the copies of m, which is being deleted, before the
// controller removes Finalizer from it.
func (r *Reconciler) Cleanup(ctx context.Context, m *v1alpha1.Mirror) error {
	return r.deleteCopies(ctx, m.Namespace, m.Name, nil)
}

// outcome is what a reconcile found, for the status. It counts
// namespaces and never names them (see v1alpha1.MirrorStatus).
type outcome struct {
	reason    string
	message   string
	synced    int32
	conflicts int32
}

// sync writes a copy of src into every target of m (Policy.Targets) and
// deletes the copies in the other namespaces.
func (r *Reconciler) sync(ctx context.Context, a actor, m *v1alpha1.Mirror, src client.Object, selector labels.Selector) (outcome, error) {
	nss, err := r.Store.Namespaces(selector)
	if err != nil {
		return outcome{}, err
	}
	sum, err := contentHash(src)
	if err != nil {
		return outcome{}, reconcile.Terminal(err)
	}
	targets, limited := r.Policy.Targets(m, selector, nss)
	out := outcome{reason: v1alpha1.ReasonSynced}
	keep := make(map[string]bool, len(targets))
	var errs []error
	for _, ns := range targets {
		keep[ns] = true
		ok, err := r.syncCopy(ctx, a, m, src, sum, ns)
		switch {
		case err != nil:
			errs = append(errs, err)
		case ok:
			out.synced++
		default:
			out.conflicts++
		}
	}
	errs = append(errs, r.deleteCopies(ctx, m.Namespace, m.Name, keep))
	err = errors.Join(errs...)
	out.reason, out.message = r.verdict(m, src, out, limited, err)
	return out, err
}

// verdict returns the Ready condition's reason and message for what sync
// did. A failure wins over a cap reached, which wins over a conflict:
// each is reported until it is gone. The message names no namespace.
func (r *Reconciler) verdict(m *v1alpha1.Mirror, src client.Object, out outcome, limited bool, err error) (reason, message string) {
	var conflicts string
	if out.conflicts > 0 {
		conflicts = fmt.Sprintf("; %d namespaces hold a %s %q that is not a copy of this Mirror, left untouched (each is told by an Event)",
			out.conflicts, m.Spec.Source.Kind, src.GetName())
	}
	switch {
	case err != nil && !transient(err):
		// Retried with backoff; the status says why meanwhile, without the
		// errors, which name namespaces: the log has them.
		return v1alpha1.ReasonSyncFailed, fmt.Sprintf("copied into %d namespaces; %s (the operator's log has the errors)%s", out.synced, failures(err), conflicts)
	case limited:
		n := r.Policy.maxTargets()
		return v1alpha1.ReasonTooManyTargets, fmt.Sprintf("more than %d namespaces match and accept copies of this Mirror: copied into the first %d by name, %d up to date, the operator's --max-targets being %d%s; narrow spec.namespaceSelector",
			n, n, out.synced, n, conflicts)
	case out.conflicts > 0:
		return v1alpha1.ReasonConflict, fmt.Sprintf("copied into %d namespaces%s", out.synced, conflicts)
	}
	return v1alpha1.ReasonSynced, fmt.Sprintf("copied into %d namespaces", out.synced)
}

// transient reports whether every error in err is a race that the retry
// resolves by itself: another writer changed, created or deleted the
// object before the cache saw it (409, already exists, not found). Those
// do not make the Mirror unready.
func transient(err error) bool {
	if multi, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range multi.Unwrap() {
			if !transient(e) {
				return false
			}
		}
		return true
	}
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err)
}

// failures summarises err, joined errors of writes, by their reasons, and
// for a Forbidden one the verb and resource refused, naming no object,
// namespace or user: `2 writes failed: Forbidden (cannot create resource
// "configmaps")`.
func failures(err error) string {
	var reasons []string
	n := 0
	for _, e := range flatten(err) {
		if transient(e) {
			continue
		}
		n++
		reason := string(apierrors.ReasonForError(e))
		switch {
		case reason == "":
			reason = "error"
		case apierrors.IsForbidden(e):
			if refused := forbiddenVerb.FindString(e.Error()); refused != "" {
				reason += " (" + refused + ")"
			}
		}
		if !slices.Contains(reasons, reason) {
			reasons = append(reasons, reason)
		}
	}
	slices.Sort(reasons)
	return fmt.Sprintf("%d writes failed: %s", n, strings.Join(reasons, ", "))
}

// forbiddenVerb finds, in the API server's message of a 403, the verb and
// resource refused; what follows names the namespace.
var forbiddenVerb = regexp.MustCompile(`cannot [a-z]+ resource "[^"]*"`)

// flatten returns the errors joined in err, at any depth.
func flatten(err error) []error {
	multi, ok := err.(interface{ Unwrap() []error })
	if !ok {
		if err == nil {
			return nil
		}
		return []error{err}
	}
	var out []error
	for _, e := range multi.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
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
	// The whole status, applied: the writer skips an apply that would
	// change nothing.
	st := mirrorac.MirrorStatus().WithObservedGeneration(m.Generation).
		WithSyncedNamespaces(out.synced).WithConflicts(out.conflicts).
		WithConditions(conditions.ForApply(m.Status.Conditions, m, metav1.Condition{
			Type: v1alpha1.ConditionReady, Status: ready, Reason: out.reason, Message: out.message,
		}))
	err := r.Client.Status().Apply(ctx, mirrorac.Mirror(m.Name, m.Namespace).WithStatus(st))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
