package webhook_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/webhook"
	"github.com/opkit-dev/opkit/pkg/webhook/requester"
)

// TestRequesterCheckThroughTheAPIServer: a ConfigMap whose data.copyFrom
// names a Secret asks the operator to read that Secret for its creator;
// the validator lets it in only if the creator may get the Secret, asked
// of the real API server for the user it sent, with real RBAC.
func TestRequesterCheckThroughTheAPIServer(t *testing.T) {
	ns := selectedNamespace(t)
	crt, key := selfSigned(t)
	wo := manager.WebhookOptions{Port: freePort(t), CertDir: certDir(t, crt, key)}
	m := newManager(t, ns, wo)
	check, err := requester.New(m.UncachedClient(), requester.Options{})
	if err != nil {
		t.Fatal(err)
	}
	validate := func(ctx context.Context, cm *corev1.ConfigMap) (webhook.Warnings, error) {
		src, ok := cm.Data["copyFrom"]
		if !ok {
			return nil, nil
		}
		return nil, check.Check(ctx, requester.Permission{Verb: "get", Resource: "secrets", Namespace: cm.Namespace, Name: src})
	}
	hooks := webhook.Hooks[*corev1.ConfigMap]{
		Defaulter: webhook.DefaulterFunc[*corev1.ConfigMap](func(context.Context, *corev1.ConfigMap) error { return nil }),
		Validator: webhook.ValidatorFuncs[*corev1.ConfigMap]{Create: validate},
	}
	if err := webhook.Register(m, hooks); err != nil {
		t.Fatal(err)
	}
	start(t, m)
	url := "https://127.0.0.1:" + strconv.Itoa(wo.Port)
	installWebhooks(t, ns, url, crt, webhook.MutatePath(configMapKind), webhook.ValidatePath(configMapKind))

	// alice may create ConfigMaps in ns and get Secret "shared", no other.
	user := "alice-" + ns
	grant(t, ns, user, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"shared"}},
	})
	cfg := env.Config()
	cfg.Impersonate.UserName = user
	alice := kubernetes.NewForConfigOrDie(cfg)
	cms := alice.CoreV1().ConfigMaps(ns)

	want := `user "` + user + `" may not get secrets "ops-only" in namespace "` + ns + `"`
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	poll(t, "the API server to call the webhooks", func() bool {
		_, err := cms.Create(t.Context(), configMap(ns, "probe", map[string]string{"copyFrom": "ops-only"}), dry)
		return err != nil && strings.Contains(err.Error(), want)
	})
	_, err = cms.Create(t.Context(), configMap(ns, "steal", map[string]string{"copyFrom": "ops-only"}), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `configmaps "steal" is forbidden`) {
		t.Fatalf("alice's ConfigMap copying a Secret she may not get: %v, want Forbidden naming %q", err, want)
	}
	if _, err := cms.Create(t.Context(), configMap(ns, "fine", map[string]string{"copyFrom": "shared"}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("alice's ConfigMap copying a Secret she may get: %v", err)
	}
}

// grant binds user to a Role of rules in ns.
func grant(t *testing.T, ns, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	rbac := env.Client().RbacV1()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}, Rules: rules}
	if _, err := rbac.Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := rbac.RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
