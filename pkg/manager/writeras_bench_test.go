package manager_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// benchManager returns a manager of the test control plane, and a
// namespace in which every ServiceAccount may write ConfigMaps.
func benchManager(b *testing.B) (*manager.Manager, string) {
	b.Helper()
	ns := env.Namespace(b)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "writers"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "get"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "writers"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "writers"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + ns}}}
	if _, err := env.Client().RbacV1().Roles(ns).Create(b.Context(), role, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := env.Client().RbacV1().RoleBindings(ns).Create(b.Context(), binding, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	m, err := manager.New(env.Config(), manager.Options{Cache: cache.Options{Namespaces: []string{ns}},
		Metrics: manager.MetricsOptions{BindAddress: "127.0.0.1:0"}, Health: manager.HealthOptions{BindAddress: "127.0.0.1:0"}})
	if err != nil {
		b.Fatal(err)
	}
	// The authorizer sees the binding a moment after it is made.
	as := m.WriterAs("bench", manager.ServiceAccount(ns, "warm"))
	for i := 0; ; i++ {
		err := as.Create(b.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("warm-", i)}})
		if err == nil {
			break
		}
		if i > 300 {
			b.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return m, ns
}

// BenchmarkWriterAs creates ConfigMaps in turn with a controller's Writer
// (as the operator) and its WriterAs (as a ServiceAccount, which the API
// server authorizes, after checking the operator may impersonate it), and
// reports each one's time per create and their ratio, measured side by
// side in one run.
func BenchmarkWriterAs(b *testing.B) {
	m, ns := benchManager(b)
	own, as := m.Writer("bench"), m.WriterAs("bench", manager.ServiceAccount(ns, "tenant"))
	var ownTime, asTime time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		if err := own.Create(b.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("own-", i)}}); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if err := as.Create(b.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("as-", i)}}); err != nil {
			b.Fatal(err)
		}
		ownTime += mid.Sub(start)
		asTime += time.Since(mid)
		i++
	}
	b.ReportMetric(float64(ownTime.Nanoseconds())/float64(i), "own-ns/create")
	b.ReportMetric(float64(asTime.Nanoseconds())/float64(i), "as-ns/create")
	b.ReportMetric(float64(asTime)/float64(ownTime), "as/own")
}

// BenchmarkWriterAsIdentities acts as 1,000 distinct ServiceAccounts, one
// create each, and reports what that leaves behind: the heap in use and
// the goroutines, after a garbage collection, less those before.
func BenchmarkWriterAsIdentities(b *testing.B) {
	const identities = 1000
	m, ns := benchManager(b)
	var heap, goroutines float64
	round := 0
	for b.Loop() {
		before, gBefore := inUse(), runtime.NumGoroutine()
		for i := range identities {
			as := m.WriterAs("bench", manager.ServiceAccount(ns, fmt.Sprint("tenant-", i)))
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("r%d-id%d", round, i)}}
			if err := as.Create(b.Context(), cm); err != nil {
				b.Fatal(err)
			}
		}
		heap += float64(int64(inUse()) - int64(before))
		goroutines += float64(runtime.NumGoroutine() - gBefore)
		round++
	}
	b.ReportMetric(heap/float64(round)/identities, "heap-B/identity")
	b.ReportMetric(goroutines/float64(round), "goroutines/1000-identities")
}

// inUse is the heap in use after a garbage collection.
func inUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
