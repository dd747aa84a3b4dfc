// Package metrics holds opkit's metric names and the Prometheus
// implementations of the metric interfaces its packages define.
//
//   - Nothing registers into a global registry: every constructor takes the
//     prometheus.Registerer to use, which the manager owns and passes down.
//   - Queue metrics carry client-go's workqueue names and meanings
//     (workqueue_depth, workqueue_adds_total, ...), so dashboards built for
//     client-go and controller-runtime work unchanged. Depth carries a
//     priority label, as controller-runtime's priority queue does.
//   - Controller metrics carry controller-runtime's names and meanings
//     (controller_runtime_reconcile_total{controller,result}, ...), for the
//     same reason.
//   - Shared: constructors called again with one registry return metrics
//     over the collectors registered first, so every queue and controller
//     of a manager may call them; series are told apart by their labels.
//   - A constructor that cannot register (say, a collector of the same name
//     and another shape) returns the error; nothing panics.
package metrics
