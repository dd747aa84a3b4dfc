package manager

import (
	"errors"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// controllerRuntimePrefixes name the metric families controller-runtime
// registers in its global registry (ctrlmetrics.Registry) at init for its
// own manager, client, workqueues, leader election and certificate
// watcher: opkit's registry serves its own under the same names, so
// /metrics leaves those out. What else is there is served: the webhook
// server's request metrics (webhookMetricPrefixes), and the operator's own
// metrics, which kubebuilder's book registers there (so does jobset), so
// that a port keeps them.
var controllerRuntimePrefixes = []string{"controller_runtime_", "workqueue_", "rest_client_", "leader_election_", "certwatcher_"}

// webhookMetricPrefixes name the metric families of controller-runtime's
// webhook server, admission and conversion handlers, served although
// controllerRuntimePrefixes match them.
var webhookMetricPrefixes = []string{"controller_runtime_webhook_", "controller_runtime_conversion_webhook_"}

// fromControllerRuntime says whether /metrics serves the family name
// gathered from controller-runtime's registry: the webhook families only
// from a manager with a webhook server (webhooks).
func fromControllerRuntime(name string, webhooks bool) bool {
	for _, p := range webhookMetricPrefixes {
		if strings.HasPrefix(name, p) {
			return webhooks
		}
	}
	for _, p := range controllerRuntimePrefixes {
		if strings.HasPrefix(name, p) {
			return false
		}
	}
	return true
}

// gatherer is what /metrics serves: the manager's registry, and the
// families of controller-runtime's global registry that fromControllerRuntime
// takes and the manager's registry does not have (its webhook panics
// counters, always there, are left out of a manager without webhooks). They are process-wide:
// two managers in one process serve the same series (webhook requests are
// told apart by their "webhook" label, the path).
func (m *Manager) gatherer() prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		own, err := m.registry.Gather()
		names := make(map[string]bool, len(own))
		for _, mf := range own {
			names[mf.GetName()] = true
		}
		all, crErr := ctrlmetrics.Registry.Gather()
		out := own
		for _, mf := range all {
			if fromControllerRuntime(mf.GetName(), m.webhook != nil) && !names[mf.GetName()] {
				out = append(out, mf)
			}
		}
		slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
		return out, errors.Join(err, crErr)
	})
}
