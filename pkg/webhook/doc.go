// Package webhook serves typed admission webhooks (defaulting and
// validation) for a type T, and the conversion webhook of multi-version
// CRDs, on the manager's webhook server, which is controller-runtime's
// webhook.Server (see manager.Options.Webhook).
//
// Its contract:
//
//   - Typed: Register[T] takes Hooks[T], a Defaulter[T] and a Validator[T],
//     which are controller-runtime's admission.Defaulter[T] and
//     admission.Validator[T]; a defaulter or validator written for
//     ctrl.NewWebhookManagedBy works unchanged. DefaulterFunc and
//     ValidatorFuncs adapt functions.
//   - kubebuilder's paths: the Defaulter is served at MutatePath, such as
//     /mutate--v1-configmap or /mutate-samples-opkit-dev-v1alpha1-mirror,
//     the Validator at ValidatePath (/validate-...), as kubebuilder's
//     +kubebuilder:webhook markers and controller-runtime's builder name
//     them, so a project's webhook configurations port unchanged.
//   - Errors kubectl shows well: a Validator (or Defaulter) that returns
//     apierrors.NewInvalid(groupKind, name, field.ErrorList{...}) refuses
//     the request with 422 Invalid; the client gets each field's path and
//     message in the Status's causes, and kubectl prints
//     'admission webhook "<name>" denied the request: <Kind> "<name>" is
//     invalid: data.size: Invalid value: "big": must be a whole number'.
//     Another API status (NewForbidden, ...) keeps its reason and code; any
//     other error refuses with its text (403).
//   - Warnings reach the client: what a Validator returns as Warnings
//     (with or without an error) comes back in Warning headers, which
//     kubectl prints as "Warning: ..." and client-go hands to
//     rest.Config.WarningHandler.
//   - Conversion: RegisterConversion[H] serves the conversion between the
//     versions of H's kind at ConversionPath (/convert, kubebuilder's and
//     envtest's), through the hub version H, with the semantics of
//     controller-runtime's conversion handler (a Converter, else the
//     types' Hub and Convertible methods). In kubebuilder's style H has a
//     Hub() method and every other version ConvertTo(hub) and
//     ConvertFrom(hub), so a
//     kubebuilder project's API types port unchanged; or Conversion.Spokes
//     gives typed functions per version (SpokeFuncs). The kinds of one
//     server share its /convert handler, one call per kind. A conversion
//     error refuses the client's request with the converter's message,
//     such as 'conversion webhook for example.com/v2, Kind=Gadget failed:
//     endpoint "x" is not host:port'. A version a kind cannot convert is
//     an error of RegisterConversion naming the type and the method it
//     lacks, not a failure of the first request.
//   - Bounded: a body of 7 MiB or more is refused with 413 on every path
//     (controller-runtime's admission limit; on the admission paths the
//     413 is in the AdmissionReview, as controller-runtime answers).
//     /convert refuses a told Content-Length up front and stops reading a
//     longer or chunked body at the limit. /convert takes Content-Type application/json only and
//     a ConversionReview of apiextensions.k8s.io/v1 or v1beta1 with a
//     request, else 400 naming what it got; it decodes a review once and
//     streams the answer. Conversions in flight share a budget of twice
//     the limit in request bytes: a request beyond it waits unread until
//     one ends, or gets 503 when its context ends first.
//   - Callers: with manager.Options.Webhook.ClientCAFile, a client whose
//     certificate another CA signed fails the TLS handshake, and the
//     admission paths refuse a client without one (403); /convert takes
//     any, since the API server presents no certificate to conversion
//     webhooks (docs/webhooks.md, "Who may call the webhooks").
//   - Served on every replica, leader or not; /readyz fails until the
//     server serves TLS (see package manager).
//   - Logs: each request is logged through the manager's logger, named
//     "webhook", with group, version, kind, path, namespace, name,
//     operation and uid; each conversion request at V(1) with uid,
//     desiredAPIVersion, objects and the first object's apiVersion, kind,
//     namespace and name, a failed one at V(0), and a refused one
//     (413, 400, 503) at V(0) with its code. The server's own start
//     and stop lines go through controller-runtime's logger
//     (ctrl.SetLogger). Its request metrics
//     (controller_runtime_webhook_latency_seconds, _requests_total,
//     _requests_in_flight, by path in the label "webhook") are served at
//     the manager's /metrics.
//
// # Differences from controller-runtime's builder
//
// ctrl.NewWebhookManagedBy(mgr, &T{}).WithDefaulter(d).WithValidator(v).Complete()
// becomes webhook.Register(mgr, webhook.Hooks[T]{Defaulter: d, Validator: v}):
//
//   - One value, not a chain: the type is named once, in Hooks[T], and
//     Register returns an error rather than a builder whose mistakes
//     surface at Complete or as a panic. A path registered twice is
//     ErrRegistered, not controller-runtime's panic; a manager without a
//     webhook server is ErrNoServer.
//   - No custom paths, log constructors or context functions: the paths
//     are kubebuilder's, requests log through the manager's logger. Panics
//     in a handler are recovered into a 500 response, as in
//     controller-runtime.
//   - The name is Hooks, not For: For already names a Lister in package
//     cache and a watch in package manager.
//   - Conversion is registered by RegisterConversion[Hub], not by the
//     builder of any version; a kind registered twice is ErrRegistered.
//
// Security: an operator's webhooks are where a tenant's request is checked
// against the tenant's own permissions (package webhook/requester), and a
// port anyone in the cluster network may reach. docs/security.md is the
// threat model and the checklist.
//
// Certificates: the server reads tls.crt and tls.key from
// manager.Options.Webhook.CertDir and picks up a new pair written there
// without a restart, or takes Options.Webhook.GetCertificate. Locally and
// in tests, testenv.Options.Webhook installs a project's webhook
// configurations and CRD conversion pointed at the local server, and
// Environment.Webhook gives its port and certificate directory.
package webhook
