package cache_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// A kind an owner registers at run time that RBAC forbids: its Lister's
// Status names the verb and resource to grant and marks it AfterStart, for
// the owner's own status, while the types registered before Start stay
// synced and readable.
func TestRunTimeKindForbiddenReportsThroughItsLister(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	const user = "opkit-test-configmaps-only"
	grant(t, ns, user, "get", "list", "watch")

	cfg := rest.CopyConfig(env.Config())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := cache.New(cfg, cache.Options{Namespaces: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	syncCtx, cancelSync := context.WithTimeout(ctx, 30*time.Second)
	defer cancelSync()
	if err := c.WaitForSync(syncCtx); err != nil {
		t.Fatal(err)
	}

	secrets, err := cache.Register[*corev1.Secret](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var st cache.TypeStatus
	waitFor(t, 30*time.Second, func() bool { st = secrets.Status(); return st.Err != nil })
	if !st.AfterStart || st.Synced || st.GVK.Kind != "Secret" {
		t.Errorf("Status of Secrets registered at run time, forbidden = %+v, want AfterStart, not synced", st)
	}
	for _, want := range []string{"list secrets in namespace " + ns, "forbidden", "RBAC"} {
		if !strings.Contains(st.Err.Error(), want) {
			t.Errorf("Lister.Status().Err %q does not mention %q", st.Err, want)
		}
	}
	if st := cms.Status(); !st.Synced || st.Err != nil || st.AfterStart {
		t.Errorf("Status of ConfigMaps, registered before Start = %+v, want synced, no error", st)
	}
	if _, err := cms.Get(ns, "csa"); err != nil {
		t.Errorf("Get of a ConfigMap beside a forbidden run-time kind = %v", err)
	}
}
