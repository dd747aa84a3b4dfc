package mirror_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

// An operator allowed all that config/rbac grants but get on ConfigMaps
// cannot fetch a source, which its cache holds as metadata only: the
// Mirror's Ready condition (SyncFailed) and a Warning Event say so, naming
// the verb and the resource.
func TestSourceThatCannotBeFetchedIsReported(t *testing.T) {
	user := "mirror-" + strings.ToLower(t.Name())
	cfg := rest.CopyConfig(env.Config())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	grantRoleWithout(t, user, "configmaps", "get")
	w := operatorWith(t, cfg, mirror.Policy{})
	ns := w.namespace(map[string]string{"team": "a"})
	w.configMap(w.home, "cfg", map[string]string{"k": "v"})
	m := w.mirror("cfg", v1alpha1.KindConfigMap, "cfg", w.selecting(map[string]string{"team": "a"}))

	w.eventually("SyncFailed", w.ready(m, v1alpha1.ReasonSyncFailed, 0))
	w.eventually("a SyncFailed Event", w.event(m, v1alpha1.ReasonSyncFailed))
	got := &v1alpha1.Mirror{}
	if err := w.cl.Get(t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
		t.Fatal(err)
	}
	msg := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady).Message
	for _, want := range []string{"ConfigMap " + w.home + "/cfg", `"get"`, `"configmaps"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready's message %q does not mention %s", msg, want)
		}
	}
	if _, err := w.copyData(ns, "cfg"); err == nil {
		t.Error("a copy was made of a source the operator may not read")
	}
}

// grantRoleWithout binds user to config/rbac's ClusterRole less verb on
// resource.
func grantRoleWithout(t *testing.T, user, resource, verb string) {
	t.Helper()
	b, err := os.ReadFile("../../../config/rbac/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(b, role); err != nil {
		t.Fatal(err)
	}
	role.ObjectMeta = metav1.ObjectMeta{Name: user}
	for i, r := range role.Rules {
		if slices.Contains(r.Resources, resource) {
			role.Rules[i].Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == verb })
		}
	}
	rbac := env.Client().RbacV1()
	ctx := t.Context()
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = rbac.ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		_ = rbac.ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{})
	})
}
