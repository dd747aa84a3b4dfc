package deployed

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

// TestTenantGetsNothingTheirRBACDenies runs the deployed operator, as its
// ServiceAccount, with no admission webhook installed, and mounts the
// attacks of a tenant who owns namespace home (they may act as its
// ServiceAccount mirror, and let the operator act as it) against the
// namespaces of others. Each is refused by the API server when the
// operator writes or reads as home/mirror: no check of the operator's own
// stands in the way, and none is needed.
func TestTenantGetsNothingTheirRBACDenies(t *testing.T) {
	d := render(t)
	id := d.apply(t, "tenants")
	ctx := t.Context()
	cl, err := client.New(env.Config(), client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	home := env.Namespace(t)
	label := map[string]string{"tenant-test": home}
	// home's owner: the operator may act as home/mirror, which may get
	// ConfigMaps in home, and nothing else.
	roleBinding(t, home, "mirror-operator-acts-as-mirror",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"mirror"}},
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: id.namespace, Name: id.name})
	roleBinding(t, home, "mirror-reads-configmaps",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: home, Name: "mirror"})
	// A namespace whose owner let home/mirror write ConfigMaps and
	// Secrets, so that only reading the source can be refused there.
	writable := targetNamespace(t, cl, label, mirror.AcceptLabel(home), "true")
	roleBinding(t, writable, "mirror-copies-from-home",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "create", "patch"}},
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: home, Name: "mirror"})

	lease := leaseRef{namespace: id.namespace, name: "deployed-tenants"}
	op := startOperator(t, opConfig{kubeconfig: writeKubeconfig(t, token(t, id, 3600)), lease: lease.name, leaseNS: lease.namespace})
	for _, o := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: "app-config"}, Data: map[string]string{"k": "tenant's"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: "ops-only"}, StringData: map[string]string{"password": "denied to the tenant"}},
	} {
		if err := cl.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a copy that works", func(t *testing.T) {
		m := newMirror(home, "works", v1alpha1.KindConfigMap, "app-config", map[string]string{"tenant-test": home})
		create(t, func() error { return cl.Create(ctx, m) })
		waitReady(t, cl, m, v1alpha1.ReasonSynced, "copied into 1 namespaces")
		if err := cl.Get(ctx, client.ObjectKey{Namespace: writable, Name: "app-config"}, &corev1.ConfigMap{}); err != nil {
			t.Fatalf("the copy: %v", err)
		}
	})
	t.Run("opt-in after admission", func(t *testing.T) {
		// A namespace that accepts nothing yet, then opts in to home's
		// copies, meant for another Mirror of home: its owner never let
		// home/mirror write there.
		victim := targetNamespace(t, cl, map[string]string{"victim-of": home})
		m := newMirror(home, "after-admission", v1alpha1.KindConfigMap, "app-config", map[string]string{"victim-of": home})
		create(t, func() error { return cl.Create(ctx, m) })
		waitReady(t, cl, m, v1alpha1.ReasonSynced, "copied into 0 namespaces")
		setLabel(t, cl, victim, mirror.AcceptLabel(home), "true")
		waitReady(t, cl, m, v1alpha1.ReasonSyncFailed, `Forbidden (cannot create resource "configmaps")`)
		noObject(t, cl, victim, "app-config")
	})
	t.Run("name squatting", func(t *testing.T) {
		// A namespace that accepts only home's Mirror platform-ca, and a
		// tenant who names theirs so first.
		victim := targetNamespace(t, cl, map[string]string{"squatted-by": home}, mirror.AcceptLabel(home), "platform-ca")
		m := newMirror(home, "platform-ca", v1alpha1.KindConfigMap, "app-config", map[string]string{"squatted-by": home})
		create(t, func() error { return cl.Create(ctx, m) })
		waitReady(t, cl, m, v1alpha1.ReasonSyncFailed, `Forbidden (cannot create resource "configmaps")`)
		noObject(t, cl, victim, "app-config")
	})
	t.Run("a Secret the tenant may not read", func(t *testing.T) {
		m := newMirror(home, "exfiltrate", v1alpha1.KindSecret, "ops-only", map[string]string{"tenant-test": home})
		create(t, func() error { return cl.Create(ctx, m) })
		waitReady(t, cl, m, v1alpha1.ReasonSyncFailed, `cannot get resource "secrets"`)
		noObject(t, cl, writable, "ops-only")
	})
	t.Run("a ServiceAccount the tenant may not act as", func(t *testing.T) {
		// A user who may create Mirrors in home but not act as its
		// ServiceAccounts: the admission policy refuses them, with or
		// without the operator's webhooks.
		user := "mirror-editor-" + home
		roleBinding(t, home, "mirror-editor",
			rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"mirrors"}, Verbs: []string{"create", "update", "get"}},
			rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user})
		cfg := env.Config()
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		as, err := client.New(cfg, client.Options{Scheme: newScheme()})
		if err != nil {
			t.Fatal(err)
		}
		m := newMirror(home, "borrowed-identity", v1alpha1.KindSecret, "ops-only", map[string]string{"tenant-test": home})
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			err := as.Create(ctx, m.DeepCopy())
			return err != nil && strings.Contains(err.Error(), "may not act as ServiceAccount "+home+"/mirror"), nil
		})
		if err != nil {
			t.Fatalf("a Mirror naming a ServiceAccount its creator may not act as was not refused by the admission policy: %v", err)
		}
	})
	t.Run("a namespace editor may name its ServiceAccount", func(t *testing.T) {
		// The edit and admin roles of a namespace hold impersonate on its
		// ServiceAccounts: the policy lets their holders name them. (edit
		// gathers its rules from system:aggregate-to-edit, which the
		// controller manager aggregates; the test control plane runs none,
		// so the test binds the source.)
		user := "namespace-editor-" + home
		subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}
		create(t, func() error {
			_, err := env.Client().RbacV1().RoleBindings(home).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: "editor"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:aggregate-to-edit"},
				Subjects:   []rbacv1.Subject{subject},
			}, metav1.CreateOptions{})
			return err
		})
		roleBinding(t, home, "mirror-writer",
			rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"mirrors"}, Verbs: []string{"create"}}, subject)
		cfg := env.Config()
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		as, err := client.New(cfg, client.Options{Scheme: newScheme()})
		if err != nil {
			t.Fatal(err)
		}
		m := newMirror(home, "by-an-editor", v1alpha1.KindConfigMap, "app-config", map[string]string{"tenant-test": home})
		var last error
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			last = as.Create(ctx, m.DeepCopy(), client.DryRunAll)
			return last == nil, nil
		})
		if err != nil {
			t.Fatalf("a namespace editor naming its ServiceAccount mirror: %v", last)
		}
	})
	t.Run("the admission policy deleted", func(t *testing.T) {
		// Without the policy, a user who may write a Mirror could name any
		// ServiceAccount of its namespace: the operator acts for no Mirror
		// until it is back, and says so.
		works := newMirror(home, "works", "", "", nil)
		m := newMirror(home, "while-unpinned", v1alpha1.KindConfigMap, "app-config", map[string]string{"tenant-test": home})
		deleteBinding(t)
		waitReady(t, cl, works, v1alpha1.ReasonIdentityUnpinned, "mirror-service-account")
		create(t, func() error { return cl.Create(ctx, m) })
		waitReady(t, cl, m, v1alpha1.ReasonIdentityUnpinned, "acts for no Mirror")
		noObject(t, cl, writable, "while-unpinned")
		if err := cl.Get(ctx, client.ObjectKey{Namespace: writable, Name: "app-config"}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("the copy made before the policy went: %v, want it kept", err)
		}
		d.createPolicies(t)
		waitReady(t, cl, works, v1alpha1.ReasonSynced, "copied into 1 namespaces")
	})
	if t.Failed() {
		t.Logf("operator log:\n%s", op.logs.String())
	}
}

