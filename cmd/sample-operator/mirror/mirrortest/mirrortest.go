// Package mirrortest gives tests of the Mirror operator what a cluster's
// owners give it in production (docs/mirror-tenancy.md): a Mirror's
// ServiceAccount the permissions to read its source and write copies, and
// the operator the right to act as it. It grants them cluster-wide, the
// quick way; tests of tenancy itself grant less, per namespace.
package mirrortest

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// CopierRules are what a Mirror's ServiceAccount needs where it copies
// from and to: get its source and its copies (to compare), create and
// patch its copies. The operator deletes copies itself.
var CopierRules = []rbacv1.PolicyRule{{
	APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "create", "patch"},
}}

// ImpersonateRules let the operator act as any ServiceAccount.
var ImpersonateRules = []rbacv1.PolicyRule{{
	APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate"},
}}

// GrantCopier lets the ServiceAccount namespace/name do CopierRules in
// every namespace, and returns once the API server's authorizer says so.
// Objects that exist are left as they are.
func GrantCopier(ctx context.Context, cs kubernetes.Interface, namespace, name string) error {
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
	if err := bind(ctx, cs, "mirrortest-copier", "mirrortest-copier-"+namespace+"-"+name, CopierRules, sa); err != nil {
		return err
	}
	return waitAllowed(ctx, cs, "system:serviceaccount:"+namespace+":"+name, nil, authorizationv1.ResourceAttributes{Namespace: "any", Verb: "create", Resource: "configmaps"})
}

// GrantEveryServiceAccount lets every ServiceAccount of the cluster do
// CopierRules in every namespace, for a benchmark's many Mirrors, and
// returns once the API server's authorizer says so.
func GrantEveryServiceAccount(ctx context.Context, cs kubernetes.Interface) error {
	all := rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts"}
	if err := bind(ctx, cs, "mirrortest-copier", "mirrortest-copier-every-serviceaccount", CopierRules, all); err != nil {
		return err
	}
	return waitAllowed(ctx, cs, "system:serviceaccount:any:mirror", []string{"system:serviceaccounts"}, authorizationv1.ResourceAttributes{Namespace: "any", Verb: "create", Resource: "configmaps"})
}

// GrantImpersonation lets user (the operator) act as any ServiceAccount,
// and returns once the API server's authorizer says so.
func GrantImpersonation(ctx context.Context, cs kubernetes.Interface, user string) error {
	u := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}
	if err := bind(ctx, cs, "mirrortest-act-as-tenants", "mirrortest-act-as-tenants-"+user, ImpersonateRules, u); err != nil {
		return err
	}
	return waitAllowed(ctx, cs, user, nil, authorizationv1.ResourceAttributes{Namespace: "any", Verb: "impersonate", Resource: "serviceaccounts", Name: "mirror"})
}

// bind makes the ClusterRole role of rules, and binds it to subject by
// the ClusterRoleBinding binding.
func bind(ctx context.Context, cs kubernetes.Interface, role, binding string, rules []rbacv1.PolicyRule, subject rbacv1.Subject) error {
	r := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: rules}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRole %s: %w", role, err)
	}
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: binding},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRoleBinding %s: %w", binding, err)
	}
	return nil
}

// waitAllowed waits until the API server allows user, in groups, attrs: its
// authorizer sees new bindings a moment after they are made.
func waitAllowed(ctx context.Context, cs kubernetes.Interface, user string, groups []string, attrs authorizationv1.ResourceAttributes) error {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &attrs}}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, nil
	})
	if err != nil {
		return fmt.Errorf("wait for %s to be allowed %s %s: %w", user, attrs.Verb, attrs.Resource, err)
	}
	return nil
}
