package faults

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// The saturated minute: the leader's client may send saturationQPS
// requests a second (burst saturationBurst), and the load asks for many
// times more for saturationSpan.
const (
	saturationQPS   = 5
	saturationBurst = 5
	saturationSpan  = time.Minute
)

// countingLimiter is the client-side rate limiter of one replica's
// rest.Config, which every client the manager builds from it spends (its
// informers and its writes; not its Lease renewals, which have their own):
// it counts the requests it admits and how many wait at a time. It is
// safe for concurrent use.
type countingLimiter struct {
	flowcontrol.RateLimiter
	admitted atomic.Int64
	waiting  atomic.Int32
}

func newCountingLimiter() *countingLimiter {
	return &countingLimiter{RateLimiter: flowcontrol.NewTokenBucketRateLimiter(saturationQPS, saturationBurst)}
}

// Wait is what client-go's request calls before each request.
func (l *countingLimiter) Wait(ctx context.Context) error {
	l.waiting.Add(1)
	defer l.waiting.Add(-1)
	err := l.RateLimiter.Wait(ctx)
	if err == nil {
		l.admitted.Add(1)
	}
	return err
}

func (l *countingLimiter) Accept() {
	l.waiting.Add(1)
	l.RateLimiter.Accept()
	l.waiting.Add(-1)
	l.admitted.Add(1)
}

// leaseWatch is what the test saw of the Lease and of the leader over the
// minute: every holder, the renewals and the longest time between two.
type leaseWatch struct {
	holders   map[string]int // holderIdentity -> times seen
	renewals  int
	longest   time.Duration // between two renewals, by the Lease's renewTime
	fenced    int           // samples in which the leader's fence was closed
	samples   int
	saturated int // samples in which a request waited on the leader's limiter
}

// Two replicas with leader election, whose clients may send 5 requests a
// second, under a load of source changes that asks the leader for many
// times that, for a minute: the leader's client-side rate limiter has
// requests waiting all along (the test proves it, or fails as showing
// nothing), yet the leader keeps its lease: the Lease names it at every
// look, its renewals never leave a gap as long as the lease, its fence
// never closes, the standby is never elected and neither Start returns.
// Then the copies converge. The renewals go through a client and a rate
// limiter of their own (manager.LeaderElectionOptions); controller-runtime
// shares one with reconciles when its config carries a RateLimiter
// (controller-runtime #3092).
//
// It runs alone (not in parallel): the package's outage tests stop the
// control plane it needs.
func TestSaturatedClientKeepsLease(t *testing.T) {
	w := newWorld(t)
	nss := w.namespaces(5)
	const mirrors = 8
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		w.configMap(w.home, name, map[string]string{"v": "0"})
		w.mirror(name, name, w.selector())
	}
	const lease = "mirror-saturated"
	replica := func(id string, act *activity, limiter *countingLimiter) *operator {
		cfg := rest.CopyConfig(env.Config())
		cfg.RateLimiter = limiter
		return startOperator(t, opOptions{
			config:  act.recordWrites(cfg),
			logger:  act.logger(),
			workers: 4,
			manager: manager.Options{LeaderElection: manager.LeaderElectionOptions{
				Enabled: true, Name: lease, Namespace: w.home, Identity: id,
				LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
			}},
		})
	}
	actA, actB := &activity{}, &activity{}
	limA, limB := newCountingLimiter(), newCountingLimiter()
	a := replica("a", actA, limA)
	select {
	case <-a.mgr.Elected():
	case <-time.After(30 * time.Second):
		t.Fatal("replica a not elected within 30s")
	}
	b := replica("b", actB, limB)
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		w.eventually("copies of "+name, w.copiesEqual(nss, name, map[string]string{"v": "0"}))
	}

	last, stopLoad := w.changeSources(t, mirrors)
	admittedBefore, began := limA.admitted.Load(), time.Now()
	lw := watchLease(t, w.home, lease, a, limA, saturationSpan)
	admitted, span := limA.admitted.Load()-admittedBefore, time.Since(began)
	stopLoad()
	stopped := time.Now()
	want := map[string]string{"v": fmt.Sprint(*last)}
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		w.eventually("copies of "+name+" after the saturated minute", w.copiesEqual(nss, name, want))
	}
	converged := time.Since(stopped)

	budget := saturationQPS*span.Seconds() + saturationBurst
	t.Logf("over %v the leader's limiter admitted %d requests (budget %.0f at %d/s, burst %d) and had a request waiting in %d of %d samples; the Lease was renewed %d times, at most %v apart (lease %v), held by %v; the leader's fence was closed in %d samples; the copies converged %v after the load stopped",
		span.Round(time.Millisecond), admitted, budget, saturationQPS, saturationBurst, lw.saturated, lw.samples, lw.renewals, lw.longest, leaseDuration, lw.holders, lw.fenced, converged.Round(time.Millisecond))
	// The premise: without it the test shows nothing.
	if lw.saturated*10 < lw.samples*9 || float64(admitted) < 0.9*budget {
		t.Fatalf("the load did not saturate the leader's client: a request waited in %d of %d samples, %d requests admitted of a budget of %.0f", lw.saturated, lw.samples, admitted, budget)
	}
	checkKept(t, lw, a, b)
	if o := overlaps(actA, actB); len(o) > 0 {
		t.Errorf("the replicas acted at the same time %d times, such as %s", len(o), o[0])
	}
}

