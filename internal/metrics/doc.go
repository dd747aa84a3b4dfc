// Package metrics registers the Prometheus metrics of opkit's controllers,
// manager and writer, under the names package pkg/metrics declares: the
// reconcile metrics, event lag, handler panics, read-your-writes waits,
// client writes and REST client requests. Only opkit's packages use it;
// pkg/metrics's doc states what the series promise.
//
//   - Every constructor takes the prometheus.Registerer to register with;
//     nothing is global.
//   - Shared: a constructor called again with one registry returns metrics
//     over the collectors registered first (package promreg), so every
//     controller of a manager may call it.
//   - A constructor that cannot register returns the error; nothing
//     panics.
package metrics
