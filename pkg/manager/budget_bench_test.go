package manager_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// sentCounter counts the requests that reach the API server: it goes
// innermost, under the budget, so it sees what the budget let through.
type sentCounter struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c sentCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(req)
}

// flooder patches the ConfigMaps it is given as fast as it may, once on.
type flooder struct {
	c  client.Client
	on *atomic.Bool
}

func (f *flooder) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if !f.on.Load() {
		return reconcile.Result{}, nil
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"opkit.dev/at":"%d"}}}`, time.Now().UnixNano())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}
	if err := f.c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.RequeueAfter(time.Millisecond), nil
}

// quietOne reads the Secret it is given with one request, and records how
// long after the bench stamped it the reconcile ended (end to end: the
// stamp's write and its watch event included), and how long after the
// event reached the controller (what the controller's queue, the budget
// and the reconcile's read took).
type quietOne struct {
	c       client.Reader
	mu      sync.Mutex
	lat     []time.Duration
	own     []time.Duration
	arrived map[string]time.Time // by resourceVersion, when the event came
}

// arrive is the quiet controller's predicate: it notes when each version's
// event reached the controller.
func (q *quietOne) arrive(e source.Event[*corev1.Secret]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.arrived == nil {
		q.arrived = map[string]time.Time{}
	}
	q.arrived[e.Object.ResourceVersion] = time.Now()
	return true
}

const sentAnnotation = "opkit.dev/sent"

func (q *quietOne) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var s corev1.Secret
	if err := q.c.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: req.Name}, &s); err != nil {
		return reconcile.Result{}, err
	}
	sent, err := time.Parse(time.RFC3339Nano, s.Annotations[sentAnnotation])
	if err != nil {
		return reconcile.Result{}, nil
	}
	q.mu.Lock()
	q.lat = append(q.lat, time.Since(sent))
	if at, ok := q.arrived[s.ResourceVersion]; ok {
		q.own = append(q.own, time.Since(at))
	}
	clear(q.arrived)
	q.mu.Unlock()
	return reconcile.Result{}, nil
}

// p99 returns the 99th percentiles of the latencies recorded since the
// last call, end to end and the controller's own, and how many there
// were.
func (q *quietOne) p99() (endToEnd, own time.Duration, n int) {
	q.mu.Lock()
	lat, ownLat := q.lat, q.own
	q.lat, q.own = nil, nil
	q.mu.Unlock()
	return percentile99(lat), percentile99(ownLat), len(lat)
}

func percentile99(lat []time.Duration) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return lat[min(len(lat)-1, len(lat)*99/100)]
}

// stamp writes the time into the Secret's annotation every interval until
// ctx ends: each write is one key for the quiet controller.
func stamp(ctx context.Context, b *testing.B, ns, name string, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, sentAnnotation, time.Now().Format(time.RFC3339Nano))
		if _, err := env.Client().CoreV1().Secrets(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && ctx.Err() == nil {
			b.Error(err)
			return
		}
	}
}

// BenchmarkBudgetFlood: three controllers (weights 1, 1 and 2) flood the
// API server at once through a budget of 100 requests a second, while a
// fourth reconciles a Secret the bench stamps every 50ms with one read.
// It reports the operator's request rate at the API server against the
// budget; the quiet controller's p99 latency against its floor measured
// before the flood in the same run, both its own (from the event's
// arrival at the controller to the reconcile's end: the queue, the budget
// and its read) and end to end (from the stamp, its write and watch event
// included, which the flood's load on a small machine slows as well);
// and how far the flooders' shares of their tokens stray from their
// weights'.
func BenchmarkBudgetFlood(b *testing.B) {
	const (
		qps      = 100
		workers  = 10
		window   = 15 * time.Second
		interval = 50 * time.Millisecond
	)
	for range b.N {
		floodNS, quietNS := env.Namespace(b), env.Namespace(b)
		configMaps(b, env.Client(), floodNS, workers)
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: quietNS, Name: "quiet"}}
		if _, err := env.Client().CoreV1().Secrets(quietNS).Create(b.Context(), secret, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		var sent atomic.Int64
		cfg := env.Config()
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return sentCounter{next: rt, n: &sent} })
		m, err := manager.New(cfg, manager.Options{
			Cache:     cache.Options{Namespaces: []string{floodNS, quietNS}},
			Metrics:   manager.MetricsOptions{BindAddress: "127.0.0.1:0"},
			Health:    manager.HealthOptions{BindAddress: "127.0.0.1:0"},
			APIBudget: manager.APIBudgetOptions{QPS: qps, Burst: qps / 10}, ShutdownTimeout: time.Second,
		})
		if err != nil {
			b.Fatal(err)
		}
		var on atomic.Bool
		weights := map[string]float64{"flood-a": 1, "flood-b": 1, "flood-c": 2}
		inFlood := func(e source.Event[*corev1.ConfigMap]) bool { return e.Object.Namespace == floodNS }
		for name, w := range weights {
			f := &flooder{c: m.UncachedClient(), on: &on}
			if _, err := manager.NewController(m, name, f, manager.For[*corev1.ConfigMap](nil, inFlood), manager.APIWeight(w),
				manager.WithOptions(controller.Options[reconcile.Request]{MaxConcurrentReconciles: workers})); err != nil {
				b.Fatal(err)
			}
		}
		q := &quietOne{c: m.UncachedClient()}
		if _, err := manager.NewController(m, "quiet", q, manager.For[*corev1.Secret](nil, q.arrive)); err != nil {
			b.Fatal(err)
		}
		st := start(b, m)
		ctx, stop := context.WithCancel(b.Context())
		go stamp(ctx, b, quietNS, "quiet", interval)

		time.Sleep(2 * time.Second) // the caches synced, the first stamps through
		q.p99()
		time.Sleep(window)
		floor, ownFloor, floorN := q.p99()

		on.Store(true)
		for i := range workers { // one event each starts the flooders
			patch := []byte(`{"metadata":{"annotations":{"opkit.dev/go":"1"}}}`)
			if _, err := env.Client().CoreV1().ConfigMaps(floodNS).Patch(b.Context(), fmt.Sprint("cm-", i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		reg := m.Registry()
		waited := func(name string) uint64 {
			return series(b, reg, "opkit_api_budget_wait_seconds", "lane", "reconcile", "controller", name).GetHistogram().GetSampleCount()
		}
		eventually(b, "every flooder to wait for the budget", func() bool {
			return waited("flood-a") > workers && waited("flood-b") > workers && waited("flood-c") > workers
		})
		time.Sleep(2 * time.Second) // the bucket's burst spent
		q.p99()
		tokens := func() map[string]float64 {
			out := map[string]float64{}
			for name := range weights {
				out[name] = counter(b, reg, "opkit_api_budget_tokens_total", "lane", "reconcile", "controller", name)
			}
			return out
		}
		quietWaits := func() (uint64, float64) {
			h := series(b, reg, "opkit_api_budget_wait_seconds", "lane", "reconcile", "controller", "quiet").GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
		before, sentBefore, began := tokens(), sent.Load(), time.Now()
		waitsBefore, waitedBefore := quietWaits()
		time.Sleep(window)
		after, sentAfter, took := tokens(), sent.Load(), time.Since(began)
		waitsAfter, waitedAfter := quietWaits()
		flooded, ownFlooded, floodedN := q.p99()
		stop()
		on.Store(false)
		if err := st.stop(b); err != nil {
			b.Fatal(err)
		}

		total := 0.0
		for name := range weights {
			total += after[name] - before[name]
		}
		worst := 0.0
		for name, w := range weights {
			share, want := (after[name]-before[name])/total, w/4
			worst = max(worst, math.Abs(share-want)/want)
			b.Logf("%s (weight %v): %.1f%% of the flooders' tokens, want %.0f%%", name, w, 100*share, 100*want)
		}
		rate := float64(sentAfter-sentBefore) / took.Seconds()
		r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
		b.Logf("sent %.1f requests a second (budget %d); the quiet controller's p99, its own and end to end: %v and %v before the flood (%d samples), %v and %v during (%d samples)",
			rate, qps, r(ownFloor), r(floor), floorN, r(ownFlooded), r(flooded), floodedN)
		quietWaited := time.Duration(0)
		if n := waitsAfter - waitsBefore; n > 0 {
			quietWaited = time.Duration((waitedAfter - waitedBefore) / float64(n) * float64(time.Second))
		}
		b.Logf("the quiet controller waited for the budget %d times in the flood (mean %v) for %d reconciles",
			waitsAfter-waitsBefore, r(quietWaited), floodedN)
		b.ReportMetric(rate/qps, "sent/budget")
		b.ReportMetric(float64(ownFlooded)/float64(ownFloor), "quiet-p99/floor")
		b.ReportMetric(float64(flooded)/float64(floor), "quiet-e2e-p99/floor")
		b.ReportMetric(float64(ownFloor)/1e6, "floor-p99-ms")
		b.ReportMetric(float64(ownFlooded)/1e6, "flood-p99-ms")
		b.ReportMetric(100*worst, "worst-share-error-%")
	}
}
