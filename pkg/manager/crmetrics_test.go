package manager_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/opkit-dev/opkit/pkg/manager"
)

// An operator's own metrics, registered in controller-runtime's global
// registry as kubebuilder's book does (jobset's metrics.Register), are
// served at the manager's /metrics, so that a port keeps them; the
// families controller-runtime registers there for its own manager and
// client are not, since opkit serves its own under the same names.
func TestControllerRuntimeRegistryServed(t *testing.T) {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "opkit_test_operator_own_total", Help: "An operator's own metric."})
	if err := ctrlmetrics.Registry.Register(c); err != nil {
		if already, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
			c = already.ExistingCollector.(prometheus.Counter)
		} else {
			t.Fatal(err)
		}
	}
	c.Inc()
	m := newManager(t, env.Namespace(t), manager.Options{})
	start(t, m)
	code, body := get(t, "http://"+m.MetricsAddr()+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d:\n%s", code, body)
	}
	if !strings.Contains(body, "\nopkit_test_operator_own_total ") {
		t.Errorf("/metrics lacks the operator's own metric from controller-runtime's registry:\n%s", body)
	}
	if strings.Contains(body, "controller_runtime_webhook_") {
		t.Errorf("/metrics of a manager without webhooks serves controller-runtime's webhook families:\n%s", body)
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "# TYPE rest_client_") || strings.HasPrefix(line, "# TYPE controller_runtime_reconcile") {
			if strings.Count(body, line+"\n") > 1 {
				t.Errorf("/metrics has %q twice", line)
			}
		}
	}
}