// identityBinding is config/policy's service-account binding, as
// config/default renders it.
const identityBinding = "mirror-service-account"

// deleteBinding deletes identityBinding; applyPolicies makes it again.
func deleteBinding(t *testing.T) {
	t.Helper()
	err := env.Client().AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(t.Context(), identityBinding, metav1.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func newMirror(ns, name, kind, source string, sel map[string]string) *v1alpha1.Mirror {
	return &v1alpha1.Mirror{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.MirrorSpec{Source: v1alpha1.SourceRef{Kind: kind, Name: source}, NamespaceSelector: metav1.LabelSelector{MatchLabels: sel}},
	}
}

// targetNamespace makes a namespace labelled with labels and the
// key-value pairs kv.
func targetNamespace(t *testing.T, cl client.Client, labels map[string]string, kv ...string) string {
	t.Helper()
	name := env.Namespace(t)
	for k, v := range labels {
		setLabel(t, cl, name, k, v)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		setLabel(t, cl, name, kv[i], kv[i+1])
	}
	return name
}

func setLabel(t *testing.T, cl client.Client, ns, key, value string) {
	t.Helper()
	p := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, key, value))
	if err := cl.Patch(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, p); err != nil {
		t.Fatal(err)
	}
}

// roleBinding grants subject rule in ns by a Role and RoleBinding named
// name.
func roleBinding(t testing.TB, ns, name string, rule rbacv1.PolicyRule, subject rbacv1.Subject) {
	t.Helper()
	ctx := context.Background()
	cs := env.Client()
	create(t, func() error {
		_, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{})
		return err
	})
	create(t, func() error {
		_, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   []rbacv1.Subject{subject},
		}, metav1.CreateOptions{})
		return err
	})
}

// waitReady waits, for a busy machine's while, until m's Ready condition
// has reason and a message containing says.
func waitReady(t *testing.T, cl client.Client, m *v1alpha1.Mirror, reason, says string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got := &v1alpha1.Mirror{}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(m), got); err != nil {
			return false, nil
		}
		c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil {
			return false, nil
		}
		last = c.Reason + ": " + c.Message
		return c.Reason == reason && strings.Contains(c.Message, says), nil
	})
	if err != nil {
		t.Fatalf("Mirror %s: Ready is %q, want reason %s saying %s", m.Name, last, reason, says)
	}
}

func noObject(t *testing.T, cl client.Client, ns, name string) {
	t.Helper()
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}} {
		if err := cl.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj); err == nil {
			t.Errorf("%T %s/%s exists: the operator wrote it for a tenant whose RBAC denies it", obj, ns, name)
		}
	}
}
