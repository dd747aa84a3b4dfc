package cache_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// closedAddress returns a loopback address nothing listens on.
func closedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// An API server that does not answer is reported as such, naming its
// address, not as a type whose CRD is not installed: ConfigMaps are
// built in.
func TestUnreachableIsNotNotInstalled(t *testing.T) {
	cfg := rest.CopyConfig(env.Config())
	cfg.Host = "https://" + closedAddress(t)
	var logs lines
	c, err := cache.New(cfg, cache.Options{Logger: funcr.New(logs.add, funcr.Options{Verbosity: 1})})
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
	var st cache.TypeStatus
	waitFor(t, 30*time.Second, func() bool { st = c.Status()[0]; return st.Err != nil })
	if errors.Is(st.Err, cache.ErrNotInstalled) || strings.Contains(st.Err.Error(), "not served") {
		t.Errorf("Status().Err = %q: says the type is not installed, but the API server is out of reach", st.Err)
	}
	if !strings.Contains(st.Err.Error(), "cannot reach the API server at "+cfg.Host) {
		t.Errorf("Status().Err = %q, want it to say it cannot reach the API server at %s", st.Err, cfg.Host)
	}
	waitFor(t, 30*time.Second, func() bool { return logs.count("Cannot reach the API server") > 0 })
	if n := logs.count("not installed"); n > 0 {
		t.Errorf("logged %d times that the type is not installed:\n%s", n, logs.String())
	}
}