// changeSources patches the data of the test's n sources, one after the
// other every 20ms, until stop is called; *last is then the value the
// last round wrote to every source.
func (w *world) changeSources(t *testing.T, n int) (last *int, stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	last = new(int)
	wg.Go(func() {
		for i := 1; ctx.Err() == nil; i++ {
			for j := range n {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.home, Name: fmt.Sprintf("src-%d", j)}}
				patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"data":{"v":"%d"}}`, i))
				if err := w.cl.Patch(context.WithoutCancel(ctx), cm, patch); err != nil {
					t.Errorf("change source %s: %v", cm.Name, err)
					return
				}
				time.Sleep(20 * time.Millisecond) // pacing, not waiting for anything
			}
			*last = i
		}
	})
	return last, func() { cancel(); wg.Wait() }
}

// watchLease samples, every 100ms for span, the Lease name in ns, the
// fence of leader and whether a request waits on limiter.
func watchLease(t *testing.T, ns, name string, leader *operator, limiter *countingLimiter, span time.Duration) leaseWatch {
	t.Helper()
	lw := leaseWatch{holders: map[string]int{}}
	var renewed time.Time
	for end := time.Now().Add(span); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		l, err := env.Client().CoordinationV1().Leases(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("read the Lease %s/%s: %v", ns, name, err)
		}
		if h := l.Spec.HolderIdentity; h != nil {
			lw.holders[*h]++
		}
		if r := l.Spec.RenewTime; r != nil && r.After(renewed) {
			if !renewed.IsZero() {
				lw.renewals++
				lw.longest = max(lw.longest, r.Sub(renewed))
			}
			renewed = r.Time
		}
		lw.samples++
		if leader.counter(t, imetrics.Leader, nil) != 1 {
			lw.fenced++
		}
		if limiter.waiting.Load() > 0 {
			lw.saturated++
		}
	}
	return lw
}

// checkKept fails t unless a held the lease all along and b never led.
func checkKept(t *testing.T, lw leaseWatch, a, b *operator) {
	t.Helper()
	if len(lw.holders) != 1 || lw.holders["a"] == 0 {
		t.Errorf("the Lease was held by %v, want a alone", lw.holders)
	}
	if lw.renewals == 0 || lw.longest >= leaseDuration {
		t.Errorf("%d renewals, at most %v apart: a standby could have taken over after %v", lw.renewals, lw.longest, leaseDuration)
	}
	if lw.fenced > 0 {
		t.Errorf("the leader's fence was closed in %d of %d samples: it stopped acting as the leader", lw.fenced, lw.samples)
	}
	select {
	case <-b.mgr.Elected():
		t.Error("the standby was elected")
	default:
	}
	for name, op := range map[string]*operator{"a": a, "b": b} {
		select {
		case err := <-op.done:
			op.done <- err // for stop
			t.Errorf("replica %s's Start returned under the load: %v", name, err)
		default:
		}
	}
}
