package manager_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// newManager returns a manager of the test control plane whose cache holds
// namespace ns, with its servers on free loopback ports.
func newManager(t *testing.T, ns string, opts manager.Options) *manager.Manager {
	t.Helper()
	if opts.Metrics.BindAddress == "" {
		opts.Metrics.BindAddress = "127.0.0.1:0"
	}
	if opts.Health.BindAddress == "" {
		opts.Health.BindAddress = "127.0.0.1:0"
	}
	if opts.Cache.Namespaces == nil {
		opts.Cache = cache.Options{Namespaces: []string{ns}}
	}
	m, err := manager.New(env.Config(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// started is a manager running in the background.
type started struct {
	cancel context.CancelFunc
	done   chan error
}

// start runs m until stop or the end of the test.
func start(t *testing.T, m *manager.Manager) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- m.Start(ctx) }()
	t.Cleanup(func() { s.stop(t) })
	eventually(t, "the servers to listen", func() bool { return m.HealthProbeAddr() != "" })
	return s
}

// stop stops the manager and returns Start's error; it may be called again.
func (s *started) stop(t *testing.T) error {
	t.Helper()
	s.cancel()
	select {
	case err, ok := <-s.done:
		if ok {
			close(s.done)
		}
		return err
	case <-time.After(time.Minute):
		t.Fatal("the manager did not stop within a minute")
		return nil
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// get returns the status code and body of GET url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}
