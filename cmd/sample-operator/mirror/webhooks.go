package mirror

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/webhook"
)

// The webhook configuration 'make manifests' writes to
// config/webhook/manifests.yaml. The path is webhook.ValidatePath of
// samples.opkit.dev/v1alpha1 Mirror (a test checks it). Only v1alpha1 is
// hooked: the API server converts a v1beta1 request to v1alpha1 before
// calling it (matchPolicy Equivalent). Status writes are not hooked: the
// operator's own writes must not depend on the hook. There is no
// defaulting webhook: the CRD defaults spec.source.kind.
//
// +kubebuilder:webhook:path=/validate-samples-opkit-dev-v1alpha1-mirror,mutating=false,failurePolicy=fail,sideEffects=None,groups=samples.opkit.dev,resources=mirrors,verbs=create;update,versions=v1alpha1,name=validate.mirrors.samples.opkit.dev,admissionReviewVersions=v1

// SetupWebhooks serves the Mirror's webhooks on m's webhook server: the
// Validator, for v1alpha1 Mirrors, and the conversion between v1alpha1
// (the hub, and the storage version) and v1beta1 at
// webhook.ConversionPath. m's scheme must hold both versions, and m must
// have a webhook server (manager.Options.Webhook.Port).
func SetupWebhooks(m *manager.Manager) error {
	err := webhook.Register(m, webhook.Hooks[*v1alpha1.Mirror]{Validator: Validator{}})
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
	selectorPath = field.NewPath("spec", "namespaceSelector")
)

// Validator refuses what is wrong with a Mirror itself, and warns about
// what an update will do. Its answer depends on the request alone (the
// object, the old object on update, the request's namespace), never on
// the requester, on other objects the Mirror names, or on the cluster:
// it reads nothing and asks the API server nothing, so a caller who
// reaches the webhook port, naming any user, learns nothing and costs no
// API request. What can change after admission (whether the source may
// be copied, and whether the Mirror's ServiceAccount may read it and
// write its copies) the controller checks at every reconcile, and the
// API server's RBAC decides.
//
//   - spec.namespaceSelector must parse, and spec.source.kind must be
//     ConfigMap or Secret (the CRD defaults it to ConfigMap).
//   - On update, changing spec.source.kind is refused: every copy would
//     be replaced by an object of another kind under the same name; a
//     changed source is warned about, since every copy is replaced.
//   - The object must be in the request's namespace (only a forged
//     request sends another).
//
// Deletes are allowed.
type Validator struct{}

var _ webhook.Validator[*v1alpha1.Mirror] = Validator{}

// ValidateCreate implements webhook.Validator.
func (Validator) ValidateCreate(ctx context.Context, m *v1alpha1.Mirror) (webhook.Warnings, error) {
	return nil, validate(ctx, m)
}

// ValidateUpdate implements webhook.Validator.
func (Validator) ValidateUpdate(ctx context.Context, old, m *v1alpha1.Mirror) (webhook.Warnings, error) {
	o, n := old.Spec.Source, m.Spec.Source
	if o.Kind != "" && n.Kind != o.Kind {
		return nil, invalid(m, field.Forbidden(kindPath, fmt.Sprintf(
			"cannot change from %s to %s: delete the Mirror and create it again", o.Kind, n.Kind)))
	}
	if err := validate(ctx, m); err != nil {
		return nil, err
	}
	if n != o {
		return webhook.Warnings{fmt.Sprintf("spec.source changed from %s %q to %s %q: every copy will be replaced",
			o.Kind, o.Name, n.Kind, n.Name)}, nil
	}
	return nil, nil
}

// ValidateDelete implements webhook.Validator.
func (Validator) ValidateDelete(context.Context, *v1alpha1.Mirror) (webhook.Warnings, error) {
	return nil, nil
}

// validate refuses m unless it is in the request's namespace, its
// selector parses and its source kind is one the controller copies.
func validate(ctx context.Context, m *v1alpha1.Mirror) error {
	if err := checkNamespace(ctx, m); err != nil {
		return err
	}
	var errs field.ErrorList
	if _, err := metav1.LabelSelectorAsSelector(&m.Spec.NamespaceSelector); err != nil {
		errs = append(errs, field.Invalid(selectorPath, m.Spec.NamespaceSelector, err.Error()))
	}
	switch kind := m.Spec.Source.Kind; kind {
	case v1alpha1.KindConfigMap, v1alpha1.KindSecret:
	case "":
		errs = append(errs, field.Required(kindPath, "set it to ConfigMap or Secret"))
	default:
		errs = append(errs, field.NotSupported(kindPath, kind, []string{v1alpha1.KindConfigMap, v1alpha1.KindSecret}))
	}
	if len(errs) > 0 {
		return invalid(m, errs...)
	}
	return nil
}

// checkNamespace refuses m unless the admission request in ctx names a
// namespace and m is in it (or names none): the API server never sends
// an object of another namespace than its request's, so such a request
// is not the API server's, and is refused rather than answered.
func checkNamespace(ctx context.Context, m *v1alpha1.Mirror) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return fmt.Errorf("find the Mirror's namespace: %w", err)
	}
	switch {
	case req.Namespace == "":
		return apierrors.NewBadRequest(fmt.Sprintf("the admission request for Mirror %q names no namespace", m.Name))
	case m.Namespace != "" && m.Namespace != req.Namespace:
		return apierrors.NewBadRequest(fmt.Sprintf("the admission request is for namespace %q but its Mirror %q is in namespace %q: refused",
			req.Namespace, m.Name, m.Namespace))
	}
	return nil
}

// invalid returns the 422 Invalid error kubectl prints with each field's
// path: 'Mirror.samples.opkit.dev "<name>" is invalid: <path>: ...'.
func invalid(m *v1alpha1.Mirror, errs ...*field.Error) error {
	return apierrors.NewInvalid(mirrorGK, m.Name, errs)
}
