package manager_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// TestWriterAsLetsTheAPIServerDecide runs a manager as a ServiceAccount
// that may write ConfigMaps itself, and shows that its WriterAs writes
// only what the user it acts as may write, and only once the namespace
// let the operator act as that user.
func TestWriterAsLetsTheAPIServerDecide(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespace(t)
	cs := env.Client()
	for _, name := range []string{"operator", "tenant"} {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The operator may do anything with ConfigMaps in ns: its own
	// authority must not reach what it does as the tenant.
	grant(t, ns, "operator", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}})
	cfg, err := env.ServiceAccountConfig(ctx, types.NamespacedName{Namespace: ns, Name: "operator"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manager.New(cfg, manager.Options{Cache: cache.Options{Namespaces: []string{ns}}, Metrics: manager.MetricsOptions{BindAddress: "127.0.0.1:0"}, Health: manager.HealthOptions{BindAddress: "127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	tenant := manager.ServiceAccount(ns, "tenant")
	as := m.WriterAs("copier", tenant)
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"k": "v"}}
	}

	err = as.Create(ctx, cm("before-consent"))
	wantForbidden(t, err, `cannot impersonate`)

	// The namespace's consent: the operator may act as the tenant, by name.
	grant(t, ns, "operator", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"tenant"}})
	err = eventuallyErr(t, func() error { return as.Create(ctx, cm("tenant-lacks-create")) }, `impersonate`)
	wantForbidden(t, err, `User "system:serviceaccount:`+ns+`:tenant" cannot create resource "configmaps"`)
	if err := as.Get(ctx, client.ObjectKey{Namespace: ns, Name: "any"}, &corev1.ConfigMap{}); !apierrors.IsForbidden(err) {
		t.Errorf("Get as the tenant without get: %v, want Forbidden", err)
	}
	// The operator's own writer still writes, as itself.
	if err := m.Writer("copier").Create(ctx, cm("own")); err != nil {
		t.Fatalf("the operator's own writer: %v", err)
	}

	grant(t, ns, "tenant", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "get"}})
	_ = eventuallyErr(t, func() error { return as.Create(ctx, cm("tenant-creates")) }, `cannot create`)
	got := &corev1.ConfigMap{}
	if err := as.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant-creates"}, got); err != nil {
		t.Fatalf("Get as the tenant: %v", err)
	}
	if mf := got.ManagedFields; len(mf) != 1 || mf[0].Manager != "copier" {
		t.Errorf("managedFields %+v, want one entry of field manager copier", mf)
	}
	// What the tenant may not do is still refused, whatever the operator may.
	err = as.Delete(ctx, got)
	wantForbidden(t, err, `User "system:serviceaccount:`+ns+`:tenant" cannot delete resource "configmaps"`)

	// A user without a name would go out as the operator: refused unsent.
	err = m.WriterAs("copier", rest.ImpersonationConfig{Groups: []string{"system:masters"}}).Create(ctx, cm("nameless"))
	if err == nil || !strings.Contains(err.Error(), "the user has no name") {
		t.Errorf("Create as a user without a name: %v, want a refusal", err)
	}
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "nameless", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the nameless create reached the API server: delete: %v", err)
	}
}

// grant gives the ServiceAccount ns/sa rule in ns, through a Role and a
// RoleBinding of their own.
func grant(t *testing.T, ns, sa string, rule rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: sa + "-"}, Rules: []rbacv1.PolicyRule{rule}}
	role, err := env.Client().RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
	}
	if _, err := env.Client().RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// eventuallyErr calls f until its error no longer contains stale (a
// refusal from before an RBAC change reached the authorizer), and
// returns that error.
func eventuallyErr(t *testing.T, f func() error, stale string) error {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil || !strings.Contains(err.Error(), stale) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func wantForbidden(t *testing.T, err error, says string) {
	t.Helper()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), says) {
		t.Fatalf("got %v, want Forbidden saying %s", err, says)
	}
}
