package mcprovider_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/multicluster-runtime/providers/clusters"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/fleet/mcprovider"
)

func newCluster(t *testing.T) cluster.Cluster {
	t.Helper()
	cl, err := cluster.New(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func waitEngaged(t *testing.T, f *fleet.Fleet, name string, engaged bool) *fleet.Cluster {
	t.Helper()
	var c *fleet.Cluster
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		var err error
		c, err = f.Cluster(name)
		return (err == nil) == engaged, nil
	})
	if err != nil {
		t.Fatalf("member %s engaged: want %t: %v", name, engaged, err)
	}
	return c
}

// multicluster-runtime's clusters provider, unchanged, engages fleet
// members: added, the same cluster again (a no-op), removed.
func TestClustersProviderEngagesMembers(t *testing.T) {
	f := newFleet(t, fleet.Options{})
	cms, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	if _, err := env.Client().CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := clusters.New()
	aw := mcprovider.Aware(f)
	cl := newCluster(t)
	if err := p.Add(t.Context(), "east", cl, aw); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Remove("east") })
	member := waitEngaged(t, f, "east", true)
	if err := member.Cache().WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	l, err := cms.In("east")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get(ns, "a"); err != nil {
		t.Errorf("read through the member's Lister: %v", err)
	}

	if err := aw.Engage(t.Context(), "east", cl); err != nil {
		t.Fatal(err)
	}
	if again, err := f.Cluster("east"); err != nil || again != member {
		t.Errorf("the same cluster engaged again replaced the member (%v)", err)
	}

	p.Remove("east")
	waitEngaged(t, f, "east", false)
}

// runnable is a multicluster-runtime ProviderRunnable of one cluster.
type runnable struct{ cl cluster.Cluster }

var _ multicluster.ProviderRunnable = runnable{}

func (r runnable) Start(ctx context.Context, aw multicluster.Aware) error {
	if err := aw.Engage(ctx, "west", r.cl); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// A ProviderRunnable runs as a fleet's provider: the fleet's Start runs it
// and returns nil when its context ends.
func TestProviderRuns(t *testing.T) {
	f := newFleet(t, fleet.Options{Providers: []fleet.Provider{mcprovider.Provider(runnable{newCluster(t)})}})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var startErr error
	wg.Go(func() { startErr = f.Start(ctx) })
	waitEngaged(t, f, "west", true)
	cancel()
	wg.Wait()
	if startErr != nil {
		t.Errorf("fleet: %v", startErr)
	}
	if _, err := f.Cluster("west"); !errors.Is(err, fleet.ErrNotEngaged) {
		t.Errorf("member after the fleet stopped: %v, want ErrNotEngaged", err)
	}
}

// newFleet returns a new fleet, failing tb if it cannot.
func newFleet(tb testing.TB, opts fleet.Options) *fleet.Fleet {
	tb.Helper()
	f, err := fleet.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}
