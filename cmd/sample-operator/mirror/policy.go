package mirror

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
)

// AcceptLabelPrefix + <source namespace> is the label by which a namespace
// opts in to copies from the Mirrors of that namespace: value "true"
// accepts every Mirror of it, any other value accepts only the Mirror of
// that name.
const AcceptLabelPrefix = "accept.mirrors.samples.opkit.dev/"

// AcceptLabel returns the label by which a namespace opts in to copies from
// the Mirrors of sourceNamespace (see AcceptLabelPrefix). A namespace name
// is at most 63 characters, as a label key's name part may be.
func AcceptLabel(sourceNamespace string) string { return AcceptLabelPrefix + sourceNamespace }

// acceptAll is the AcceptLabel value that accepts every Mirror of the
// source namespace.
const acceptAll = "true"

// DefaultMaxTargets bounds one Mirror's fan-out by default. The
// benchmarks' Mirrors copy into at most 50 namespaces each.
const DefaultMaxTargets = 500

// Policy is the deployer's tenancy settings (flags of the sample
// operator). The zero Policy is the strictest: no protected namespace is a
// target, only Opaque and kubernetes.io/tls Secrets are copied, and a
// Mirror copies into at most DefaultMaxTargets namespaces.
//
// It answers for the operator's ServiceAccount, which writes on behalf of
// whoever created the Mirror: a namespace receives copies only if it opted
// in, and Secrets the cluster acts on are not copied. It is safe for
// concurrent use as long as nobody modifies it.
type Policy struct {
	// OperatorNamespace is never a target unless listed in
	// AllowNamespaces. Defaults to none.
	OperatorNamespace string
	// AllowNamespaces lists protected namespaces (kube-* and
	// OperatorNamespace) that may be targets anyway, if they opt in like
	// any other. Defaults to none (flag --allow-target-namespaces).
	AllowNamespaces []string
	// SecretTypes are copyable besides Opaque and kubernetes.io/tls, which
	// always are. Defaults to none (flag --allow-secret-types).
	SecretTypes []corev1.SecretType
	// MaxTargets bounds the namespaces one Mirror copies into. Defaults
	// to DefaultMaxTargets when 0 (flag --max-targets).
	MaxTargets int
	// IdentityPolicy names the ValidatingAdmissionPolicyBinding that pins
	// the ServiceAccount a Mirror may name (config/policy's
	// service-account, rendered mirror-service-account). While it, or
	// the policy it binds, is missing or does not deny, the controller
	// acts for no Mirror (Ready False, reason IdentityUnpinned): any user
	// who may write a Mirror could otherwise borrow any ServiceAccount of
	// its namespace. Defaults to none: not checked, for clusters that pin
	// identities otherwise (flag --identity-policy, which config/manager
	// sets).
	IdentityPolicy string
	// ActAsOperator reads sources and writes copies as the operator
	// itself, not as each Mirror's ServiceAccount: only for benchmarks
	// that measure what acting as the Mirror's costs (flag
	// --act-as-operator). Nothing then stops a Mirror from copying what
	// its creator may not read, nor where they may not write, but the
	// operator's own RBAC, which config/rbac keeps too small for it.
	// Defaults to false.
	ActAsOperator bool
}

// Target reports whether namespace ns may receive copies of m, and when
// not, why (a short reason for logs and the webhook's message): m's own
// namespace, terminating, protected (kube-* or the operator's namespace,
// unless AllowNamespaces lists it), or not opted in (no AcceptLabel(m.Namespace)
// label naming m or "true"). A protected namespace must opt in too.
func (p Policy) Target(m *v1alpha1.Mirror, ns *corev1.Namespace) (ok bool, why string) {
	switch {
	case ns.Name == m.Namespace:
		return false, "the Mirror's own namespace"
	case ns.Status.Phase == corev1.NamespaceTerminating || ns.DeletionTimestamp != nil:
		return false, "terminating"
	case p.protected(ns.Name):
		return false, fmt.Sprintf("protected namespace (allowed by --allow-target-namespaces=%s)", ns.Name)
	}
	switch v, found := ns.Labels[AcceptLabel(m.Namespace)]; {
	case !found:
		return false, fmt.Sprintf("not opted in (label %s=%s or %s=%s)", AcceptLabel(m.Namespace), acceptAll, AcceptLabel(m.Namespace), m.Name)
	case v != acceptAll && v != m.Name:
		return false, fmt.Sprintf("not opted in to this Mirror (label %s=%s accepts another)", AcceptLabel(m.Namespace), v)
	}
	return true, ""
}

// protected reports whether ns is a protected namespace that
// AllowNamespaces does not list.
func (p Policy) protected(ns string) bool {
	if !strings.HasPrefix(ns, "kube-") && (p.OperatorNamespace == "" || ns != p.OperatorNamespace) {
		return false
	}
	return !slices.Contains(p.AllowNamespaces, ns)
}

// Targets returns the names, sorted, of the namespaces among nss that
// selector matches and Target allows, at most MaxTargets of them; limited
// reports that more were allowed than MaxTargets. nss is not modified.
func (p Policy) Targets(m *v1alpha1.Mirror, selector labels.Selector, nss []*corev1.Namespace) (targets []string, limited bool) {
	for _, ns := range nss {
		if !selector.Matches(labels.Set(ns.Labels)) {
			continue
		}
		if ok, _ := p.Target(m, ns); ok {
			targets = append(targets, ns.Name)
		}
	}
	slices.Sort(targets)
	if n := p.maxTargets(); len(targets) > n {
		return targets[:n:n], true
	}
	return targets, false
}

func (p Policy) maxTargets() int {
	if p.MaxTargets <= 0 {
		return DefaultMaxTargets
	}
	return p.MaxTargets
}

// CheckSource returns an error, saying what to do, when src may not be
// copied: a Mirror's copy (chained copies can loop), or a Secret whose type is neither Opaque, kubernetes.io/tls
// nor in SecretTypes. The cluster acts on other types
// (bootstrap.kubernetes.io/token authenticates a node,
// kubernetes.io/service-account-token a ServiceAccount,
// kubernetes.io/dockerconfigjson pulls images), so they are refused by
// default. A ConfigMap is always copyable.
func (p Policy) CheckSource(src client.Object) error {
	if m := CopyOf(src); m != "" {
		return fmt.Errorf("source %s/%s is a copy of Mirror %s, and chained copies can loop: copy the original instead", src.GetNamespace(), src.GetName(), m)
	}
	s, ok := src.(*corev1.Secret)
	if !ok {
		return nil
	}
	switch t := secretType(s); {
	case t == corev1.SecretTypeOpaque, t == corev1.SecretTypeTLS, slices.Contains(p.SecretTypes, t):
		return nil
	default:
		return fmt.Errorf("source Secret %s/%s has type %s, which is not copied unless the operator runs with --allow-secret-types=%s", s.Namespace, s.Name, t, t)
	}
}

// secretType is s's type; the API server defaults an empty one to Opaque.
func secretType(s *corev1.Secret) corev1.SecretType {
	if s.Type == "" {
		return corev1.SecretTypeOpaque
	}
	return s.Type
}
