package manager_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// newManager returns a manager of the test control plane whose cache holds
// namespace ns, with its servers on free loopback ports.
func newManager(t testing.TB, ns string, opts manager.Options) *manager.Manager {
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
func start(t testing.TB, m *manager.Manager) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- m.Start(ctx) }()
	t.Cleanup(func() { s.stop(t) })
	eventually(t, "the servers to listen", func() bool { return m.HealthProbeAddr() != "" })
	return s
}

// stop stops the manager and returns Start's error; it may be called again.
func (s *started) stop(t testing.TB) error {
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

func eventually(t testing.TB, what string, cond func() bool) {
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

// logBuffer collects what a logger writes, for tests that check a message
// reached the manager's logger. It is safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// logger returns a logger at V(1) that writes to l.
func (l *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.b.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 1})
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// gauge returns the value of the gauge name with the given label pairs in
// reg, or fails the test if there is no such series.
func gauge(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	return series(t, reg, name, labels...).GetGauge().GetValue()
}

// counter returns the value of the counter name with the given
// label pairs in reg, or fails the test if there is no such series.
func counter(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	return series(t, reg, name, labels...).GetCounter().GetValue()
}

// series returns the series name with the given label pairs in reg, or
// fails the test if there is none.
func series(t testing.TB, reg *prometheus.Registry, name string, labels ...string) *dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || (lp.GetName() == labels[i] && lp.GetValue() == labels[i+1])
				}
				if !found {
					continue metric
				}
			}
			return m
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return nil
}
