package mirror

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/webhook"
	"github.com/opkit-dev/opkit/pkg/webhook/requester"
)

// The webhook configurations 'make manifests' writes to
// config/webhook/manifests.yaml. The paths are webhook.MutatePath and
// webhook.ValidatePath of samples.opkit.dev/v1alpha1 Mirror (a test checks
// it). Only v1alpha1 is hooked: the API server converts a v1beta1 request
// to v1alpha1 before calling them (matchPolicy Equivalent). Status writes
// are not hooked: the operator's own writes must not depend on the hooks.
//
// +kubebuilder:webhook:path=/mutate-samples-opkit-dev-v1alpha1-mirror,mutating=true,failurePolicy=fail,sideEffects=None,groups=samples.opkit.dev,resources=mirrors,verbs=create;update,versions=v1alpha1,name=default.mirrors.samples.opkit.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-samples-opkit-dev-v1alpha1-mirror,mutating=false,failurePolicy=fail,sideEffects=None,groups=samples.opkit.dev,resources=mirrors,verbs=create;update,versions=v1alpha1,name=validate.mirrors.samples.opkit.dev,admissionReviewVersions=v1

// What the hooks read, live from the API server: lists (by name, with a
// field selector, for a source), the verb the controller's cache already
// needs; and what they ask: SubjectAccessReviews for the requester, which
// the manager's metrics authentication needs too.
//
// +kubebuilder:rbac:groups="",resources=configmaps;secrets;namespaces,verbs=list
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// SetupWebhooks serves the Mirror's webhooks on m's webhook server: the
// Defaulter and the Validator, for v1alpha1 Mirrors, reading through
// m.Client() and checking the requester's permissions with
// SubjectAccessReviews (package requester), the Validator against policy,
// which must be the Policy the controller copies by; and the conversion
// between v1alpha1 (the hub, and the storage version) and v1beta1 at
// webhook.ConversionPath. m's scheme must hold both versions, and m must
// have a webhook server (manager.Options.Webhook.Port).
func SetupWebhooks(m *manager.Manager, policy Policy) error {
	check, err := requester.New(m.Client(), requester.Options{MaxPermissions: maxPermissions(policy)})
	if err == nil {
		err = webhook.Register(m, webhook.Hooks[*v1alpha1.Mirror]{
			Defaulter: &Defaulter{Reader: m.Client(), Requester: check},
			Validator: &Validator{Reader: m.Client(), Requester: check, Policy: policy},
		})
	}
	if err == nil {
		// v1beta1.Mirror converts through its ConvertTo and ConvertFrom.
		err = webhook.RegisterConversion(m, webhook.Conversion[*v1alpha1.Mirror]{})
	}
	if err != nil {
		return fmt.Errorf("set up the mirror webhooks: %w", err)
	}
	return nil
}

// maxPermissions is the most the Validator asks for one Mirror: get its
// source, and each of copyVerbs in each of at most MaxTargets namespaces.
func maxPermissions(policy Policy) int { return 1 + len(copyVerbs)*policy.maxTargets() }

var mirrorGK = v1alpha1.GroupVersion.WithKind("Mirror").GroupKind()

var (
	kindPath     = field.NewPath("spec", "source", "kind")
	namePath     = field.NewPath("spec", "source", "name")
	selectorPath = field.NewPath("spec", "namespaceSelector")
)

// Defaulter sets an omitted spec.source.kind from what exists in the
// Mirror's namespace: ConfigMap if only a ConfigMap of the source's name
// exists, Secret if only a Secret does. Neither, or both, refuses the
// Mirror with a field error on spec.source.kind saying to set it. The kind
// is never changed once set.
//
// It tells the requester only what they could read themselves: it looks
// only if they may get both a ConfigMap and a Secret of the source's name
// in the Mirror's namespace, and otherwise refuses with 403 naming what
// they lack, the same whether either exists or not.
type Defaulter struct {
	// Reader reads ConfigMaps and Secrets, from the API server rather than
	// a cache, so a source created just before its Mirror is seen.
	Reader client.Reader
	// Requester checks the requester's permissions; required.
	Requester *requester.Checker
}

var _ webhook.Defaulter[*v1alpha1.Mirror] = (*Defaulter)(nil)

