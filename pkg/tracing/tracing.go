package tracing

import (
	"go.opentelemetry.io/otel/attribute"
)

// ScopeName is the instrumentation scope of every span opkit makes: a
// trace backend shows it as the library that made them.
const ScopeName = "github.com/opkit-dev/opkit"

// The attributes of a reconcile span ("reconcile <controller>").
//
// Informer events arrive outside any trace, so a reconcile span has no
// span to link to for the change that queued its key; it carries
// EventChanged and EventLag instead. A reconcile of a key the previous
// reconcile queued again (an error's retry, a requeue) links to that
// reconcile's span, with LinkReason.
const (
	// Controller is the controller's name.
	Controller = attribute.Key("opkit.controller")
	// Namespace and Name are the reconciled key's, for reconcile.Request
	// keys; Key is the key's text for keys of other types.
	Namespace = attribute.Key("k8s.namespace.name")
	Name      = attribute.Key("opkit.name")
	Key       = attribute.Key("opkit.key")
	// ReconcileID is the ID in the reconcile's log lines
	// (controller.ReconcileID).
	ReconcileID = attribute.Key("opkit.reconcile_id")
	// Result is the reconcile's result, as in the result label of
	// controller_runtime_reconcile_total: "success", "error", "requeue" or
	// "requeue_after".
	Result = attribute.Key("opkit.result")
	// RequeueAfter is the delay of a reconcile.RequeueAfter, in seconds.
	RequeueAfter = attribute.Key("opkit.requeue_after_seconds")
	// EventChanged is when the earliest change that queued the key happened
	// at the API server (RFC 3339, whole seconds, as the object's
	// timestamps tell it); absent when unknown: a retry, a timer, the
	// initial list or a resync.
	EventChanged = attribute.Key("opkit.event.changed")
	// EventLag is the seconds from EventChanged to the reconcile's start.
	EventLag = attribute.Key("opkit.event.lag_seconds")
	// LinkReason, on a span link, says why the linked span queued the key
	// again: one of Result's values other than "success".
	LinkReason = attribute.Key("opkit.link.reason")
)

// The attributes of an API request span ("<verb> <resource>"), beside
// OpenTelemetry's HTTP client attributes (http.request.method,
// http.response.status_code, server.address, url.full).
const (
	// Verb is the Kubernetes verb: get, list, watch, create, update,
	// patch, delete, deletecollection.
	Verb = attribute.Key("k8s.verb")
	// Resource is the resource, with its subresource after a slash
	// ("mirrors/status").
	Resource = attribute.Key("k8s.resource")
	// Group is the API group; "" for the core group.
	Group = attribute.Key("k8s.group")
)
