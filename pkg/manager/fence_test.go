package manager_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// partition fails the lease renewals sent through it while cut is set,
// as a partition between the leader and the API server would, and counts
// the other writes that reach it. Wrap a config with its wrap: every
// transport built from the config gets a link of its own to the one
// partition.
type partition struct {
	cut    atomic.Bool
	mu     sync.Mutex
	writes []string // method and path of each write sent, leases aside
}

func (p *partition) wrap(rt http.RoundTripper) http.RoundTripper {
	return &partitioned{p: p, next: rt}
}

// partitioned is one transport through a partition.
type partitioned struct {
	p    *partition
	next http.RoundTripper
}

func (l *partitioned) RoundTrip(req *http.Request) (*http.Response, error) {
	p := l.p
	if strings.Contains(req.URL.Path, "/leases") {
		if p.cut.Load() {
			return nil, errors.New("partitioned")
		}
		return l.next.RoundTrip(req)
	}
	if req.Method != http.MethodGet {
		p.mu.Lock()
		p.writes = append(p.writes, req.Method+" "+req.URL.Path)
		p.mu.Unlock()
	}
	return l.next.RoundTrip(req)
}

// startedAfter counts who's reconciles that started after t.
func (s *spans) startedAfter(who string, t time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sp := range s.all {
		if sp.who == who && sp.start.After(t) {
			n++
		}
	}
	return n
}

func (p *partition) sent() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.writes...)
}

// A leader whose renewals fail stops acting RenewDeadline after its last
// renewal, before a standby could take the lease: its controllers start no
// reconcile, a leader-only runnable's write is refused before it is sent
// (ErrFenced), CheckLeadership says so, and leader_election_master_status
// reads 0, while client-go's elector still counts itself the leader.
func TestLeaderFencedWhileRenewalsFail(t *testing.T) {
	ns := env.Namespace(t)
	p := &partition{}
	cfg := rest.CopyConfig(env.Config())
	cfg.Wrap(p.wrap)
	opts := leaderOptions(ns, false)
	// A long renew loop: client-go gives up RenewDeadline after its first
	// failed try, the fence RenewDeadline after the last success.
	opts.LeaderElection.LeaseDuration = 6 * time.Second
	opts.LeaderElection.RenewDeadline = 2 * time.Second
	opts.LeaderElection.RetryPeriod = 1500 * time.Millisecond
	opts.LeaderElection.Identity = "a"
	opts.LeaderElection.ExitOnLoss = true // TestLeaderRidesOutUnreachableAPIServer shows the default
	opts.Metrics.BindAddress = "127.0.0.1:0"
	opts.Health.BindAddress = "127.0.0.1:0"
	opts.Cache.Namespaces = []string{ns}
	m, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	var s spans
	if _, err := manager.NewController(m, "fenced", s.reconciler("a"), manager.For[*corev1.ConfigMap](nil)); err != nil {
		t.Fatal(err)
	}
	leaderCtx := make(chan context.Context, 1)
	if err := m.Add(manager.RunnableFunc(func(ctx context.Context) error {
		leaderCtx <- ctx
		<-ctx.Done()
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	st := start(t, m)
	eventually(t, "a to be elected", func() bool { return elected(m) })
	ctx := <-leaderCtx
	if err := manager.CheckLeadership(ctx); err != nil {
		t.Fatalf("CheckLeadership while leading = %v", err)
	}
	if err := m.UncachedClient().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a to reconcile", func() bool { return s.count("a") > 3 })

	p.cut.Store(true)
	cut := time.Now()
	eventually(t, "the fence to close", func() bool { return manager.CheckLeadership(ctx) != nil })
	closed := time.Now()
	fenced := closed.Sub(cut)
	err = manager.CheckLeadership(ctx)
	if !errors.Is(err, manager.ErrFenced) || !strings.Contains(err.Error(), "test-lease") {
		t.Errorf("CheckLeadership once fenced = %v, want ErrFenced naming the lease", err)
	}
	if l := gauge(t, m.Registry(), imetrics.Leader); l != 0 {
		t.Errorf("the fenced leader's %s = %v, want 0", imetrics.Leader, l)
	}
	before := len(p.sent())
	err = m.UncachedClient().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fenced", Namespace: ns}})
	if !errors.Is(err, manager.ErrFenced) {
		t.Errorf("a leader-only runnable's write once fenced = %v, want ErrFenced", err)
	}
	if sent := p.sent(); len(sent) != before {
		t.Errorf("a refused write was sent: %v", sent[before:])
	}
	// The manager's own work is not leader-only: a write with another
	// context goes through.
	if err := m.UncachedClient().Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "free", Namespace: ns}}); err != nil {
		t.Errorf("a write without the leader's context: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	if n := s.startedAfter("a", closed); n != 0 {
		t.Errorf("%d reconciles started after the fence closed", n)
	}
	t.Logf("fenced %v after renewals began to fail (RenewDeadline 2s after the last success, which was up to RetryPeriod 1.5s before)", fenced.Round(time.Millisecond))

	// Then client-go gives up, and Start says the lease was lost.
	select {
	case err := <-st.done:
		close(st.done)
		if !errors.Is(err, manager.ErrLeaderLost) {
			t.Errorf("Start = %v, want ErrLeaderLost", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Start did not return after renewals failed")
	}
}

// A leader-only write that waits for a token of the API budget meets the
// fence again once it has one: the lease may lapse during the wait, and
// the write must not be sent then.
func TestFencedWriteWaitingForTheBudgetIsRefused(t *testing.T) {
	ns := env.Namespace(t)
	p := &partition{}
	cfg := rest.CopyConfig(env.Config())
	cfg.Wrap(p.wrap)
	opts := leaderOptions(ns, false)
	// The fence closes 0.5-1 s after the renewals begin to fail.
	opts.LeaderElection.LeaseDuration = 2 * time.Second
	opts.LeaderElection.RenewDeadline = time.Second
	opts.LeaderElection.RetryPeriod = 500 * time.Millisecond
	opts.LeaderElection.Identity = "a"
	opts.Health.BindAddress = "127.0.0.1:0"
	opts.Cache.Namespaces = []string{ns}
	// A token every 4 s, one at once: the second of two writes in a row
	// waits for seconds.
	opts.APIBudget = manager.APIBudgetOptions{QPS: 0.25, Burst: 1}
	m, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	leaderCtx := make(chan context.Context, 1)
	if err := m.Add(manager.RunnableFunc(func(ctx context.Context) error {
		leaderCtx <- ctx
		<-ctx.Done()
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	start(t, m)
	eventually(t, "a to be elected", func() bool { return elected(m) })
	ctx := <-leaderCtx
	// A clientset needs no discovery: each write is one request.
	cs, err := kubernetes.NewForConfig(m.Config())
	if err != nil {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps(ns)
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	}
	if _, err := cms.Create(ctx, cm("first"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		_, err := cms.Create(ctx, cm("waits"), metav1.CreateOptions{})
		waited <- err
	}()
	// It passes the fence, open for a second more at least, at once, and
	// waits about 4 s for its token.
	time.Sleep(200 * time.Millisecond)
	p.cut.Store(true)
	cut := time.Now()
	select {
	case err := <-waited:
		if !errors.Is(err, manager.ErrFenced) {
			t.Errorf("a leader-only write that waited for the budget while the fence closed = %v, want ErrFenced", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting write did not return in 30 s")
	}
	t.Logf("the write returned %v after the renewals began to fail", time.Since(cut).Round(time.Millisecond))
	if sent := p.sent(); len(sent) != 1 {
		t.Errorf("writes sent: %v, want only the first ConfigMap's create", sent)
	}
}