// Default implements webhook.Defaulter.
func (d *Defaulter) Default(ctx context.Context, m *v1alpha1.Mirror) error {
	if m.Spec.Source.Kind != "" {
		return nil
	}
	ns, err := namespaceOf(ctx, m)
	if err != nil {
		return err
	}
	name := m.Spec.Source.Name
	err = d.Requester.Check(ctx,
		requester.Permission{Verb: "get", Resource: "configmaps", Namespace: ns, Name: name},
		requester.Permission{Verb: "get", Resource: "secrets", Namespace: ns, Name: name})
	if denied := (*requester.DeniedError)(nil); errors.As(err, &denied) {
		st := denied.Status()
		st.Message += "; to default spec.source.kind the webhook looks for both kinds, so set it to the kind to copy instead"
		return &apierrors.StatusError{ErrStatus: st}
	}
	if err != nil {
		return fmt.Errorf("default spec.source.kind: %w", err)
	}
	cmObj, err := lookup(ctx, d.Reader, v1alpha1.KindConfigMap, ns, name)
	if err != nil {
		return fmt.Errorf("default spec.source.kind: %w", err)
	}
	secObj, err := lookup(ctx, d.Reader, v1alpha1.KindSecret, ns, name)
	if err != nil {
		return fmt.Errorf("default spec.source.kind: %w", err)
	}
	cm, sec := cmObj != nil, secObj != nil
	switch {
	case cm && sec:
		return invalid(m, field.Required(kindPath, fmt.Sprintf(
			"both a ConfigMap and a Secret named %q exist in namespace %s: set it to the one to copy", name, ns)))
	case cm:
		m.Spec.Source.Kind = v1alpha1.KindConfigMap
	case sec:
		m.Spec.Source.Kind = v1alpha1.KindSecret
	default:
		return invalid(m, field.Required(kindPath, fmt.Sprintf(
			"neither a ConfigMap nor a Secret named %q exists in namespace %s: set it to ConfigMap or Secret", name, ns)))
	}
	return nil
}

// Validator refuses what the requester may not have the operator do for
// them, and what would make copies loop or break, and warns about what
// makes no copies:
//
//   - On create, and on update when the spec changes, the requester (the
//     user who sends the request) must be allowed to get the source (by
//     name, in the Mirror's namespace) and, in each namespace the Mirror
//     copies into now (Policy.Targets of the namespaces its selector
//     matches, listed live), to create, patch and delete objects of the
//     source's kind (patch and delete by the source's name), the writes
//     the operator makes to a copy. Otherwise it refuses with 403 naming
//     the user and each missing permission.
//   - Then, on create, and on update when the source changes: a source
//     that is itself a Mirror's copy (it has LabelMirrorNamespace and
//     LabelMirrorName) is refused on spec.source.name, since chained
//     copies can loop, and so is a source Policy.CheckSource refuses (a
//     Secret of a type the cluster acts on), naming the flag that allows
//     it. A source that does not exist yet is allowed.
//   - On update, changing a set spec.source.kind is refused: every copy
//     would be replaced by an object of another kind under the same name.
//   - A selector that cannot be parsed is refused on spec.namespaceSelector.
//   - Warnings: on create, and on update when the selector changes, when
//     the selector matches no namespace that accepts copies, and when
//     more namespaces accept copies than Policy.MaxTargets; on update,
//     when the source changes, since every copy is replaced.
//
// Deletes are allowed.
//
// The verbs asked are those the operator writes a copy with (create,
// patch, delete), so that the requester is trusted with exactly what the
// operator will do for them; update, which it never uses, is not asked.
// An operator that writes with update, or applies (a patch), asks for the
// verbs it uses. They are asked once, at admission: a namespace that opts
// in later consents by its label, and a permission revoked later is not
// seen until the spec changes again.
type Validator struct {
	// Reader reads ConfigMaps, Secrets and Namespaces, from the API server
	// rather than a cache.
	Reader client.Reader
	// Requester checks the requester's permissions; required. Its
	// Options.MaxPermissions must allow 1+3*Policy.MaxTargets of them.
	Requester *requester.Checker
	// Policy says which namespaces a Mirror copies into and which sources
	// may be copied; the controller's own.
	Policy Policy
}

var _ webhook.Validator[*v1alpha1.Mirror] = (*Validator)(nil)

// copyVerbs are the verbs of the operator's writes of a copy, which the
// requester must hold in each target namespace: create it, patch it back
// to its source, delete it when its namespace or Mirror goes.
var copyVerbs = []string{"create", "patch", "delete"}

// ValidateCreate implements webhook.Validator.
func (v *Validator) ValidateCreate(ctx context.Context, m *v1alpha1.Mirror) (webhook.Warnings, error) {
	m, r, err := v.authorized(ctx, m)
	if err != nil {
		return nil, err
	}
	if err := v.checkSource(ctx, m); err != nil {
		return nil, err
	}
	return v.warnings(m, r), nil
}

