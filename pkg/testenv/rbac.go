package testenv

import (
	"context"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// create creates every object, leaving those that exist.
func (o *identityObjects) create(ctx context.Context, cs kubernetes.Interface) error {
	opts := metav1.CreateOptions{}
	var creates []func() error
	for _, n := range o.namespaces {
		creates = append(creates, func() error { _, err := cs.CoreV1().Namespaces().Create(ctx, n, opts); return err })
	}
	for _, sa := range o.serviceAccounts {
		creates = append(creates, func() error { _, err := cs.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, opts); return err })
	}
	for _, r := range o.clusterRoles {
		creates = append(creates, func() error { _, err := cs.RbacV1().ClusterRoles().Create(ctx, r, opts); return err })
	}
	for _, r := range o.roles {
		creates = append(creates, func() error { _, err := cs.RbacV1().Roles(r.Namespace).Create(ctx, r, opts); return err })
	}
	for _, b := range o.clusterRoleBindings {
		creates = append(creates, func() error { _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, b, opts); return err })
	}
	for _, b := range o.roleBindings {
		creates = append(creates, func() error { _, err := cs.RbacV1().RoleBindings(b.Namespace).Create(ctx, b, opts); return err })
	}
	for _, create := range creates {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// access is one request a binding's subject is allowed.
type access struct {
	user   string
	groups []string
	attrs  authorizationv1.ResourceAttributes
}

// waitAuthorized waits until the API server allows each ServiceAccount
// subject of a binding the first resource rule of the bound role.
func (o *identityObjects) waitAuthorized(ctx context.Context, cs kubernetes.Interface) error {
	var want []access
	for _, b := range o.clusterRoleBindings {
		want = append(want, o.accesses(b.RoleRef, "", b.Subjects)...)
	}
	for _, b := range o.roleBindings {
		want = append(want, o.accesses(b.RoleRef, b.Namespace, b.Subjects)...)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for _, a := range want {
		for {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: a.user, Groups: a.groups, ResourceAttributes: &a.attrs}}
			res, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			if err == nil && res.Status.Allowed {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w: %s may not %s %s (last answer: %v)", context.Cause(ctx), a.user, a.attrs.Verb, a.attrs.Resource, err)
			case <-tick.C:
			}
		}
	}
	return nil
}

// accesses returns, for each ServiceAccount in subjects, the first
// resource rule of the role ref names, in namespace ns ("" cluster-wide).
// A role rendered elsewhere, or one of non-resource URLs only, gives none.
func (o *identityObjects) accesses(ref rbacv1.RoleRef, ns string, subjects []rbacv1.Subject) []access {
	var rules []rbacv1.PolicyRule
	for _, r := range o.clusterRoles {
		if ref.Kind == "ClusterRole" && r.Name == ref.Name {
			rules = r.Rules
		}
	}
	for _, r := range o.roles {
		if ref.Kind == "Role" && r.Name == ref.Name && r.Namespace == ns {
			rules = r.Rules
		}
	}
	var rule *rbacv1.PolicyRule
	for i := range rules {
		if len(rules[i].Resources) > 0 && len(rules[i].Verbs) > 0 && len(rules[i].APIGroups) > 0 {
			rule = &rules[i]
			break
		}
	}
	if rule == nil {
		return nil
	}
	resource, sub, _ := strings.Cut(rule.Resources[0], "/")
	attrs := authorizationv1.ResourceAttributes{Namespace: ns, Verb: rule.Verbs[0], Group: rule.APIGroups[0], Resource: resource, Subresource: sub}
	if len(rule.ResourceNames) > 0 {
		attrs.Name = rule.ResourceNames[0]
	}
	var out []access
	for _, s := range subjects {
		if s.Kind != rbacv1.ServiceAccountKind {
			continue
		}
		out = append(out, access{
			user:   "system:serviceaccount:" + s.Namespace + ":" + s.Name,
			groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + s.Namespace, "system:authenticated"},
			attrs:  attrs,
		})
	}
	return out
}
