package tracing

import (
	"go.opentelemetry.io/otel/attribute"
)

// ScopeName is the instrumentation scope of every span opkit makes: a
// trace backend shows it as the library that made them.
const ScopeName = "github.com/opkit-dev/opkit"

// The keys of a reconcile span's attributes ("reconcile <controller>"),
// named as OpenTelemetry's semconv packages name theirs: the attribute's
// name, then Key.
//
// Informer events arrive outside any trace, so a reconcile span has no
// span to link to for the change that queued its key; it carries
// EventChangedKey and EventLagKey instead. A reconcile of a key the
// previous reconcile queued again (an error's retry, a requeue) links to
// that reconcile's span, with LinkReasonKey.
const (
	// ControllerKey is the controller's name.
	ControllerKey = attribute.Key("opkit.controller")
	// NamespaceKey and NameKey are the reconciled key's, for
	// reconcile.Request keys; KeyKey is the key's text for keys of other
	// types.
	NamespaceKey = attribute.Key("k8s.namespace.name")
	NameKey      = attribute.Key("opkit.name")
	KeyKey       = attribute.Key("opkit.key")
	// ReconcileIDKey is the ID in the reconcile's log lines
	// (controller.ReconcileID).
	ReconcileIDKey = attribute.Key("opkit.reconcile_id")
	// ResultKey is the reconcile's result, as in the result label of
	// controller_runtime_reconcile_total: "success", "error", "requeue" or
	// "requeue_after".
	ResultKey = attribute.Key("opkit.result")
	// RequeueAfterKey is the delay of a reconcile.RequeueAfter, in
	// seconds.
	RequeueAfterKey = attribute.Key("opkit.requeue_after_seconds")
	// EventChangedKey is when the earliest change that queued the key
	// happened at the API server (RFC 3339, whole seconds, as the object's
	// timestamps tell it); absent when unknown: a retry, a timer, the
	// initial list, a resync, or an event the cache did not time (above
	// 2,000 events a second an informer times a sample of them; see
	// docs/metrics.md).
	EventChangedKey = attribute.Key("opkit.event.changed")
	// EventLagKey is the seconds from EventChangedKey's time to the
	// reconcile's start.
	EventLagKey = attribute.Key("opkit.event.lag_seconds")
	// LinkReasonKey, on a span link, says why the linked span queued the
	// key again: one of ResultKey's values other than "success".
	LinkReasonKey = attribute.Key("opkit.link.reason")
)

// The keys of an API request span's attributes ("<verb> <resource>"),
// beside OpenTelemetry's HTTP client attributes (http.request.method,
// http.response.status_code, server.address, url.full) and NamespaceKey
// and NameKey for a request about one object.
const (
	// VerbKey is the Kubernetes verb: get, list, watch, create, update,
	// patch, delete, deletecollection.
	VerbKey = attribute.Key("k8s.verb")
	// ResourceKey is the resource, with its subresource after a slash
	// ("mirrors/status").
	ResourceKey = attribute.Key("k8s.resource")
	// GroupKey is the API group; "" for the core group.
	GroupKey = attribute.Key("k8s.group")
)
