package manager_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// counting counts the requests sent through it: a transport of a user's,
// which says what it wraps as client-go's own do.
type counting struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (c *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(req)
}

func (c *counting) WrappedTransport() http.RoundTripper { return c.next }

// countedClient returns an HTTP client of cfg whose requests c counts.
func countedClient(t *testing.T, cfg *rest.Config, c *counting) *http.Client {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { c.next = rt; return c })
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return hc
}

// The cache's lists and watches through an HTTP client of the user's
// (Options.Cache.HTTPClient, built from a config of their own) go under
// the manager's budget, in the informer lane, each once.
func TestUsersCacheHTTPClientIsBudgeted(t *testing.T) {
	ns := env.Namespace(t)
	var sent counting
	m := newManager(t, ns, manager.Options{
		Cache:     cache.Options{Namespaces: []string{ns}, HTTPClient: countedClient(t, env.Config(), &sent)},
		APIBudget: manager.APIBudgetOptions{QPS: 100}, ShutdownTimeout: time.Second,
	})
	idle := reconcile.Func[reconcile.Request](func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Done(), nil
	})
	if _, err := manager.NewController(m, "idle", idle, manager.For[*corev1.ConfigMap](nil)); err != nil {
		t.Fatal(err)
	}
	st := start(t, m)
	eventually(t, "/readyz to pass (the cache synced)", func() bool {
		code, _ := get(t, "http://"+m.HealthProbeAddr()+"/readyz")
		return code == http.StatusOK
	})
	if err := st.stop(t); err != nil {
		t.Fatal(err)
	}
	tokens := counter(t, m.Registry(), "opkit_api_budget_tokens_total", "lane", "informer")
	t.Logf("the user's client sent %d requests; the budget's informer lane let %v through", sent.n.Load(), tokens)
	if sent.n.Load() == 0 {
		t.Fatal("the user's client sent nothing: the test shows nothing")
	}
	if tokens != float64(sent.n.Load()) {
		t.Errorf("informer lane tokens: %v, want one for each of the %d requests of the user's client", tokens, sent.n.Load())
	}
}

// A user's HTTP client built from the manager's Config is under the
// budget already: the manager puts its requests in the informer lane
// without a second wait, one token each.
func TestCacheHTTPClientFromConfigWaitsOnce(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{APIBudget: manager.APIBudgetOptions{QPS: 100}})
	var sent counting
	hc := manager.CacheHTTPClient(m, countedClient(t, m.Config(), &sent))
	cs, err := kubernetes.NewForConfigAndClient(m.Config(), hc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if sent.n.Load() != 1 {
		t.Fatalf("the user's client sent %d requests, want the list alone", sent.n.Load())
	}
	if n := counter(t, m.Registry(), "opkit_api_budget_tokens_total", "lane", "informer"); n != 1 {
		t.Errorf("informer lane tokens: %v, want 1: the list, once", n)
	}
}
