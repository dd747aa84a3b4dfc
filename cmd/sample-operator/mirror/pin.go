package mirror

import (
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// What the identity pin watches: the one ValidatingAdmissionPolicyBinding
// Policy.IdentityPolicy names, and the policies.
//
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=list;watch

// identityPin tells whether the admission policy that pins the
// ServiceAccount a Mirror may name is in force: its binding exists, denies,
// and binds a policy that exists. Without it, any user who may write a
// Mirror could name any ServiceAccount of its namespace, and the operator
// would act as it: so it acts for no Mirror meanwhile.
type identityPin struct {
	binding  string
	bindings *cache.Lister[*admissionregistrationv1.ValidatingAdmissionPolicyBinding]
	policies *cache.Lister[*admissionregistrationv1.ValidatingAdmissionPolicy]
}

// newIdentityPin registers the binding named binding, and the policies,
// with c.
func newIdentityPin(c *cache.Cache, binding string) (*identityPin, error) {
	p := &identityPin{binding: binding}
	var err error
	p.bindings, err = cache.Register[*admissionregistrationv1.ValidatingAdmissionPolicyBinding](c,
		cache.TypeOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", binding)})
	if err != nil {
		return nil, fmt.Errorf("watch the identity policy's binding: %w", err)
	}
	if p.policies, err = cache.Register[*admissionregistrationv1.ValidatingAdmissionPolicy](c, cache.TypeOptions{}); err != nil {
		return nil, fmt.Errorf("watch the identity policy: %w", err)
	}
	return p, nil
}

// check returns nil if the pin is in force, otherwise what is missing,
// and what to do.
func (p *identityPin) check() error {
	b, err := p.bindings.Get("", p.binding)
	if err != nil {
		return fmt.Errorf("the ValidatingAdmissionPolicyBinding %s, which pins the ServiceAccount a Mirror may name, is missing (%v): until it is back (kubectl apply -k config/default), the operator acts for no Mirror", p.binding, err)
	}
	if !slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny) {
		return fmt.Errorf("the ValidatingAdmissionPolicyBinding %s, which pins the ServiceAccount a Mirror may name, does not deny: until its validationActions hold Deny, the operator acts for no Mirror", p.binding)
	}
	if _, err := p.policies.Get("", b.Spec.PolicyName); err != nil {
		return fmt.Errorf("the ValidatingAdmissionPolicy %s, which pins the ServiceAccount a Mirror may name, is missing (%v): until it is back (kubectl apply -k config/default), the operator acts for no Mirror", b.Spec.PolicyName, err)
	}
	return nil
}

// everyMirror maps any change of the pin to every Mirror this replica
// holds: each acts, or stops acting, at once.
func (s *cacheStore) everyMirror() []reconcile.Request {
	ms, _ := s.mirrors.List("", nil)
	out := make([]reconcile.Request, len(ms))
	for i, m := range ms {
		out[i] = reconcile.Request{Namespace: m.Namespace, Name: m.Name}
	}
	return out
}
