// Package tracing is opkit's OpenTelemetry tracing: the spans a traced
// operator makes, their attributes, the transport that traces API
// requests, and FromEnv, which builds a tracer provider from the standard
// OTEL_* environment variables.
//
// Its contract:
//
//   - Off unless configured: with no manager.Options.TracerProvider (or
//     controller.Options.TracerProvider) nothing is traced and no tracing
//     code runs on the reconcile path. FromEnv returns a nil provider
//     unless OTEL_TRACES_EXPORTER or OTEL_EXPORTER_OTLP_*ENDPOINT ask for
//     traces.
//   - No global state: opkit never calls otel.SetTracerProvider or
//     otel.SetTextMapPropagator; pass the provider in options, and set it
//     globally yourself if other libraries should use it.
//   - One span per reconcile, named "reconcile <controller>", of kind
//     internal, with the attributes Controller, Namespace and Name (or
//     Key, for keys that are not reconcile.Request), ReconcileID, Result
//     (success, error, requeue, requeue_after, as in the
//     controller_runtime_reconcile_total metric) and RequeueAfter. An
//     error is recorded on the span (an "exception" event) and sets its
//     status to Error. The span covers the read-your-writes wait and the
//     Reconciler; its context is the reconcile's context.
//   - Child spans for API requests: Transport, on the manager's REST
//     config, makes a client span "<verb> <resource>" (Verb, Resource,
//     Group, Namespace, Name and OpenTelemetry's HTTP client attributes)
//     for each request sent with a traced context, so the requests a
//     reconcile makes with its ctx are its children; it also sends a W3C
//     traceparent header. Reads a reconcile serves from the cache make no
//     request and so no span. Requests without a span in their context
//     (informers' lists and watches, leader election) are not traced.
//   - What links a reconcile to what queued it: informer events arrive
//     outside any trace, so there is no span to link to; the reconcile span
//     instead carries EventChanged, the time of the earliest change that
//     queued the key (the same change time as the lag metrics, in whole
//     seconds), and EventLag, the seconds since. A reconcile of a key
//     that the previous reconcile queued again (an error's retry, a
//     requeue) has a span link to that reconcile's span, with LinkReason
//     saying why.
package tracing
