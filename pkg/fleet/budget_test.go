package fleet_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/internal/budget"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/fleet"
)

// proxy is a reverse proxy in front of the test's API server, for one
// member's Config: it counts the requests that reach it, and answers
// 429 (with no priority-and-fairness header) to the requests of a
// ConfigMap named "refused" while refusing is on.
type proxy struct {
	srv      *httptest.Server
	reads    atomic.Int64 // GETs of a ConfigMap named "source"
	readyz   atomic.Int64
	refusing atomic.Bool
}

func newProxy(t *testing.T) *proxy {
	t.Helper()
	up, err := url.Parse(env.Config().Host)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{}
	rp := &httputil.ReverseProxy{Transport: rt, Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(up) }}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && path.Base(r.URL.Path) == "source" {
			p.reads.Add(1)
		}
		if r.URL.Path == "/readyz" {
			p.readyz.Add(1)
		}
		if p.refusing.Load() && path.Base(r.URL.Path) == "refused" {
			http.Error(w, "too many requests", http.StatusTooManyRequests)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// config returns a config of the member behind p, with qps and burst.
// The proxy sends its own credentials; the token makes client-go give the
// member a transport of its own.
func (p *proxy) config(qps float32, burst int) *rest.Config {
	return &rest.Config{Host: p.srv.URL, QPS: qps, Burst: burst, BearerToken: "unused"}
}

// metric returns the value of the series of name whose labels include
// labels, summed (a histogram's count), and whether there is one.
func metric(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	found := false
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !hasLabels(m, labels) {
				continue
			}
			found = true
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum, found
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(want)
}

// engageVia engages a member confined to a new namespace holding the
// ConfigMap "source", named name, with config, and waits for its copy.
func engageVia(t *testing.T, f *fleet.Fleet, name string, config *rest.Config) string {
	t.Helper()
	ns := member(t, "", name)
	if err := f.Engage(t.Context(), fleet.Member{Name: name, Config: config, Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	waitCopy(t, ns, name)
	return ns
}

// A member's requests go through a budget of its own: its cache's in the
// informer lane, a fleet controller's writes in that controller's flow,
// every other request unattributed; a member whose Config sets QPS 1 makes
// a burst of reads wait, while a member without one sends at once.
func TestMemberRequestsGoThroughItsBudget(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := newFleet(t, fleet.Options{Registerer: reg, ProbeInterval: -1})
	cms, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runFleet(t, f, cms)
	p := newProxy(t)
	namespaces := map[string]string{"slow": engageVia(t, f, "slow", p.config(1, 1)), "fast": engageVia(t, f, "fast", env.Config())}

	for _, c := range []struct {
		name   string
		labels map[string]string
	}{
		{"the slow member's copier writes", map[string]string{"cluster": "slow", "lane": "reconcile", "controller": "copier"}},
		{"the slow member's cache", map[string]string{"cluster": "slow", "lane": "informer"}},
		{"the fast member's copier writes", map[string]string{"cluster": "fast", "lane": "reconcile", "controller": "copier"}},
	} {
		if n, _ := metric(t, reg, "opkit_fleet_member_api_budget_tokens_total", c.labels); n < 1 {
			t.Errorf("%s: %v tokens, want at least 1", c.name, n)
		}
	}
	if r, _ := metric(t, reg, "opkit_fleet_member_api_budget_configured_rate", map[string]string{"cluster": "slow"}); r != 1 {
		t.Errorf("the slow member's configured rate = %v, want its Config's QPS, 1", r)
	}
	if r, _ := metric(t, reg, "opkit_fleet_member_api_budget_configured_rate", map[string]string{"cluster": "fast"}); !math.IsInf(r, 1) {
		t.Errorf("the fast member's configured rate = %v, want none (+Inf)", r)
	}

	const reads = 5
	before := p.reads.Load()
	var wg sync.WaitGroup
	for _, name := range []string{"slow", "fast"} {
		cl := mustCluster(t, f, name).Client()
		for range reads {
			wg.Go(func() {
				if err := cl.Get(t.Context(), client.ObjectKey{Namespace: namespaces[name], Name: "source"}, &corev1.ConfigMap{}); err != nil {
					t.Errorf("read of member %s: %v", name, err)
				}
			})
		}
	}
	wg.Wait()
	if n := p.reads.Load() - before; n != reads {
		t.Errorf("the slow member's API server received %d requests, want the %d reads", n, reads)
	}
	// A bucket of one token lets one of the reads go at once; the others
	// wait their turn.
	if n, _ := metric(t, reg, "opkit_fleet_member_api_budget_wait_seconds", map[string]string{"cluster": "slow", "lane": "reconcile", "controller": "unattributed"}); n < 1 {
		t.Errorf("%d reads sent at once to a member of QPS 1 and burst 1: %v waited, want some", reads, n)
	}
	if n, _ := metric(t, reg, "opkit_fleet_member_api_budget_wait_seconds", map[string]string{"cluster": "fast"}); n != 0 {
		t.Errorf("the fast member's requests waited %v times, want never", n)
	}
}

// A 429 from one member lowers that member's rate only: not another
// member's, nor the hub's.
func TestA429SlowsItsMemberOnly(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := newFleet(t, fleet.Options{Registerer: reg, ProbeInterval: -1})
	hub, err := budget.New(budget.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(budget.NewContext(context.Background(), hub))
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := f.Start(ctx); err != nil {
			t.Errorf("fleet: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	p := newProxy(t)
	for name, config := range map[string]*rest.Config{"pushed": p.config(0, 0), "calm": env.Config()} {
		if err := f.Engage(t.Context(), fleet.Member{Name: name, Config: config, Namespace: env.Namespace(t)}); err != nil {
			t.Fatal(err)
		}
	}
	rate := func(cluster string) float64 {
		r, ok := metric(t, reg, "opkit_fleet_member_api_budget_rate", map[string]string{"cluster": cluster})
		if !ok {
			t.Fatalf("no rate for member %s", cluster)
		}
		return r
	}
	for _, name := range []string{"pushed", "calm"} {
		if r := rate(name); !math.IsInf(r, 1) {
			t.Fatalf("member %s's rate before any 429: %v, want none (+Inf)", name, r)
		}
	}
	p.refusing.Store(true)
	pushed := mustCluster(t, f, "pushed")
	err = pushed.Client().Get(t.Context(), client.ObjectKey{Namespace: pushed.Namespace(), Name: "refused"}, &corev1.ConfigMap{})
	if err == nil {
		t.Fatal("the pushed member's read succeeded, want its 429")
	}
	calm := mustCluster(t, f, "calm")
	if err := calm.Client().Get(t.Context(), client.ObjectKey{Namespace: calm.Namespace(), Name: "refused"}, &corev1.ConfigMap{}); client.IgnoreNotFound(err) != nil {
		t.Fatalf("the calm member's read: %v", err)
	}
	if r := rate("pushed"); math.IsInf(r, 1) {
		t.Errorf("the pushed member's rate after its 429: %v, want one", r)
	}
	if n, _ := metric(t, reg, "opkit_fleet_member_api_budget_pushbacks_total", map[string]string{"cluster": "pushed", "reason": "429"}); n != 1 {
		t.Errorf("the pushed member's 429s counted: %v, want 1", n)
	}
	if r := rate("calm"); !math.IsInf(r, 1) {
		t.Errorf("the calm member's rate after the other's 429: %v, want none (+Inf)", r)
	}
	if r := hub.Rate(); !math.IsInf(r, 1) {
		t.Errorf("the hub's rate after a member's 429: %v, want none (+Inf)", r)
	}
}

// A member's health probe goes ahead of its flooded budget: while many
// reads wait for the member's tokens, its /readyz is still asked and
// answered, and the member stays reachable.
func TestProbeIsNotHeldUpByAFloodedBudget(t *testing.T) {
	f := newFleet(t, fleet.Options{ProbeInterval: 100 * time.Millisecond})
	startFleet(t, f)
	p := newProxy(t)
	ns := env.Namespace(t)
	if err := f.Engage(t.Context(), fleet.Member{Name: "flooded", Config: p.config(0.5, 1), Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	c := mustCluster(t, f, "flooded")
	floodCtx, stopFlood := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() { stopFlood(); wg.Wait() }()
	for range 40 {
		wg.Go(func() {
			for floodCtx.Err() == nil {
				_ = c.Client().Get(floodCtx, client.ObjectKey{Namespace: ns, Name: "any"}, &corev1.ConfigMap{})
			}
		})
	}
	probed := p.readyz.Load()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if h := c.Health(); !h.Reachable {
			t.Fatalf("the flooded member was found unreachable: %v", h.Err)
		}
		return p.readyz.Load() >= probed+5, nil
	})
	if err != nil {
		t.Fatalf("the flooded member's /readyz was asked %d times, want 5: %v", p.readyz.Load()-probed, err)
	}
}

// A member disengaged releases its budget: the requests waiting for it
// end with ErrNotEngaged, whatever their context, and its metrics are
// unregistered; engaging a name again registers the new member's.
func TestDisengagedMemberReleasesItsBudget(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := newFleet(t, fleet.Options{Registerer: reg, ProbeInterval: -1})
	ns := env.Namespace(t)
	config := rest.CopyConfig(env.Config())
	config.QPS, config.Burst = 1, 1
	engageFor := func() context.CancelFunc {
		ctx, cancel := context.WithCancel(t.Context())
		if err := f.Engage(ctx, fleet.Member{Name: "m", Config: config, Namespace: ns}); err != nil {
			t.Fatal(err)
		}
		return cancel
	}
	engageFor() // replaced below
	cancel := engageFor()
	if _, ok := metric(t, reg, "opkit_fleet_member_api_budget_rate", map[string]string{"cluster": "m"}); !ok {
		t.Fatal("the member engaged again has no budget metrics")
	}
	c := mustCluster(t, f, "m")
	errs := make(chan error, 20)
	for range cap(errs) {
		go func() {
			errs <- c.Client().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "any"}, &corev1.ConfigMap{})
		}()
	}
	// A token a second lets the reads through one by one; once one is
	// through, most of the others still wait.
	if err := <-errs; !apierrors.IsNotFound(err) {
		t.Fatalf("the read let through: %v, want NotFound", err)
	}
	cancel()
	waitEngaged(t, f, "m", false)
	ended := 0
	for range cap(errs) - 1 {
		switch err := <-errs; {
		case errors.Is(err, fleet.ErrNotEngaged):
			ended++
		case !apierrors.IsNotFound(err):
			t.Errorf("a read when its member went: %v, want ErrNotEngaged, or NotFound if let through before", err)
		}
	}
	if ended == 0 {
		t.Errorf("none of the %d reads waiting for a token a second ended when the member went", cap(errs)-1)
	}
	// The budget is closed once the member's context has ended, on a
	// goroutine of its own (context.AfterFunc): its metrics go soon after.
	var left []string
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		mfs, err := reg.Gather()
		if err != nil {
			return false, err
		}
		left = left[:0]
		for _, mf := range mfs {
			if strings.HasPrefix(mf.GetName(), "opkit_fleet_member_api_budget_") {
				left = append(left, mf.GetName())
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		t.Errorf("after the member went, %q are still registered: %v", left, err)
	}
}

// Options.APIBudget refuses a negative or infinite rate.
func TestAPIBudgetOptionsAreChecked(t *testing.T) {
	for _, o := range []fleet.APIBudgetOptions{{QPS: -1}, {Burst: -1}, {QPS: math.Inf(1)}} {
		if _, err := fleet.New(fleet.Options{APIBudget: o}); err == nil {
			t.Errorf("New with APIBudget %+v succeeded, want an error", o)
		}
	}
}
