package manager_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/manager"
)

// With the budget flooded (1 request a second, a hammer of 10 workers
// waiting for it), a ready check that reads a ConfigMap from the API
// server at each probe passes: the check's requests go in the health
// lane, which never waits, while the hammer's wait.
func TestReadyCheckNeverWaitsForTheBudget(t *testing.T) {
	const workers = 10
	ns := env.Namespace(t)
	cs := kubernetes.NewForConfigOrDie(env.Config())
	configMaps(t, cs, ns, workers)
	m := newManager(t, ns, manager.Options{APIBudget: manager.APIBudgetOptions{QPS: 1, Burst: 1}, ShutdownTimeout: time.Second})
	live := m.UncachedClient()
	var checked atomic.Int64
	if err := m.AddReadyCheck("api-server", func(r *http.Request) error {
		checked.Add(1)
		return live.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: "cm-0"}, &corev1.ConfigMap{})
	}); err != nil {
		t.Fatal(err)
	}
	h, _ := hammering(t, m, workers)
	reg := m.Registry()
	eventually(t, "the hammer to wait for the budget", func() bool {
		return series(t, reg, "opkit_api_budget_wait_seconds", "lane", "reconcile", "controller", "hammer").GetHistogram().GetSampleCount() > 0
	})
	eventually(t, "/readyz to pass", func() bool {
		if h.waiting() == 0 {
			t.Fatal("the hammer had no write waiting while /readyz was probed: the budget was not flooded, and the test shows nothing")
		}
		code, _ := get(t, "http://"+m.HealthProbeAddr()+"/readyz")
		return code == http.StatusOK
	})
	if h.waiting() == 0 {
		t.Error("the hammer had no write waiting once /readyz passed: the budget was not flooded, and the test shows nothing")
	}
	unattributed := series(t, reg, "opkit_api_budget_wait_seconds", "lane", "reconcile", "controller", "unattributed").GetHistogram().GetSampleCount()
	t.Logf("the check ran %d times; %d writes of the hammer waiting; unattributed requests waited %d times in all",
		checked.Load(), h.waiting(), unattributed)
	if n, want := counter(t, reg, "opkit_api_budget_tokens_total", "lane", "health"), float64(checked.Load()); n != want {
		t.Errorf("health lane tokens: %v, want one for each of the check's %v requests", n, want)
	}
	if n := series(t, reg, "opkit_api_budget_wait_seconds", "lane", "health").GetHistogram().GetSampleCount(); n != 0 {
		t.Errorf("%d of the check's requests waited for the budget", n)
	}
}