// ValidateUpdate implements webhook.Validator.
func (v *Validator) ValidateUpdate(ctx context.Context, old, m *v1alpha1.Mirror) (webhook.Warnings, error) {
	o, n := old.Spec.Source, m.Spec.Source
	if o.Kind != "" && n.Kind != o.Kind {
		return nil, invalid(m, field.Forbidden(kindPath, fmt.Sprintf(
			"cannot change from %s to %s: delete the Mirror and create it again", o.Kind, n.Kind)))
	}
	if apiequality.Semantic.DeepEqual(old.Spec, m.Spec) {
		return nil, nil // metadata: the operator's finalizer, say
	}
	m, r, err := v.authorized(ctx, m)
	if err != nil {
		return nil, err
	}
	var warnings webhook.Warnings
	if n != o {
		if err := v.checkSource(ctx, m); err != nil {
			return nil, err
		}
		warnings = append(warnings, fmt.Sprintf("spec.source changed from %s %q to %s %q: every copy will be replaced",
			o.Kind, o.Name, n.Kind, n.Name))
	}
	if !apiequality.Semantic.DeepEqual(old.Spec.NamespaceSelector, m.Spec.NamespaceSelector) {
		warnings = append(warnings, v.warnings(m, r)...)
	}
	return warnings, nil
}

// ValidateDelete implements webhook.Validator.
func (v *Validator) ValidateDelete(context.Context, *v1alpha1.Mirror) (webhook.Warnings, error) {
	return nil, nil
}

// reach is where a Mirror copies to now.
type reach struct {
	// targets are those Policy.Targets allows, at most MaxTargets;
	// limited says there were more.
	targets []string
	limited bool
}

// authorized returns m in the request's namespace (its namespace set when
// the object omits it) and where it copies to now, once the requester is
// found allowed to have it copied there. It refuses a selector that cannot
// be parsed.
func (v *Validator) authorized(ctx context.Context, m *v1alpha1.Mirror) (*v1alpha1.Mirror, reach, error) {
	ns, err := namespaceOf(ctx, m)
	if err != nil {
		return nil, reach{}, err
	}
	if m.Namespace == "" {
		m = m.DeepCopy()
		m.Namespace = ns
	}
	sel, err := metav1.LabelSelectorAsSelector(&m.Spec.NamespaceSelector)
	if err != nil {
		return nil, reach{}, invalid(m, field.Invalid(selectorPath, m.Spec.NamespaceSelector, err.Error()))
	}
	var list corev1.NamespaceList
	if err := v.Reader.List(ctx, &list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, reach{}, fmt.Errorf("list the namespaces spec.namespaceSelector matches: %w", err)
	}
	nss := make([]*corev1.Namespace, len(list.Items))
	for i := range list.Items {
		nss[i] = &list.Items[i]
	}
	var r reach
	r.targets, r.limited = v.Policy.Targets(m, sel, nss)
	if err := v.authorize(ctx, m, r.targets); err != nil {
		return nil, reach{}, err
	}
	return m, r, nil
}

// authorize checks that the requester may get m's source and write its
// copies in each of targets; m's kind is checked by the schema.
func (v *Validator) authorize(ctx context.Context, m *v1alpha1.Mirror, targets []string) error {
	resource, ok := resources[m.Spec.Source.Kind]
	if !ok {
		return nil // no kind: the controller copies nothing
	}
	name := m.Spec.Source.Name
	perms := make([]requester.Permission, 0, 1+len(copyVerbs)*len(targets))
	perms = append(perms, requester.Permission{Verb: "get", Resource: resource, Namespace: m.Namespace, Name: name})
	for _, ns := range targets {
		for _, verb := range copyVerbs {
			p := requester.Permission{Verb: verb, Resource: resource, Namespace: ns, Name: name}
			if verb == "create" {
				p.Name = "" // RBAC cannot grant create by name
			}
			perms = append(perms, p)
		}
	}
	if err := v.Requester.Check(ctx, perms...); err != nil {
		return fmt.Errorf("check the requester may copy %s %s/%s into %d namespaces: %w", m.Spec.Source.Kind, m.Namespace, name, len(targets), err)
	}
	return nil
}

// resources are the resources of the source kinds.
var resources = map[string]string{v1alpha1.KindConfigMap: "configmaps", v1alpha1.KindSecret: "secrets"}

