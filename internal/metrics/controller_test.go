package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Every series of a controller exists, at zero, before its first reconcile,
// and two controllers on one registry share the collectors.
func TestControllerMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, name := range []string{"a", "b"} {
		m, err := NewControllerMetrics(reg)
		if err != nil {
			t.Fatal(err)
		}
		r := m.For(name, 4)
		if name == "b" {
			r.Success.Inc()
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP controller_runtime_max_concurrent_reconciles Maximum number of concurrent reconciles per controller
# TYPE controller_runtime_max_concurrent_reconciles gauge
controller_runtime_max_concurrent_reconciles{controller="a"} 4
controller_runtime_max_concurrent_reconciles{controller="b"} 4
# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="a",result="error"} 0
controller_runtime_reconcile_total{controller="a",result="requeue"} 0
controller_runtime_reconcile_total{controller="a",result="requeue_after"} 0
controller_runtime_reconcile_total{controller="a",result="success"} 0
controller_runtime_reconcile_total{controller="b",result="error"} 0
controller_runtime_reconcile_total{controller="b",result="requeue"} 0
controller_runtime_reconcile_total{controller="b",result="requeue_after"} 0
controller_runtime_reconcile_total{controller="b",result="success"} 1
`), ReconcileTotal, MaxConcurrentReconciles); err != nil {
		t.Error(err)
	}
	for _, name := range []string{ReconcileErrors, TerminalReconcileErrors, ReconcilePanics, ReconcileTimeouts, ActiveWorkers, ReconcileTime} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != 2 {
			t.Errorf("%s: %d series (err %v), want one per controller", name, n, err)
		}
	}
}
