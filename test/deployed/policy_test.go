package deployed

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

// asUser returns a clientset that acts as user, with user's RBAC.
func asUser(t testing.TB, user string) kubernetes.Interface {
	t.Helper()
	cfg := env.Config()
	cfg.Impersonate.UserName = user
	return kubernetes.NewForConfigOrDie(cfg)
}

// waitForIdentityPolicy waits until the API server enforces config/policy's
// service-account policy: a dry run of a Mirror by a user who may create
// Mirrors in default, and act as no ServiceAccount, is refused.
func waitForIdentityPolicy(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	const user = "identity-policy-probe"
	rule := rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"mirrors"}, Verbs: []string{"create"}}
	roleBinding(t, "default", user, rule, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user})
	cfg := env.Config()
	cfg.Impersonate.UserName = user
	cl, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	probe := newMirror("default", "identity-policy-probe", v1alpha1.KindConfigMap, "x", nil)
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := cl.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "may not act as ServiceAccount"), nil
	})
	if err != nil {
		t.Fatalf("config/policy's service-account policy is not enforced within a minute: %v", err)
	}
}

// withToken returns a config of the control plane that authenticates with
// token alone.
func withToken(token string) *rest.Config {
	return &rest.Config{Host: env.Config().Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config().CAData}}
}

// waitForPolicy waits until the API server enforces config/policy on user:
// a policy takes effect a moment after it is created. The probe is a dry
// run of deleting an object that is no copy, which RBAC allows user.
func waitForPolicy(t testing.TB, user string) {
	t.Helper()
	cs := asUser(t, user)
	stray := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "policy-probe", Namespace: "default"}}
	if _, err := env.Client().CoreV1().ConfigMaps("default").Create(context.Background(), stray, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	dry := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := cs.CoreV1().ConfigMaps("default").Delete(ctx, stray.Name, dry)
		return err != nil && strings.Contains(err.Error(), "writes only its copies"), nil
	})
	if err != nil {
		t.Fatalf("config/policy is not enforced on %s within a minute: %v", user, err)
	}
}

// copyMeta is the metadata of a copy of Mirror home/m in ns.
func copyMeta(ns, name, home string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
		mirror.LabelMirrorNamespace: home, mirror.LabelMirrorName: "m",
	}}
}

// TestPolicyBoundsTheOperatorsToken: with the operator's own token (its
// user and RBAC), what a leaked token is worth. The operator reads and
// writes no tenant's data as itself (it acts as each Mirror's
// ServiceAccount), so config/rbac grants it no get, create or patch on
// ConfigMaps and Secrets; config/policy refuses every delete but of a
// copy; and it may act as no ServiceAccount that no namespace let it act
// as. What remains is list and watch, which its caches need: they return
// the objects' data too, which docs/rbac.md says.
func TestPolicyBoundsTheOperatorsToken(t *testing.T) {
	d := render(t)
	id := d.apply(t, "")
	op := asUser(t, id.user())
	admin := env.Client()
	ctx := t.Context()
	home := env.Namespace(t)
	open := env.Namespace(t)
	patch := []byte(`{"metadata":{"labels":{"` + mirror.AcceptLabel(home) + `":"true"}}}`)
	if _, err := admin.CoreV1().Namespaces().Patch(ctx, open, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	victim, err := admin.CoreV1().ConfigMaps(open).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: open}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret, err := admin.CoreV1().Secrets(home).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ops-only", Namespace: home}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bootstrap := &corev1.Secret{ObjectMeta: copyMeta("kube-system", "bootstrap-token-abcdef", home), Type: corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{"token-id": "abcdef", "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true"}}
	inOpen := bootstrap.DeepCopy()
	inOpen.Namespace = open
	// The operator's token acting as home's ServiceAccount, which nobody
	// let it act as.
	asTenant := withToken(token(t, id, 600))
	asTenant.Impersonate.UserName = "system:serviceaccount:" + home + ":mirror"
	refused := []struct {
		name, want string
		write      func() error
	}{
		{"a bootstrap token in kube-system", `cannot create resource "secrets"`, func() error {
			_, err := op.CoreV1().Secrets("kube-system").Create(ctx, bootstrap, metav1.CreateOptions{})
			return err
		}},
		{"a bootstrap token where copies are accepted", `cannot create resource "secrets"`, func() error {
			_, err := op.CoreV1().Secrets(open).Create(ctx, inOpen, metav1.CreateOptions{})
			return err
		}},
		{"a copy where copies are accepted", `cannot create resource "configmaps"`, func() error {
			_, err := op.CoreV1().ConfigMaps(open).Create(ctx, &corev1.ConfigMap{ObjectMeta: copyMeta(open, "c", home)}, metav1.CreateOptions{})
			return err
		}},
		{"the victim's object made a copy", `cannot patch resource "configmaps"`, func() error {
			p := []byte(`{"metadata":{"labels":{"` + mirror.LabelMirrorNamespace + `":"` + home + `","` + mirror.LabelMirrorName + `":"m"}},"data":{"x":"y"}}`)
			_, err := op.CoreV1().ConfigMaps(open).Patch(ctx, victim.Name, types.MergePatchType, p, metav1.PatchOptions{})
			return err
		}},
		{"the victim's object deleted", "writes only its copies", func() error {
			return op.CoreV1().ConfigMaps(open).Delete(ctx, victim.Name, metav1.DeleteOptions{})
		}},
		{"a Secret read", `cannot get resource "secrets"`, func() error {
			_, err := op.CoreV1().Secrets(home).Get(ctx, secret.Name, metav1.GetOptions{})
			return err
		}},
		{"a Secret read as the namespace's Mirror ServiceAccount", "cannot impersonate", func() error {
			_, err := kubernetes.NewForConfigOrDie(asTenant).CoreV1().Secrets(home).Get(ctx, secret.Name, metav1.GetOptions{})
			return err
		}},
	}
	for _, r := range refused {
		err := r.write()
		if err == nil || !strings.Contains(err.Error(), r.want) {
			t.Errorf("%s with the operator's token: %v, want refused saying %q", r.name, err, r.want)
		}
	}

	// What the operator does as itself: delete a copy.
	cm, err := admin.CoreV1().ConfigMaps(open).Create(ctx, &corev1.ConfigMap{ObjectMeta: copyMeta(open, "c", home), Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.CoreV1().ConfigMaps(open).Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("the operator deleting a copy: %v", err)
	}
	if got, err := admin.CoreV1().ConfigMaps(open).Get(ctx, victim.Name, metav1.GetOptions{}); err != nil || got.ResourceVersion != victim.ResourceVersion {
		t.Errorf("the victim's object after the attempts: %v, resourceVersion %s, want %s unchanged", err, got.GetResourceVersion(), victim.ResourceVersion)
	}
}
