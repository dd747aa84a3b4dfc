package mirror

import (
	"context"
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
// needs, so the hooks add no permission.
//
// +kubebuilder:rbac:groups="",resources=configmaps;secrets;namespaces,verbs=list

// SetupWebhooks serves the Mirror's webhooks on m's webhook server: the
// Defaulter and the Validator, for v1alpha1 Mirrors, reading through
// m.Client(), and the conversion between v1alpha1 (the hub, and the
// storage version) and v1beta1 at webhook.ConversionPath. m's scheme must
// hold both versions, and m must have a webhook server
// (manager.Options.Webhook.Port).
func SetupWebhooks(m *manager.Manager) error {
	err := webhook.Register(m, webhook.Hooks[*v1alpha1.Mirror]{
		Defaulter: &Defaulter{Reader: m.Client()},
		Validator: &Validator{Reader: m.Client()},
	})
	if err == nil {
		// v1beta1.Mirror converts through its ConvertTo and ConvertFrom.
		err = webhook.RegisterConversion(m, webhook.Conversion[*v1alpha1.Mirror]{})
	}
	if err != nil {
		return fmt.Errorf("set up the mirror webhooks: %w", err)
	}
	return nil
}

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
type Defaulter struct {
	// Reader reads ConfigMaps and Secrets, from the API server rather than
	// a cache, so a source created just before its Mirror is seen.
	Reader client.Reader
}

var _ webhook.Defaulter[*v1alpha1.Mirror] = (*Defaulter)(nil)

// Default implements webhook.Defaulter.
func (d *Defaulter) Default(ctx context.Context, m *v1alpha1.Mirror) error {
	if m.Spec.Source.Kind != "" {
		return nil
	}
	ns, name := namespaceOf(ctx, m), m.Spec.Source.Name
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

// Validator refuses what would make copies loop or break, and warns about
// what makes no copies:
//
//   - On create, and on update when the source changes, a source that is
//     itself a Mirror's copy (it has LabelMirrorNamespace and
//     LabelMirrorName) is refused on spec.source.name: chained copies can
//     loop. A source that does not exist yet is allowed.
//   - On update, changing a set spec.source.kind is refused: every copy
//     would be replaced by an object of another kind under the same name.
//   - A selector that cannot be parsed is refused on spec.namespaceSelector.
//   - Warnings: on create, and on update when the selector changes, when
//     the selector matches no namespace but the Mirror's own; on update,
//     when the source changes, since every copy is replaced.
//
// Deletes are allowed.
type Validator struct {
	// Reader reads ConfigMaps, Secrets and Namespaces, from the API server
	// rather than a cache.
	Reader client.Reader
}

var _ webhook.Validator[*v1alpha1.Mirror] = (*Validator)(nil)

// ValidateCreate implements webhook.Validator.
func (v *Validator) ValidateCreate(ctx context.Context, m *v1alpha1.Mirror) (webhook.Warnings, error) {
	if err := v.checkSource(ctx, m); err != nil {
		return nil, err
	}
	return v.selectorWarnings(ctx, m)
}

// ValidateUpdate implements webhook.Validator.
func (v *Validator) ValidateUpdate(ctx context.Context, old, m *v1alpha1.Mirror) (webhook.Warnings, error) {
	o, n := old.Spec.Source, m.Spec.Source
	if o.Kind != "" && n.Kind != o.Kind {
		return nil, invalid(m, field.Forbidden(kindPath, fmt.Sprintf(
			"cannot change from %s to %s: delete the Mirror and create it again", o.Kind, n.Kind)))
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
		w, err := v.selectorWarnings(ctx, m)
		if err != nil {
			return nil, err
		}
		warnings = append(warnings, w...)
	}
	return warnings, nil
}

// ValidateDelete implements webhook.Validator.
func (v *Validator) ValidateDelete(context.Context, *v1alpha1.Mirror) (webhook.Warnings, error) {
	return nil, nil
}

// checkSource refuses a source that is a Mirror's copy.
func (v *Validator) checkSource(ctx context.Context, m *v1alpha1.Mirror) error {
	kind := m.Spec.Source.Kind
	if kind != v1alpha1.KindConfigMap && kind != v1alpha1.KindSecret {
		return nil // the schema and the Defaulter speak for the kind
	}
	ns, name := namespaceOf(ctx, m), m.Spec.Source.Name
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
	return nil
}

// selectorWarnings warns when m's selector matches no namespace but m's
// own, and refuses a selector that cannot be parsed.
func (v *Validator) selectorWarnings(ctx context.Context, m *v1alpha1.Mirror) (webhook.Warnings, error) {
	sel, err := metav1.LabelSelectorAsSelector(&m.Spec.NamespaceSelector)
	if err != nil {
		return nil, invalid(m, field.Invalid(selectorPath, m.Spec.NamespaceSelector, err.Error()))
	}
	var list corev1.NamespaceList
	if err := v.Reader.List(ctx, &list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("list namespaces to check spec.namespaceSelector: %w", err)
	}
	for _, ns := range list.Items {
		if ns.Name != namespaceOf(ctx, m) {
			return nil, nil
		}
	}
	return webhook.Warnings{"spec.namespaceSelector matches no namespace now: the Mirror makes no copies until a namespace it matches exists"}, nil
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

// namespaceOf returns m's namespace, or the request's when m does not say
// it (a create whose object names no namespace).
func namespaceOf(ctx context.Context, m *v1alpha1.Mirror) string {
	if m.Namespace != "" {
		return m.Namespace
	}
	if req, err := admission.RequestFromContext(ctx); err == nil {
		return req.Namespace
	}
	return ""
}

// invalid returns the 422 Invalid error kubectl prints with each field's
// path: 'Mirror.samples.opkit.dev "<name>" is invalid: <path>: ...'.
func invalid(m *v1alpha1.Mirror, errs ...*field.Error) error {
	return apierrors.NewInvalid(mirrorGK, m.Name, errs)
}
