package certs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/opkit-dev/opkit/pkg/webhook/certs"
)

// The test control plane authorizes with RBAC, so an impersonated user can
// do only what it is granted.

// The permissions the package doc lists are enough, restricted by
// resourceNames as it says.
func TestDocumentedPermissionsSuffice(t *testing.T) {
	ns := env.Namespace(t)
	opts := options(t, ns, clocktesting.NewFakeClock(time.Now()))
	opts.Targets.ValidatingWebhooks = []string{createValidating(t, opts)}
	opts.Targets.CRDs = []string{conversionCRD}
	user := "opkit-certs-" + ns
	names := []string{opts.CASecret.Name}
	grantRules(t, ns, user, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "update"}, ResourceNames: names},
	}, []rbacv1.PolicyRule{
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"}, Verbs: []string{"get", "patch"}, ResourceNames: opts.Targets.ValidatingWebhooks},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "patch"}, ResourceNames: opts.Targets.CRDs},
	})
	r, err := certs.New(impersonating(user), opts)
	if err != nil {
		t.Fatal(err)
	}
	mustSync(t, r)
}

// Without the permissions the error says which to grant.
func TestForbiddenSecretSaysWhatToGrant(t *testing.T) {
	ns := env.Namespace(t)
	opts := options(t, ns, clocktesting.NewFakeClock(time.Now()))
	r, err := certs.New(impersonating("opkit-certs-nobody"), opts)
	if err != nil {
		t.Fatal(err)
	}
	err = r.Sync(t.Context())
	if err == nil || !strings.Contains(err.Error(), "grant get, create and update on secrets in its namespace") {
		t.Errorf("Sync without permissions: %v, want it to say what to grant", err)
	}
}

func impersonating(user string) *rest.Config {
	cfg := env.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

// grantRules grants user the rules of a Role in ns and of a ClusterRole.
func grantRules(t *testing.T, ns, user string, role, clusterRole []rbacv1.PolicyRule) {
	t.Helper()
	ctx, rbac := t.Context(), env.Client().RbacV1()
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	meta := metav1.ObjectMeta{Name: user}
	if _, err := rbac.Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: role}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: meta, Rules: clusterRole}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if err := rbac.ClusterRoleBindings().Delete(ctx, user, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete ClusterRoleBinding: %v", err)
		}
		if err := rbac.ClusterRoles().Delete(ctx, user, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete ClusterRole: %v", err)
		}
	})
}