// checkSource refuses a source that is a Mirror's copy, or that
// Policy.CheckSource refuses.
func (v *Validator) checkSource(ctx context.Context, m *v1alpha1.Mirror) error {
	kind := m.Spec.Source.Kind
	if _, ok := resources[kind]; !ok {
		return nil // the schema and the Defaulter speak for the kind
	}
	ns, name := m.Namespace, m.Spec.Source.Name
	src, err := lookup(ctx, v.Reader, kind, ns, name)
	if err != nil {
		return fmt.Errorf("check spec.source is no Mirror's copy: %w", err)
	}
	if src == nil {
		return nil
	}
	if owner := CopyOf(src); owner != "" {
		return invalid(m, field.Invalid(namePath, name, fmt.Sprintf(
			"%s %s/%s is a copy made by Mirror %s: copy that Mirror's source instead, since chained copies can loop",
			m.Spec.Source.Kind, ns, name, owner)))
	}
	if err := v.Policy.CheckSource(src); err != nil {
		return invalid(m, field.Forbidden(namePath, err.Error()))
	}
	return nil
}

// warnings warns when m's selector matches no namespace that accepts its
// copies, and when more do than the Policy allows. It speaks of targets
// only, never of every namespace the selector matches: a requester who
// may not list namespaces would otherwise learn from it which labels some
// namespace carries. Targets are namespaces that chose to accept copies
// from m's namespace, so its Mirrors may know of them.
func (v *Validator) warnings(m *v1alpha1.Mirror, r reach) webhook.Warnings {
	var out webhook.Warnings
	if len(r.targets) == 0 {
		out = append(out, fmt.Sprintf("spec.namespaceSelector matches no namespace that accepts copies from namespace %s now: the Mirror makes no copies until one does (a namespace accepts them with the label %s=true)", m.Namespace, AcceptLabel(m.Namespace)))
	}
	if r.limited {
		out = append(out, fmt.Sprintf("spec.namespaceSelector matches more namespaces that accept copies than the operator copies into (--max-targets=%[1]d): only the first %[1]d, by name, get copies", v.Policy.maxTargets()))
	}
	return out
}

// lookup returns the ConfigMap or Secret (by kind) namespace/name, or nil
// if there is none. It lists by name rather than gets, the verb the
// operator already holds.
func lookup(ctx context.Context, r client.Reader, kind, namespace, name string) (client.Object, error) {
	opts := []client.ListOption{client.InNamespace(namespace), client.MatchingFields{"metadata.name": name}}
	switch kind {
	case v1alpha1.KindConfigMap:
		var l corev1.ConfigMapList
		if err := r.List(ctx, &l, opts...); err != nil || len(l.Items) == 0 {
			return nil, wrapList(err, kind, namespace, name)
		}
		return &l.Items[0], nil
	case v1alpha1.KindSecret:
		var l corev1.SecretList
		if err := r.List(ctx, &l, opts...); err != nil || len(l.Items) == 0 {
			return nil, wrapList(err, kind, namespace, name)
		}
		return &l.Items[0], nil
	}
	return nil, fmt.Errorf("look up %s/%s: unknown source kind %q", namespace, name, kind)
}

func wrapList(err error, kind, namespace, name string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("list %ss named %s/%s: %w", kind, namespace, name, err)
}

// namespaceOf returns the namespace of the admission request in ctx,
// which must be m's when m names one: the API server never sends an
// object of another namespace than its request's, so such a request is
// not the API server's, and is refused rather than answered about either.
func namespaceOf(ctx context.Context, m *v1alpha1.Mirror) (string, error) {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return "", fmt.Errorf("find the Mirror's namespace: %w", err)
	}
	switch {
	case req.Namespace == "":
		return "", apierrors.NewBadRequest(fmt.Sprintf("the admission request for Mirror %q names no namespace", m.Name))
	case m.Namespace != "" && m.Namespace != req.Namespace:
		return "", apierrors.NewBadRequest(fmt.Sprintf("the admission request is for namespace %q but its Mirror %q is in namespace %q: refused",
			req.Namespace, m.Name, m.Namespace))
	}
	return req.Namespace, nil
}

// invalid returns the 422 Invalid error kubectl prints with each field's
// path: 'Mirror.samples.opkit.dev "<name>" is invalid: <path>: ...'.
func invalid(m *v1alpha1.Mirror, errs ...*field.Error) error {
	return apierrors.NewInvalid(mirrorGK, m.Name, errs)
}
