package fleet_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/fleet"
)

// BenchmarkMemberWriters engages 100 members confined to a namespace each,
// with ConfigMaps registered, and reports:
//   - the live heap a member's Client adds by its first write (its REST
//     mapping), and what its writers add then: a Writer that has applied
//     one ConfigMap, and a WriterAs;
//   - the time of an apply through a member's Writer that is sent, and of
//     one skipped since the member's cache holds what it would write,
//     and their ratio.
func BenchmarkMemberWriters(b *testing.B) {
	const n, applies = 100, 200
	for range b.N {
		f := newFleet(b, fleet.Options{})
		if _, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{}); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(b.Context())
		members := make([]*fleet.Cluster, n)
		for i := range members {
			ns := env.Namespace(b)
			if err := f.Engage(ctx, fleet.Member{Name: ns, Config: env.Config(), Namespace: ns}); err != nil {
				b.Fatal(err)
			}
			members[i] = mustCluster(b, f, ns)
			if err := members[i].Cache().WaitForSync(ctx); err != nil {
				b.Fatal(err)
			}
		}
		_, h0 := settle()
		for _, m := range members {
			if err := m.Client().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "first"}}); err != nil {
				b.Fatal(err)
			}
		}
		_, h1 := settle()
		for _, m := range members {
			applyAndWait(b, m, "v")
			_ = m.WriterAs("bench", rest.ImpersonationConfig{UserName: "alice"})
		}
		_, h2 := settle()
		b.ReportMetric(float64(h1-h0)/n, "client-heap-bytes/member")
		b.ReportMetric(float64(h2-h1)/n, "writers-heap-bytes/member")

		m := members[0]
		start := time.Now()
		for i := range applies {
			apply(b, m, strconv.Itoa(i))
		}
		sent := time.Since(start)
		applyAndWait(b, m, "same")
		start = time.Now()
		for range applies {
			apply(b, m, "same")
		}
		skipped := time.Since(start)
		b.ReportMetric(float64(sent.Nanoseconds())/applies, "sent-apply-ns")
		b.ReportMetric(float64(skipped.Nanoseconds())/applies, "skipped-apply-ns")
		b.ReportMetric(float64(skipped)/float64(sent), "skipped/sent")
		cancel()
	}
}

// apply applies the ConfigMap "bench" holding v through m's Writer, and
// returns the resourceVersion it left.
func apply(b *testing.B, m *fleet.Cluster, v string) string {
	cm := corev1ac.ConfigMap("bench", m.Namespace()).WithData(map[string]string{"v": v})
	if err := m.Writer("bench").Apply(b.Context(), cm); err != nil {
		b.Fatal(err)
	}
	return *cm.ResourceVersion
}

// applyAndWait applies as apply does and waits until m's cache holds
// what the apply left.
func applyAndWait(b *testing.B, m *fleet.Cluster, v string) {
	rv := apply(b, m, v)
	err := wait.PollUntilContextTimeout(b.Context(), 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cm := &corev1.ConfigMap{}
		err := m.CachedClient().Get(ctx, client.ObjectKey{Namespace: m.Namespace(), Name: "bench"}, cm)
		return err == nil && cm.ResourceVersion == rv, nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
