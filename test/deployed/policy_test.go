package deployed

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

// asUser returns a clientset that acts as user, with user's RBAC.
func asUser(t testing.TB, user string) kubernetes.Interface {
	t.Helper()
	cfg := env.Config()
	cfg.Impersonate.UserName = user
	return kubernetes.NewForConfigOrDie(cfg)
}

// waitForPolicy waits until the API server enforces config/policy on user:
// a policy takes effect a moment after it is created.
func waitForPolicy(t testing.TB, user string) {
	t.Helper()
	cs := asUser(t, user)
	stray := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "policy-probe", Namespace: "default"}}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, stray, dry)
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
// user and RBAC), what config/rbac allows but the Mirror never does is
// refused by config/policy, and what the Mirror does is allowed: the
// worth of a leaked token.
func TestPolicyBoundsTheOperatorsToken(t *testing.T) {
	d := render(t)
	id := d.apply(t, "")
	op := asUser(t, id.user())
	admin := env.Client()
	ctx := t.Context()
	home := env.Namespace(t)
	open, closed := env.Namespace(t), env.Namespace(t)
	patch := []byte(`{"metadata":{"labels":{"` + mirror.AcceptLabel(home) + `":"true"}}}`)
	if _, err := admin.CoreV1().Namespaces().Patch(ctx, open, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	victim, err := admin.CoreV1().ConfigMaps(open).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: open}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := &corev1.Secret{ObjectMeta: copyMeta("kube-system", "bootstrap-token-abcdef", home), Type: corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{"token-id": "abcdef", "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true"}}
	inOpen := token.DeepCopy()
	inOpen.Namespace = open
	refused := []struct {
		name, want string
		write      func() error
	}{
		{"a bootstrap token in kube-system", "never writes into kube-* namespaces", func() error {
			_, err := op.CoreV1().Secrets("kube-system").Create(ctx, token, metav1.CreateOptions{})
			return err
		}},
		{"a bootstrap token where copies are accepted", "only Secrets of type Opaque or kubernetes.io/tls", func() error {
			_, err := op.CoreV1().Secrets(open).Create(ctx, inOpen, metav1.CreateOptions{})
			return err
		}},
		{"a copy where none are accepted", "namespace " + closed + " has not opted in", func() error {
			_, err := op.CoreV1().ConfigMaps(closed).Create(ctx, &corev1.ConfigMap{ObjectMeta: copyMeta(closed, "c", home)}, metav1.CreateOptions{})
			return err
		}},
		{"an object that is no copy", "writes only its copies", func() error {
			_, err := op.CoreV1().ConfigMaps(open).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: open}}, metav1.CreateOptions{})
			return err
		}},
		{"the victim's object made a copy", "writes only its copies", func() error {
			p := []byte(`{"metadata":{"labels":{"` + mirror.LabelMirrorNamespace + `":"` + home + `","` + mirror.LabelMirrorName + `":"m"}},"data":{"x":"y"}}`)
			_, err := op.CoreV1().ConfigMaps(open).Patch(ctx, victim.Name, types.MergePatchType, p, metav1.PatchOptions{})
			return err
		}},
		{"the victim's object deleted", "writes only its copies", func() error {
			return op.CoreV1().ConfigMaps(open).Delete(ctx, victim.Name, metav1.DeleteOptions{})
		}},
	}
	for _, r := range refused {
		err := r.write()
		if err == nil || !strings.Contains(err.Error(), r.want) {
			t.Errorf("%s with the operator's token: %v, want refused saying %q", r.name, err, r.want)
		}
	}

	// What the Mirror does: create, patch and delete its copy; delete a
	// copy where copies are no longer accepted.
	cm, err := op.CoreV1().ConfigMaps(open).Create(ctx, &corev1.ConfigMap{ObjectMeta: copyMeta(open, "c", home), Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the operator creating a copy where copies are accepted: %v", err)
	}
	if _, err := op.CoreV1().ConfigMaps(open).Patch(ctx, cm.Name, types.MergePatchType, []byte(`{"data":{"k":"w"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("the operator patching its copy: %v", err)
	}
	unpatch := []byte(`{"metadata":{"labels":{"` + mirror.AcceptLabel(home) + `":null}}}`)
	if _, err := admin.CoreV1().Namespaces().Patch(ctx, open, types.MergePatchType, unpatch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := op.CoreV1().ConfigMaps(open).Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("the operator deleting its copy where copies are no longer accepted: %v", err)
	}
	if got, err := admin.CoreV1().ConfigMaps(open).Get(ctx, victim.Name, metav1.GetOptions{}); err != nil || got.ResourceVersion != victim.ResourceVersion {
		t.Errorf("the victim's object after the attempts: %v, resourceVersion %s, want %s unchanged", err, got.GetResourceVersion(), victim.ResourceVersion)
	}
}
