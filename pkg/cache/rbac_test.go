package cache_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// envtest's kube-apiserver runs with --authorization-mode=RBAC, so an
// impersonated user can do only what a Role grants it.

// A user allowed to list ConfigMaps in a namespace but not to watch them:
// the cache lists them (client-go falls back from the streaming list to a
// list), and Status names the watch it may not make, with the resource and
// the namespace to grant it in.
func TestForbiddenWatchNamesVerbAndNamespace(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	const user = "opkit-test-list-only"
	grant(t, ns, user, "get", "list")

	cfg := env.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	var logs lines
	logger := funcr.New(logs.add, funcr.Options{Verbosity: 1})
	c, err := cache.New(cfg, cache.Options{Namespaces: []string{ns}, Logger: logger})
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
	var st cache.TypeStatus
	waitFor(t, 30*time.Second, func() bool {
		st = c.Status()[0]
		return st.Err != nil && strings.Contains(st.Err.Error(), "watch ")
	})
	for _, want := range []string{"watch configmaps in namespace " + ns, "forbidden", "RBAC", `"watch"`} {
		if !strings.Contains(st.Err.Error(), want) {
			t.Errorf("Status().Err %q does not mention %q", st.Err, want)
		}
	}
	// What the user may list is cached all the same.
	waitFor(t, 30*time.Second, cms.HasSynced)
	if _, err := cms.Get(ns, "csa"); err != nil {
		t.Errorf("Get of a listed object = %v", err)
	}
	// The failure is logged at V(0) once, and its retries at V(1).
	waitFor(t, 30*time.Second, func() bool { return logs.count(`"msg"="List or watch failed again"`, `"verb"="watch"`) > 0 })
	if n := logs.count(`"msg"="List or watch failed"`, `"verb"="watch"`); n != 1 {
		t.Errorf("the forbidden watch was logged at V(0) %d times, want 1:\n%s", n, logs.String())
	}
}

// lines records what a funcr logger writes.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, args)
}

// count returns how many lines contain every one of parts.
func (l *lines) count(parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.all {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
			n++
		}
	}
	return n
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// A user with no rule in the namespace: WaitForSync names the type, the
// verb, the resource and the namespace.
func TestForbiddenListNamesNamespace(t *testing.T) {
	ns := env.Namespace(t)
	cfg := env.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "opkit-test-nobody"}
	c, err := cache.New(cfg, cache.Options{Namespaces: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancelWait := context.WithTimeout(ctx, 3*time.Second)
	defer cancelWait()
	err = c.WaitForSync(waitCtx)
	if !errors.Is(err, cache.ErrNotSynced) {
		t.Fatalf("WaitForSync = %v, want ErrNotSynced", err)
	}
	for _, want := range []string{"/v1, Kind=ConfigMap", "in namespaces " + ns, "list configmaps in namespace " + ns, "forbidden", `"list"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("WaitForSync error %q does not mention %q", err, want)
		}
	}
}

// grant lets user do verbs on ConfigMaps in ns. The API server's authorizer
// learns of it within moments; the cache's retries cover the gap.
func grant(t *testing.T, ns, user string, verbs ...string) {
	t.Helper()
	ctx := t.Context()
	rbac := env.Client().RbacV1()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "configmaps", Namespace: ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}},
	}
	if _, err := rbac.Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "configmaps", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := rbac.RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
