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
//     otel.SetTextMapPropagator; set them yourself if other libraries
//     should use yours.
//   - One span per reconcile, "reconcile <controller>", covering the
//     read-your-writes wait and the Reconciler, with the attributes whose
//     keys are declared here (ControllerKey, ReconcileIDKey, ResultKey and
//     the like); an error is recorded on it and sets its status to Error.
//     Its context is the reconcile's context.
//   - Child spans for API requests: Transport makes a client span per
//     request sent with a traced context, so the requests a reconcile makes
//     with its ctx are its children. Reads served from the cache, and
//     requests without a span (informers, leader election), make none.
//   - Linked to what queued it: a reconcile span carries the change time
//     of the event that queued its key (EventChangedKey, EventLagKey), and
//     links to the reconcile that queued the key again, if one did
//     (LinkReasonKey).
package tracing
