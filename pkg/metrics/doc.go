// Package metrics holds opkit's metric names and the Prometheus
// implementations of the metric interfaces its packages define.
//
//   - Nothing registers into a global registry: every constructor takes the
//     prometheus.Registerer to use, which the manager owns and passes down.
//   - Queue metrics carry client-go's workqueue names and meanings
//     (workqueue_depth, workqueue_adds_total, ...), so dashboards built for
//     client-go and controller-runtime work unchanged. Depth carries a
//     priority label, as controller-runtime's priority queue does.
//   - A constructor that cannot register (say, a duplicate name) returns the
//     error; nothing panics.
package metrics
