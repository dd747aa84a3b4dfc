package cachedclient_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// The manager's CachedClient reads from its cache and writes through the
// API server; its Client reads from the API server.
func TestManagerCachedClient(t *testing.T) {
	ns := env.Namespace(t)
	reported := make(chan *cache.UnregisteredReadError, 1)
	mgr, err := manager.New(env.Config(), manager.Options{
		Metrics: manager.MetricsOptions{BindAddress: "127.0.0.1:0"},
		Health:  manager.HealthOptions{BindAddress: "127.0.0.1:0"},
		Cache: cache.Options{
			Namespaces: []string{ns},
			Mutations:  cache.MutationOptions{OnMutation: testenv.ReportMutations(t)},
			UnregisteredReads: cache.UnregisteredReadOptions{Fail: true, OnRead: func(err *cache.UnregisteredReadError) {
				select {
				case reported <- err:
				default:
					t.Errorf("a second read of an unregistered kind: %v", err)
				}
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	configMaps, err := cache.Register[*corev1.ConfigMap](mgr.Cache(), cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"}}
	if err := mgr.UncachedClient().Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager Start: %v", err)
		}
	})
	syncCtx, cancelSync := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancelSync()
	if err := mgr.Cache().WaitForSync(syncCtx); err != nil {
		t.Fatal(err)
	}

	cl := mgr.CachedClient()
	key := crclient.ObjectKeyFromObject(secret)
	if err := cl.Get(t.Context(), key, &corev1.Secret{}); !errors.Is(err, cache.ErrNotRegistered) {
		t.Errorf("CachedClient Get of a kind the cache does not hold = %v, want cache.ErrNotRegistered", err)
	}
	select {
	case err := <-reported:
		if !strings.Contains(err.Error(), "cache.Register[*v1.Secret]") {
			t.Errorf("report of the read: %v; want it to name cache.Register[*v1.Secret]", err)
		}
	default:
		t.Error("the read of an unregistered kind was not reported")
	}
	if err := mgr.UncachedClient().Get(t.Context(), key, &corev1.Secret{}); err != nil {
		t.Errorf("Client Get, from the API server = %v", err)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "made"}}
	op, err := controllerutil.CreateOrUpdate(t.Context(), cl, cm, func() error {
		cm.Data = map[string]string{"v": "1"}
		return nil
	})
	if err != nil || op != controllerutil.OperationResultCreated {
		t.Fatalf("CreateOrUpdate through CachedClient = %q, %v; want created", op, err)
	}
	waitForCache(t, configMaps, ns, "made")
	got := &corev1.ConfigMap{}
	if err := cl.Get(t.Context(), crclient.ObjectKeyFromObject(cm), got); err != nil || got.Data["v"] != "1" {
		t.Errorf("CachedClient Get after the cache caught up = data %v, %v; want v=1", got.Data, err)
	}
}
