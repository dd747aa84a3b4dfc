package manager_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// stall holds the first Lease update sent through it once armed until the
// request's context ends, as an API server too slow to answer, or a
// process frozen mid-request, would; and counts the Lease reads after it.
type stall struct {
	next     http.RoundTripper
	armed    atomic.Bool
	stalled  chan struct{} // closed when the update is held
	returned chan struct{} // closed when it has failed
	reads    atomic.Int32  // Lease GETs since returned was closed
	done     atomic.Bool
}

func newStall() *stall {
	return &stall{stalled: make(chan struct{}), returned: make(chan struct{})}
}

func (s *stall) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.Contains(req.URL.Path, "/leases/") {
		return s.next.RoundTrip(req)
	}
	switch {
	case req.Method == http.MethodPut && s.armed.CompareAndSwap(true, false):
		close(s.stalled)
		<-req.Context().Done()
		s.done.Store(true)
		close(s.returned)
		return nil, context.Cause(req.Context())
	case req.Method == http.MethodGet && s.done.Load():
		s.reads.Add(1)
	}
	return s.next.RoundTrip(req)
}

// A leader with ReleaseOnCancel whose renewal hangs past RenewDeadline,
// while another process takes the Lease, gives up only its own hold: the
// other process keeps the Lease, and the old leader, campaigning again,
// stands by. client-go's elector releases the Lease it has just read
// without looking at its holder, by the record it last observed itself:
// unchecked, that release cleared the new holder's Lease and the old
// leader took it at once, both leading together (test/sharding's frozen
// leader, once in a while).
func TestLeaderReleasesOnlyItsOwnLease(t *testing.T) {
	ns := env.Namespace(t)
	s := newStall()
	cfg := rest.CopyConfig(env.Config())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { s.next = rt; return s })
	opts := leaderOptions(ns, true)
	opts.LeaderElection.Identity = "a"
	opts.Metrics.BindAddress = "127.0.0.1:0"
	opts.Health.BindAddress = "127.0.0.1:0"
	opts.Cache.Namespaces = []string{ns}
	m, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	sp := &spans{}
	if _, err := manager.NewController(m, "release", sp.reconciler("a"), manager.For[*corev1.ConfigMap](nil)); err != nil {
		t.Fatal(err)
	}
	st := start(t, m)
	eventually(t, "a to be elected", func() bool { return elected(m) })
	if err := m.UncachedClient().Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a to reconcile", func() bool { return sp.count("a") > 3 })

	s.armed.Store(true)
	select {
	case <-s.stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("a sent no renewal within 30s")
	}
	// b takes the Lease while a's renewal hangs, and holds it.
	takeLease(t, ns, "b", 60)
	eventually(t, "a to be fenced", func() bool { return gauge(t, m.Registry(), imetrics.Leader) == 0 })
	fenced := time.Now()
	<-s.returned
	// a gives the Lease up and campaigns again: its candidate reads the
	// Lease every RetryPeriod while another holds it, and stops reading it
	// once it leads.
	holder := func() string { return leaseHolder(t, ns) }
	eventually(t, "a to campaign again, or to take the Lease", func() bool { return s.reads.Load() >= 4 || holder() != "b" })
	if h := holder(); h != "b" {
		t.Errorf("after a's renewal failed, the Lease b took is held by %q, want b still", h)
	}
	if l := gauge(t, m.Registry(), imetrics.Leader); l != 0 {
		t.Errorf("a's %s = %v while b holds the Lease, want 0", imetrics.Leader, l)
	}
	if n := sp.startedAfter("a", fenced); n > 0 {
		t.Errorf("a started %d reconciles after it was fenced, while b held the Lease", n)
	}
	if err := st.stop(t); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Start = %v after a clean stop", err)
	}
	if h := holder(); h != "b" {
		t.Errorf("after a stopped (ReleaseOnCancel), the Lease is held by %q, want b still", h)
	}
}
