package manager_test

import (
	"errors"
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// A manager whose API server does not answer fails Start at once, naming
// the address, instead of waiting out Options.CacheSyncTimeout.
func TestStartFailsWhenUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config())
	cfg.Host = "https://" + l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := manager.New(cfg, manager.Options{Metrics: manager.MetricsOptions{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Register[*corev1.ConfigMap](m.Cache(), cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	err = m.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), cfg.Host) || !strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("Start = %v, want an error saying the API server at %s does not answer", err, cfg.Host)
	}
	if !errors.Is(err, manager.ErrUnreachable) {
		t.Errorf("Start = %v, want an error wrapping manager.ErrUnreachable", err)
	}
	if errors.Is(err, cache.ErrNotSynced) {
		t.Errorf("Start = %v: it waited for the cache to sync", err)
	}
}
